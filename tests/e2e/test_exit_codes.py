"""Exit codes against the test's real Temporal dev server: an unknown namespace is a configuration
error (exit 2, naming TEMPORAL_NAMESPACE) for the worker and for starter.py, a worker with a bad
directory never polls, and ``status CASE | head`` ends quietly with 0."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from case_client._connection import live_pollers
from cli.exit_codes import ExitCode
from tests.case_world import CaseWorld
from tests.conftest import DemoKeys

ROOT = Path(__file__).resolve().parents[2]
FOREIGN = ("TEMPORAL_", "OTEL_", "SUPPORT_", "OPENAI_", "DEEPSEEK_", "COMMERCE_MCP_URL")


async def run(script: str, address: str, state_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return await run_into(subprocess.PIPE, script, address, state_dir, list(args), env)


async def run_into(
    stdout: int, script: str, address: str, state_dir: Path, args: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    base = {key: value for key, value in os.environ.items() if not key.startswith(FOREIGN)}
    base.update({"TEMPORAL_ADDRESS": address, "COLUMNS": "200", **env})
    command = [sys.executable, str(ROOT / script), "--state-dir", str(state_dir), *args]
    return await asyncio.to_thread(
        subprocess.run, command, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=90, env=base, cwd=ROOT
    )


def one_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert result.returncode == code, (result.returncode, result.stderr)
    return line


async def test_an_unknown_namespace_is_a_configuration_error_naming_it(
    temporal_server, demo_keys: DemoKeys, tmp_path: Path
) -> None:
    keys = {"SUPPORT_DIRECTORY": str(demo_keys.directory_path)}
    worker = await run(
        "worker.py", temporal_server.address, tmp_path / "w", TEMPORAL_NAMESPACE="no-such-namespace", **keys
    )
    line = one_line(worker, ExitCode.REFUSED)
    assert line.startswith("worker: configuration error: namespace_unknown: TEMPORAL_NAMESPACE=no-such-namespace")
    assert "temporal operator namespace create --namespace no-such-namespace" in line
    status = await run(
        "starter.py", temporal_server.address, tmp_path / "s", "status", "x", TEMPORAL_NAMESPACE="no-such-namespace"
    )
    line = one_line(status, ExitCode.REFUSED)
    assert line.startswith("error: namespace_unknown: TEMPORAL_NAMESPACE=no-such-namespace: no such namespace on ")


async def test_a_worker_whose_directory_holds_a_private_key_never_polls(
    temporal_server, temporal_client, demo_keys: DemoKeys, tmp_path: Path
) -> None:
    document = json.loads(demo_keys.directory_path.read_text(encoding="utf-8"))
    document["keys"][0]["d"] = "nEe1T2nK0tiLwPqFHBcOGmfGx1CI0ymbFLkcZvnBpL4"
    leaked = tmp_path / "leaked.json"
    leaked.write_text(json.dumps(document), encoding="utf-8")
    queue = f"start-checks-{os.getpid()}"
    worker = await run(
        "worker.py",
        temporal_server.address,
        tmp_path / "w",
        "--task-queue",
        queue,
        SUPPORT_DIRECTORY=str(leaked),
    )
    line = one_line(worker, ExitCode.REFUSED)
    assert line.startswith("worker: configuration error: directory_invalid: SUPPORT_DIRECTORY=")
    assert "private key" in line
    assert await live_pollers(temporal_client, queue) == 0


async def test_status_into_a_pipe_whose_reader_left_ends_quietly_with_0(
    shared_world: CaseWorld, temporal_server, demo_keys: DemoKeys
) -> None:
    handle = await shared_world.start("Where is my order QH-1005?")
    await shared_world.settled(handle)
    case_id = handle.id.removeprefix("case-")
    # starter.py acts as a person of the directory: the cleaned environment names the session's again
    env = {"SUPPORT_TASK_QUEUE": shared_world.task_queue, "SUPPORT_DIRECTORY": str(demo_keys.directory_path)}
    read, write = os.pipe()
    os.close(read)  # the reader (head) is gone before the first line: every write is a broken pipe
    try:
        result = await run_into(
            write, "starter.py", temporal_server.address, shared_world.state_dir, ["status", case_id], env
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (0, "")
    shown = await run("starter.py", temporal_server.address, shared_world.state_dir, "status", case_id, **env)
    assert shown.returncode == 0 and case_id in shown.stdout, shown.stderr

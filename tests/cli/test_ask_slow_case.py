"""``ask`` against a real Temporal dev server and worker whose model server never answers (a model on a
CPU that takes minutes per request looks the same for a while):

* the wait runs out with the case named as working, with what it is doing (the model request and its
  attempt), how to follow it, exit 5, and no blame on the worker;
* Ctrl-C after the case started prints the case id and that it goes on, exits 130, no traceback.

starter.py runs as a user runs it (a subprocess); the worker runs in this process on its own task queue.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from activities.model.model_settings import load_model_settings
from case_client._pollers import describe_pollers
from cli.exit_codes import ExitCode
from contracts.names import case_id_of
from tests.case_world import CaseWorld, open_world
from tests.cli.test_following_lines import card_row

ROOT = Path(__file__).resolve().parents[2]
UNWANTED = ("SUPPORT_RETRY_WINDOW_SECONDS", "SUPPORT_WAIT_SECONDS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY")


@pytest.fixture
async def silent_model_server() -> AsyncIterator[str]:
    """An OpenAI-compatible base URL whose server accepts every request and never answers it."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        while await reader.read(65536):
            pass

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/v1"
    for writer in held:
        writer.close()
    server.close()


@pytest.fixture
async def slow_world(temporal_client: Client, silent_model_server: str, tmp_path: Path) -> AsyncIterator[CaseWorld]:
    settings = load_model_settings({"OPENAI_BASE_URL": silent_model_server, "SUPPORT_MODEL": "slow-cpu-model"})
    world, worker, cleanup = await open_world(temporal_client, tmp_path / "state", model_settings=settings)
    async with worker:
        while not (await describe_pollers(temporal_client, world.task_queue)).live:
            await asyncio.sleep(0.1)
        yield world
        async for execution in temporal_client.list_workflows(f'TaskQueue="{world.task_queue}"'):
            if execution.status is WorkflowExecutionStatus.RUNNING:
                await temporal_client.get_workflow_handle(execution.id).terminate("test cleanup")
    await cleanup()
    world.engine.dispose()


def starter(world: CaseWorld, address: str, *args: str) -> tuple[list[str], dict[str, str]]:
    env = {key: value for key, value in os.environ.items() if key not in UNWANTED}
    env.update({"TEMPORAL_ADDRESS": address, "SUPPORT_TASK_QUEUE": world.task_queue, "COLUMNS": "200"})
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(world.state_dir), *args]
    return command, env


def with_ctrl_c(command: list[str]) -> list[str]:
    """``command`` run with SIGINT at its default, as in a terminal's foreground. A process inherits an
    ignored SIGINT (a test run started in the background of a non-interactive shell has one), and a
    Python started with it ignored never raises KeyboardInterrupt: Ctrl-C would then test nothing.
    The disposition is set in a small Python that then execs the command (``exec`` keeps it)."""
    reset = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    return [sys.executable, "-c", reset, *command]


async def test_a_case_waiting_for_a_slow_model_is_reported_working_not_a_worker_problem(
    slow_world: CaseWorld, temporal_server
) -> None:
    command, env = starter(slow_world, temporal_server.address, "--profile", "alice", "ask", "Please refund QH-1001")
    env["SUPPORT_WAIT_SECONDS"] = "12"
    asked = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)
    assert asked.returncode == ExitCode.UNAVAILABLE, asked.stdout + asked.stderr
    assert "Traceback" not in asked.stderr and asked.stdout == ""
    last = asked.stderr.strip().splitlines()[-1]
    found = re.fullmatch(
        r"error: case_still_working: case (\S+): still working after 1\d s: waiting for the model server "
        r"\(plan the case, attempt 1, \d+ s so far\)\. Case \1 goes on; follow it: .* status \1 --wait",
        last,
    )
    assert found, asked.stderr
    assert "worker" not in last.split(". Case ")[0]  # nothing blames the worker, which is healthy

    # status shows the running case with what it is doing now
    command, env = starter(slow_world, temporal_server.address, "--profile", "alice", "status", found.group(1))
    shown = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)
    assert shown.returncode == ExitCode.DECIDED, shown.stdout + shown.stderr
    now = card_row(shown.stdout.splitlines(), "now")
    assert re.fullmatch(r"waiting for the model server \(plan the case, attempt 1, \d+ s so far\)", now), now


async def test_ctrl_c_after_the_case_started_names_it_and_exits_130(
    slow_world: CaseWorld, temporal_server, temporal_client: Client
) -> None:
    command, env = starter(slow_world, temporal_server.address, "--profile", "bob", "ask", "Please refund QH-1002")
    process = await asyncio.create_subprocess_exec(
        *with_ctrl_c(command), env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    query = f'TaskQueue="{slow_world.task_queue}"'
    started: list[str] = []
    while not started:  # the case is on Temporal (visibility lists it a moment after the start returned)
        assert process.returncode is None, "ask ended before its case started"
        started = [execution.id async for execution in temporal_client.list_workflows(query)]
        await asyncio.sleep(0.2)
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    except TimeoutError:
        process.kill()
        _, stderr = await process.communicate()
        raise AssertionError(f"ask did not end within 60 s of Ctrl-C; its stderr: {stderr.decode()!r}") from None
    text = stderr.decode()
    assert process.returncode == ExitCode.INTERRUPTED, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    [line] = text.strip().splitlines()
    case_id = case_id_of(started[0])
    assert line.startswith(f"interrupted: case {case_id} goes on without this command"), line
    assert line.endswith(f"status {case_id} --wait")
    # the case goes on: Temporal still runs it
    described = await temporal_client.get_workflow_handle(started[0]).describe()
    assert described.status is WorkflowExecutionStatus.RUNNING

"""``ask`` never orphans a case: a case it started is always named, and a retry finds it again.

starter.py runs as a user runs it (a subprocess) against the test dev server. A worker that stopped a
moment ago is still listed as a poller of its queue, so ``ask`` starts the case and only then finds
nobody answering; it must say which case it started and what to do. The same question by the same
applicant within the retry window (``SUPPORT_RETRY_WINDOW_SECONDS``) is that case again, never a
second workflow; after the window it is a new case.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from temporalio.client import Client

from case_client import live_poller_identities
from contracts.names import workflow_id
from tests.case_world import CaseWorld, open_world

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Where is my order QH-1005? Has it left the warehouse?"


async def _ask(world: CaseWorld, address: str, *args: str, window: float | str | None = None):
    env = {**os.environ, "TEMPORAL_ADDRESS": address, "SUPPORT_TASK_QUEUE": world.task_queue, "COLUMNS": "200"}
    env.pop("SUPPORT_RETRY_WINDOW_SECONDS", None)
    if window is not None:
        env["SUPPORT_RETRY_WINDOW_SECONDS"] = str(window)
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(world.state_dir), *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


async def _workflow_ids(client: Client, query: str, *, at_least: int = 0) -> list[str]:
    """The workflow ids visibility lists for ``query``, once it lists ``at_least`` (it lags a moment)."""
    for _ in range(50):
        ids = [execution.id async for execution in client.list_workflows(query)]
        if len(ids) >= at_least:
            return ids
        await asyncio.sleep(0.2)
    return ids


def _kept_case(stderr: str) -> str:
    found = re.search(
        r"Case (\S+) is kept and goes on once a worker runs \(within 24 h of its start\): .* status \1 --wait", stderr
    )
    assert found, stderr
    return found.group(1)


async def test_ask_after_the_worker_stopped_names_the_case_and_a_retry_returns_it(
    temporal_client: Client, temporal_server, tmp_path: Path
) -> None:
    world, worker, cleanup = await open_world(temporal_client, tmp_path / "state")
    async with worker:  # the worker polls, then stops: Temporal lists it as a poller for a while yet
        for _ in range(50):
            if await live_poller_identities(temporal_client, world.task_queue):
                break
            await asyncio.sleep(0.2)
    await cleanup()
    world.engine.dispose()
    assert await live_poller_identities(temporal_client, world.task_queue), "the stopped worker is not listed"

    asked = await _ask(world, temporal_server.address, "--profile", "alice", "ask", QUESTION)
    assert asked.returncode == 5, asked.stdout + asked.stderr
    [line] = asked.stderr.strip().splitlines()
    assert line.startswith("error: worker_unavailable: ") and "Traceback" not in asked.stderr
    case_id = _kept_case(line)
    on_queue = f'TaskQueue="{world.task_queue}"'
    assert await _workflow_ids(temporal_client, on_queue, at_least=1) == [workflow_id(case_id)]
    # no worker has run it: the case's start attributes already list it, as queued
    listed = await _ask(world, temporal_server.address, "--profile", "alice", "list")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    [row] = [line for line in listed.stdout.splitlines() if case_id in line]
    assert "queued" in row.split(), listed.stdout

    retried = await _ask(world, temporal_server.address, "--profile", "alice", "ask", f"  {QUESTION.upper()} ")
    assert retried.returncode == 5, retried.stdout + retried.stderr
    found, failed = retried.stderr.strip().splitlines()
    assert found.startswith(f"the same question within 300 s: showing case {case_id}, started ")
    assert _kept_case(failed) == case_id
    assert await _workflow_ids(temporal_client, on_queue) == [workflow_id(case_id)]  # no second workflow

    await temporal_client.get_workflow_handle(workflow_id(case_id)).terminate("test cleanup")


async def test_the_same_question_within_the_window_is_the_same_case_and_after_it_a_new_one(
    shared_world: CaseWorld, temporal_server
) -> None:
    window = 15.0
    first = await _ask(shared_world, temporal_server.address, "--profile", "alice", "ask", QUESTION, window=window)
    assert first.returncode == 0 and "completed" in first.stdout, first.stdout + first.stderr
    case_id = first.stdout.split("case ", 1)[1].split()[0]
    assert first.stderr == ""

    again = await _ask(shared_world, temporal_server.address, "--profile", "alice", "ask", QUESTION, window=window)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"case {case_id}" in again.stdout
    [line] = again.stderr.strip().splitlines()
    assert line.startswith(f"the same question within 15 s: showing case {case_id}, started ")
    same_id = f'WorkflowId="{workflow_id(case_id)}"'
    assert len(await _workflow_ids(shared_world.client, same_id, at_least=1)) == 1

    # another applicant's same words are their own case
    bob = await _ask(shared_world, temporal_server.address, "--profile", "bob", "ask", QUESTION, window=window)
    assert f"case {case_id}" not in bob.stdout and "the same question" not in bob.stderr

    started = (await shared_world.client.get_workflow_handle(workflow_id(case_id)).describe()).start_time
    assert started is not None
    await asyncio.sleep(max(window - (datetime.now(UTC) - started).total_seconds(), 0) + 0.5)  # past the window
    later = await _ask(shared_world, temporal_server.address, "--profile", "alice", "ask", QUESTION, window=window)
    assert later.returncode == 0, later.stdout + later.stderr
    new_id = later.stdout.split("case ", 1)[1].split()[0]
    assert new_id != case_id and later.stderr == ""


async def test_a_request_key_reused_for_another_question_is_one_line_exit_2(
    shared_world: CaseWorld, temporal_server
) -> None:
    key = f"reused-{os.getpid()}"
    address = temporal_server.address
    first = await _ask(shared_world, address, "--profile", "alice", "ask", QUESTION, "--request-key", key)
    assert first.returncode == 0, first.stdout + first.stderr
    other = "Please refund QH-1002"
    reused = await _ask(shared_world, address, "--profile", "alice", "ask", other, "--request-key", key)
    assert reused.returncode == 2, reused.stdout + reused.stderr
    assert reused.stderr.strip().splitlines() == [
        f"error: request_key_reused: request key {key!r} was already used for another question"
    ]
    assert reused.stdout == ""


async def test_a_bad_retry_window_is_one_line_exit_2_and_starts_nothing(
    temporal_client: Client, temporal_server, tmp_path: Path
) -> None:
    queue = f"unpolled-{os.getpid()}-{id(tmp_path)}"
    world = CaseWorld(temporal_client, tmp_path / "state", queue, None)  # type: ignore[arg-type]
    for value in ("soon", "-1", "nan", "90000"):
        done = await _ask(world, temporal_server.address, "ask", QUESTION, window=value)
        assert done.returncode == 2, done.stdout + done.stderr
        [line] = done.stderr.strip().splitlines()
        assert line.startswith("error: invalid_retry_window: SUPPORT_RETRY_WINDOW_SECONDS must be from 0 (off)")
    assert await _workflow_ids(temporal_client, f'TaskQueue="{world.task_queue}"') == []

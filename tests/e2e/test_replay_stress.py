"""The replay-stress mode (``SUPPORT_REPLAY_STRESS=1``: ``make test`` runs the whole suite in it,
``make replay-stress`` the end-to-end tests alone) is what it says it is.

In it every worker a case world builds caches no workflow, so each workflow task of every case replays
its whole history before it runs, and a nondeterminism error fails the case; a probe workflow that
changes its commands on replay shows both. Outside it the workers keep the SDK's cache.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from tests.case_world import REPLAY_STRESS_ENV, open_world, stress_options

RUNS: Counter[str] = Counter()
"""How often :class:`ChangesItsMind` began running, per workflow id (process state, on purpose)."""


@workflow.defn(name="ReplayStressProbe")
class ChangesItsMind:
    """A workflow that is nondeterministic on purpose: its first run starts a timer, every later run
    of the same workflow (a replay) schedules an activity in the timer's place. A worker that keeps it
    in its cache never replays it, so it completes; one that replays every task must notice."""

    @workflow.run
    async def run(self) -> str:
        RUNS[workflow.info().workflow_id] += 1
        if RUNS[workflow.info().workflow_id] == 1:
            await workflow.sleep(0.1)
        else:
            await workflow.execute_activity("never_registered", start_to_close_timeout=timedelta(seconds=5))
        return "done"


async def _run_probe(client: Client, options: dict) -> str:
    task_queue = f"replay-stress-probe-{uuid.uuid4().hex[:8]}"
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[ChangesItsMind],
        workflow_runner=UnsandboxedWorkflowRunner(),  # the sandbox would reset RUNS for every run
        **options,
    ):
        return await client.execute_workflow(
            ChangesItsMind.run,
            id=f"probe-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
            execution_timeout=timedelta(seconds=30),
        )


def test_the_stress_options_are_only_those_of_the_stress_run() -> None:
    assert stress_options({}) == {} and stress_options({REPLAY_STRESS_ENV: "0"}) == {}
    assert stress_options({REPLAY_STRESS_ENV: "1"}) != {}


async def test_the_stress_options_fail_a_workflow_that_changes_its_commands_on_replay(
    temporal_client: Client,
) -> None:
    """What the replay-stress run exists for: with its options the probe's second workflow task replays
    the first and fails the workflow with the nondeterminism; with the default options the cached
    probe completes, never replayed, and the same bug goes unseen."""
    assert await _run_probe(temporal_client, stress_options({})) == "done"
    with pytest.raises(WorkflowFailureError) as failed:
        await _run_probe(temporal_client, stress_options({REPLAY_STRESS_ENV: "1"}))
    assert "nondeterminism" in str(failed.value.cause).lower()


async def test_the_world_worker_runs_with_this_runs_cache_setting(temporal_client: Client, tmp_path: Path) -> None:
    world, worker, cleanup = await open_world(temporal_client, tmp_path / "state")
    try:
        cached = worker.worker.config()["max_cached_workflows"]
        if os.environ.get(REPLAY_STRESS_ENV) == "1":
            assert cached == 0
        else:
            assert cached > 0
    finally:
        await cleanup()
        world.engine.dispose()

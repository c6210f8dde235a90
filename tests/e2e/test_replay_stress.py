"""The replay-stress run (``make replay-stress``, part of ``make test``) is what it says it is.

In that run (``SUPPORT_REPLAY_STRESS=1``) every worker the end-to-end tests build caches no workflow,
so each workflow task of every case replays its whole history before it runs, and a nondeterminism
error fails the case. Outside it the workers keep the SDK's cache.
"""

from __future__ import annotations

import os
from pathlib import Path

from temporalio.client import Client
from temporalio.workflow import NondeterminismError

from tests.case_world import REPLAY_STRESS_ENV, open_world, stress_options


def test_the_stress_options_cache_nothing_and_fail_on_nondeterminism() -> None:
    assert stress_options({}) == {}
    assert stress_options({REPLAY_STRESS_ENV: "1"}) == {
        "max_cached_workflows": 0,
        "workflow_failure_exception_types": [NondeterminismError],
    }


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

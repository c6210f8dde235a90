"""A worker SIGKILLed inside a model call and inside settlement: another worker takes the activity over
within 15 s (activities heartbeat; their heartbeat timeout is 8 s), and nothing is lost or paid twice.

The killed worker is the test-only launcher ``paused_worker.py`` (the real worker with one pause); the
second worker is a plain ``worker.py`` started while the first is paused, so it is already polling when
the kill lands. The retry's start time and worker come from the workflow history. The figure itself is
printed by benchmarks/bench_failover.py, not here.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from contracts.case import CaseStatus
from tests.faults.fault_support import PAUSED_WORKER_SCRIPT, REFUND_QUESTION, activity_runs, approval, wait_until

pytestmark = pytest.mark.slow

FAILOVER_BOUND = timedelta(seconds=15)


async def _paused_worker(fault_world, workers, address: str, marker: Path, **pause: str):
    """The first worker: the real worker with one pause (``paused_worker.py``), polling already."""
    env = {**pause, "FAULT_MARKER": str(marker)}
    return await workers(address, fault_world, "paused", script=PAUSED_WORKER_SCRIPT, env=env).ready()


async def _kill_and_take_over(paused, fault_world, workers, address: str) -> datetime:
    """Start a second plain worker, then SIGKILL the paused one; returns the moment of the kill."""
    second = await workers(address, fault_world, "second").ready()
    killed_at = datetime.now(UTC)
    paused.sigkill()
    assert not second.exited()
    return killed_at


async def test_a_model_call_on_a_killed_worker_is_retried_on_another_within_15_seconds(
    fault_world, temporal_server, workers, tmp_path
) -> None:
    marker = tmp_path / "paused.json"
    paused = await _paused_worker(fault_world, workers, temporal_server.address, marker, FAULT_PAUSE_IN_MODEL="compose")
    handle = await fault_world.start(REFUND_QUESTION)
    await wait_until(marker.exists, "the first worker to pause inside the compose request", timeout=90)

    killed_at = await _kill_and_take_over(paused, fault_world, workers, temporal_server.address)
    view = await fault_world.waiting_for_approval(handle)

    assert view.proposal is not None and view.proposal.amount_cents == 12900
    [compose] = [run for run in await activity_runs(handle) if run.name == "compose_answer"]
    assert compose.attempt == 2 and compose.outcome == "completed"
    assert "heartbeat" in compose.last_failure.lower(), compose.last_failure
    assert str(paused.pid) not in compose.worker
    assert compose.started_at is not None and compose.started_at - killed_at < FAILOVER_BOUND


async def test_settlement_on_a_killed_worker_is_retried_on_another_within_15_seconds_and_pays_once(
    fault_world, temporal_server, workers, tmp_path
) -> None:
    marker = tmp_path / "paused.json"
    paused = await _paused_worker(fault_world, workers, temporal_server.address, marker, FAULT_PAUSE_BEFORE_SETTLE="1")
    handle = await fault_world.start(REFUND_QUESTION)
    view = await fault_world.waiting_for_approval(handle)
    await handle.signal("review", approval("chen", view.case_id, view.digest))
    await wait_until(marker.exists, "the first worker to pause at the start of settlement")
    assert fault_world.refund_records() == []

    killed_at = await _kill_and_take_over(paused, fault_world, workers, temporal_server.address)
    final = await fault_world.result(handle)

    assert final.status is CaseStatus.COMPLETED and final.receipt is not None
    assert [(r.amount_cents, r.receipt_id) for r in fault_world.refund_records()] == [(12900, final.receipt.receipt_id)]
    [settle] = [run for run in await activity_runs(handle) if run.name == "execute_refund"]
    assert settle.attempt == 2 and "heartbeat" in settle.last_failure.lower(), settle.last_failure
    assert str(paused.pid) not in settle.worker
    assert settle.started_at is not None and settle.started_at - killed_at < FAILOVER_BOUND

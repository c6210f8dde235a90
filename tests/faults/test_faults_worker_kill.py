"""The worker process SIGKILLed at the worst moments; a new worker process finishes the case.

Each worker is ``python worker.py`` (or the test-only launcher ``paused_worker.py``, which pauses the
real worker at one chosen point so that the kill lands exactly there) on its own task queue, with
TEMPORAL_ADDRESS pointing at the test's dev server. The fault is a real SIGKILL of the worker's
process group. Temporal notices through the activity's heartbeat timeout (8 s; activities heartbeat
while they run), so each activity kill costs about that long, not the start-to-close timeout. A tool
runs as a local activity, inside a workflow task: its kill times that task out (10 s) and the new
worker runs the turn's tools again from their first attempt, each recorded once.
"""

from __future__ import annotations

import json

import pytest

from contracts.case import CaseStatus, Phase, ReviewOutcome
from tests.case_world import event_details
from tests.faults.fault_support import (
    PAUSED_WORKER_SCRIPT,
    REFUND_QUESTION,
    activity_runs,
    alive,
    approval,
    scheduled_counts,
    wait_until,
)

pytestmark = pytest.mark.slow


def _assert_paid_once(world, receipt_id: str, case_id: str) -> None:
    rows = world.refund_records()
    assert [(r.order_id, r.amount_cents, r.receipt_id, r.case_id) for r in rows] == [
        ("QH-1001", 12900, receipt_id, case_id)
    ]
    order = world.order("QH-1001")
    assert (order.refunded_cents, order.version) == (12900, 2)


async def test_worker_killed_after_the_refund_committed_finishes_with_the_original_receipt(
    fault_world, temporal_server, workers, tmp_path
) -> None:
    address = temporal_server.address
    marker = tmp_path / "paused.json"
    paused = await workers(
        address,
        fault_world,
        "worker-paused",
        script=PAUSED_WORKER_SCRIPT,
        env={"FAULT_PAUSE_AFTER_COMMERCE": "execute_refund", "FAULT_MARKER": str(marker)},
    ).ready()

    handle = await fault_world.start(REFUND_QUESTION)
    view = await fault_world.waiting_for_approval(handle)
    assert view.proposal.amount_cents == 12900
    await handle.signal("review", approval("chen", view.case_id, view.digest))

    # The commerce server answered execute_refund; the activity has not completed.
    await wait_until(marker.exists, "the launcher to pause after execute_refund returned")
    paid = json.loads(marker.read_text())["result"]
    rows = fault_world.refund_records()
    assert [(r.receipt_id, r.amount_cents) for r in rows] == [(paid["receipt_id"], 12900)]
    assert (fault_world.order("QH-1001").refunded_cents, fault_world.order("QH-1001").version) == (12900, 2)
    during = await fault_world.view(handle)
    assert (during.phase, during.status, during.receipt) == (Phase.SETTLE, CaseStatus.RUNNING, None)

    paused.sigkill()
    assert not alive(paused.pid)

    await workers(address, fault_world, "worker-after").ready()
    final = await fault_world.result(handle)

    assert final.status is CaseStatus.COMPLETED and final.reason == "refund_settled"
    assert final.receipt is not None
    row = fault_world.refund_records()[0]
    # The original receipt: the stored row's id and timestamp, not a second payment.
    assert final.receipt.receipt_id == paid["receipt_id"] == row.receipt_id
    assert final.receipt.created_at == row.created_at
    assert final.receipt.order_version_after == 2
    _assert_paid_once(fault_world, row.receipt_id, view.case_id)

    runs = activity_runs_by_name(await activity_runs(handle))
    settle = runs["execute_refund"]
    assert len(settle) == 1 and settle[0].outcome == "completed"
    assert settle[0].attempt == 2 and "timeout" in settle[0].last_failure.lower()
    assert len(await event_details(handle, "settled")) == 1
    assert len(await event_details(handle, "review_accepted")) == 1
    print(
        f"receipt {row.receipt_id} committed before the kill; final receipt {final.receipt.receipt_id}; "
        f"execute_refund attempt {settle[0].attempt} after: {settle[0].last_failure}"
    )


async def test_worker_killed_during_investigation_is_continued_by_a_new_worker(
    fault_world, temporal_server, workers, tmp_path
) -> None:
    address = temporal_server.address
    marker = tmp_path / "paused.json"
    paused = await workers(
        address,
        fault_world,
        "worker-paused",
        script=PAUSED_WORKER_SCRIPT,
        env={"FAULT_PAUSE_BEFORE_TOOL": "calculate_refund", "FAULT_MARKER": str(marker)},
    ).ready()

    handle = await fault_world.start(REFUND_QUESTION)
    await wait_until(marker.exists, "the launcher to pause in the calculate_refund tool activity")
    during = await fault_world.view(handle)
    assert (during.phase, during.status, during.quote) == (Phase.INVESTIGATE, CaseStatus.RUNNING, None)

    paused.sigkill()
    assert not alive(paused.pid)
    after = await workers(address, fault_world, "worker-after").ready()

    view = await fault_world.waiting_for_approval(handle)
    assert (view.proposal.order_id, view.proposal.order_version, view.proposal.amount_cents) == ("QH-1001", 1, 12900)
    assert fault_world.refund_records() == []
    outcome = await handle.execute_update(
        "review", approval("chen", view.case_id, view.digest), result_type=ReviewOutcome
    )
    assert outcome.accepted
    final = await fault_world.result(handle)
    assert final.status is CaseStatus.COMPLETED and final.receipt is not None
    _assert_paid_once(fault_world, final.receipt.receipt_id, view.case_id)

    runs = await activity_runs(handle)
    tools = [run for run in runs if run.tool]
    calculate = [run for run in tools if run.tool == "calculate_refund"]
    # A local activity: the killed worker's workflow task timed out and the new worker ran the call
    # again inside its own task; the history records it once, completed, by the new worker.
    assert len(calculate) == 1 and calculate[0].local and calculate[0].outcome == "completed"
    assert str(after.pid) in calculate[0].worker and str(paused.pid) not in calculate[0].worker
    assert calculate[0].arguments == {"order_id": "QH-1001"}
    history = await handle.fetch_history()
    timed_out = [event for event in history.events if event.HasField("workflow_task_timed_out_event_attributes")]
    assert timed_out  # the killed worker's task (no activity timeout: a local activity has none to wait for)
    assert all(run.attempt == 1 for run in runs)
    assert all(run.local for run in tools)
    fingerprints = [(run.tool, json.dumps(run.arguments, sort_keys=True)) for run in tools]
    assert len(fingerprints) == len(set(fingerprints))
    assert scheduled_counts(runs)["execute_refund"] == 1
    print(
        f"tool activities run: {dict(scheduled_counts(tools))}; calculate_refund run again by worker "
        f"{after.pid} after the killed worker's workflow task timed out; receipt {final.receipt.receipt_id}"
    )


async def test_worker_killed_while_waiting_for_approval_loses_nothing(fault_world, temporal_server, workers) -> None:
    address = temporal_server.address
    first = await workers(address, fault_world, "worker-first").ready()
    handle = await fault_world.start(REFUND_QUESTION)
    view = await fault_world.waiting_for_approval(handle)
    orphans = first.commerce_servers()
    assert orphans  # the first worker had a live commerce session

    first.sigkill()
    assert not alive(first.pid)
    # Its commerce server (its own process group, so not hit by the kill) sees stdin close and exits.
    await wait_until(lambda: not any(alive(pid) for pid in orphans), "the orphaned commerce server to exit")
    second = await workers(address, fault_world, "worker-second").ready()

    again = await fault_world.view(handle)  # answered by the new worker, replaying the history
    assert (again.status, again.digest, again.proposal) == (CaseStatus.WAITING_APPROVAL, view.digest, view.proposal)
    outcome = await handle.execute_update(
        "review", approval("chen", view.case_id, view.digest), result_type=ReviewOutcome
    )
    assert outcome.accepted
    final = await fault_world.result(handle)

    assert final.status is CaseStatus.COMPLETED and final.receipt is not None
    _assert_paid_once(fault_world, final.receipt.receipt_id, view.case_id)
    assert second.commerce_servers()  # the new worker opened its own session for the settlement
    runs = await activity_runs(handle)
    assert all(run.attempt == 1 and run.outcome == "completed" for run in runs)
    assert scheduled_counts(runs)["execute_refund"] == 1
    assert len(await event_details(handle, "proposal_created")) == 1
    print(
        f"killed worker {first.pid} (commerce server {orphans} exited by itself); worker {second.pid} "
        f"settled with receipt {final.receipt.receipt_id}; activities: {dict(scheduled_counts(runs))}"
    )


def activity_runs_by_name(runs):
    grouped: dict[str, list] = {}
    for run in runs:
        grouped.setdefault(run.name, []).append(run)
    return grouped

"""Concurrency: a storm of approvals for one case, and two cases racing to refund one order.

The production worker runs in the test process here (no process fault is injected); the commerce
server is the real stdio MCP server over a real SQLite database, the Temporal server the real one.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from contracts.case import CaseStatus, CaseView, ReviewOutcome
from tests.case_world import event_details
from tests.faults.fault_support import REFUND_QUESTION, activity_runs, approval

pytestmark = pytest.mark.slow

APPROVALS = 50


async def test_fifty_simultaneous_approvals_are_accepted_once_and_pay_once(in_process_worker) -> None:
    world = in_process_worker
    handle = await world.start(REFUND_QUESTION)
    view = await world.waiting_for_approval(handle)
    decision = approval("chen", view.case_id, view.digest)

    sends = [
        handle.signal("review", decision)
        if index % 2 == 0
        else handle.execute_update("review", decision, result_type=ReviewOutcome)
        for index in range(APPROVALS)
    ]
    results = await asyncio.gather(*sends, return_exceptions=True)
    final: CaseView = await world.result(handle)

    kinds = Counter(type(r).__name__ for r in results)
    rpc_errors = Counter(str(r) for r in results if isinstance(r, RPCError))
    # A refused update fails for its caller (the refusal is recorded in the case events).
    failed_updates = [r for r in results if isinstance(r, WorkflowUpdateFailedError)]
    assert all(isinstance(r.cause, ApplicationError) and r.cause.type == "review_refused" for r in failed_updates)
    unexpected = [
        r for r in results if isinstance(r, BaseException) and not isinstance(r, RPCError | WorkflowUpdateFailedError)
    ]
    assert unexpected == [], kinds
    # Approvals that came after the case closed are turned away by the server (an update still in
    # flight when the workflow completed is aborted); none of them reached the case.
    assert set(rpc_errors) <= {
        "workflow execution already completed",
        "workflow update was aborted by closing workflow",
    }, rpc_errors
    updates = [r for r in results if isinstance(r, ReviewOutcome)]
    accepted_updates = [r for r in updates if r.accepted]
    accepted = await event_details(handle, "review_accepted")
    refused = await event_details(handle, "review_refused")
    assert len(accepted) == 1 and len(accepted_updates) <= 1
    # Every approval that reached the workflow is visible: one accepted, the others refused.
    delivered = APPROVALS - sum(isinstance(r, RPCError) for r in results)
    assert len(accepted) + len(refused) == delivered
    assert all(("already_decided" in r) or ("case_not_waiting_for_review" in r) for r in refused)

    assert final.status is CaseStatus.COMPLETED and final.receipt is not None
    rows = world.refund_records()
    assert [(r.receipt_id, r.amount_cents) for r in rows] == [(final.receipt.receipt_id, 12900)]
    order = world.order("QH-1001")
    assert (order.refunded_cents, order.version) == (12900, 2)
    assert [run.name for run in await activity_runs(handle)].count("execute_refund") == 1
    print(
        f"{APPROVALS} approvals: {len(accepted)} accepted ({accepted[0]}), {len(refused)} refused, "
        f"{APPROVALS - delivered} rejected by the server after the case closed; "
        f"update answers: {len(updates)} ({len(accepted_updates)} accepted); results by type: {dict(kinds)}; "
        f"RPC errors: {dict(rpc_errors)}"
    )


async def test_two_cases_refunding_one_order_pay_once_and_the_second_is_refused(in_process_worker) -> None:
    world = in_process_worker
    first, second = await asyncio.gather(world.start(REFUND_QUESTION), world.start(REFUND_QUESTION))
    views = await asyncio.gather(world.waiting_for_approval(first), world.waiting_for_approval(second))
    for view in views:
        assert (view.proposal.order_id, view.proposal.order_version, view.proposal.amount_cents) == (
            "QH-1001",
            1,
            12900,
        )
    assert views[0].digest != views[1].digest

    # Both approved at once: one through the signal, one through the update.
    outcome, _ = await asyncio.gather(
        first.execute_update("review", approval("chen", views[0].case_id, views[0].digest), result_type=ReviewOutcome),
        second.signal("review", approval("chen", views[1].case_id, views[1].digest)),
    )
    assert outcome.accepted
    finals = await asyncio.gather(world.result(first), world.result(second))

    by_status = {final.status: final for final in finals}
    assert set(by_status) == {CaseStatus.COMPLETED, CaseStatus.NEEDS_HUMAN}
    paid, refused = by_status[CaseStatus.COMPLETED], by_status[CaseStatus.NEEDS_HUMAN]
    assert paid.receipt is not None and refused.receipt is None
    assert refused.reason == "settlement_refused:quote_changed"
    refused_handle = first if refused.case_id == views[0].case_id else second
    assert await event_details(refused_handle, "settlement_failed") == ["business: quote_changed"]

    rows = world.refund_records()
    assert [(r.case_id, r.receipt_id, r.amount_cents) for r in rows] == [(paid.case_id, paid.receipt.receipt_id, 12900)]
    order = world.order("QH-1001")
    assert (order.refunded_cents, order.version) == (12900, 2)
    [settle] = [run for run in await activity_runs(refused_handle) if run.name == "execute_refund"]
    print(
        f"paid by case {paid.case_id}; case {refused.case_id} refused ({refused.reason}) "
        f"on settlement attempt {settle.attempt}, previous failure: {settle.last_failure or 'none'}"
    )

"""A case opens a return (issue 48): "I want to return QH-1004" against the real worker, dev server,
commerce server (stdio) and rehearsal model, with the tenant's rule set by ``starter.py directory``.

The commerce server computes the return from its records (every unit, the refund due once the warehouse
checks the items in, nothing paid now); code states it; a reviewer approves and the customer's signed
yes executes it once; verify walks the chain; the same execution again is a replay and another body under
its key a conflict; a second return of the same order is refused by the commerce server's rule.
"""

from __future__ import annotations

import asyncio

from commerce_server.db import ActionExecutionRow, OrderRow, ReturnRow
from contracts.action_policy import ActionKind
from contracts.actions import ReturnTerms
from contracts.case import CaseStatus
from contracts.names import StopCode
from tests.e2e.action_support import replay_and_conflict
from tests.e2e.merchant_world import Merchant

QUESTION = "I want to return QH-1004, the desk stand is too small."


async def test_a_return_a_reviewer_approves_and_the_customer_confirms_opens_once(merchant: Merchant) -> None:
    shop = merchant
    shop.run("directory", "allow-action", "qinghe", "return_items", "--reviewers", "1")
    view = await shop.ask("alice", QUESTION)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.action is not None, (view.status, view.reason)
    action = view.action
    assert (action.kind, action.effect.order_id, action.effect.refund_cents) == (ActionKind.RETURN_ITEMS, "QH-1004", 0)
    assert action.effect.return_opened == ReturnTerms(units=1, refund_due_cents=10900)
    assert (action.requires.customer, action.requires.reviewers) == (True, 1)
    assert view.answer is not None and "CNY 109.00 (10900 cents)" in view.answer
    assert "once the warehouse checks them in" in view.answer and 'reply "yes"' in view.answer

    approved = await shop.review("chen", view)
    assert approved.returncode == 0, approved.stderr
    said = await asyncio.to_thread(shop.run, "--profile", "alice", "say", view.case_id, "yes", check=False)
    assert said.returncode == 0, (said.stdout[-800:], said.stderr[-800:])
    done = await shop.view(view.case_id)
    assert done.status is CaseStatus.COMPLETED and done.reason == StopCode.ACTION_EXECUTED.value, done.reason
    receipt = done.action_receipt
    assert receipt is not None and set(receipt.agreed_by) == {"alice", "chen"}
    assert (receipt.kind, receipt.refund_cents, receipt.status_after) == (ActionKind.RETURN_ITEMS, 0, "delivered")
    assert done.answer is not None and receipt.receipt_id in done.answer and "CNY 109.00 goes back" in done.answer
    [opened] = shop._rows(ReturnRow)
    assert (opened.order_id, opened.units, opened.refund_due_cents) == ("QH-1004", 1, 10900)
    [order] = [row for row in shop._rows(OrderRow) if row.order_id == "QH-1004"]
    assert (order.status, order.refunded_cents) == ("delivered", 0)

    verified = await asyncio.to_thread(shop.run, "--profile", "alice", "verify", view.case_id, check=False)
    assert verified.returncode == 0, (verified.stdout[-1500:], verified.stderr[-800:])
    assert "applicant token -> action proposal -> confirmation -> approvals -> action receipt" in verified.stdout
    card = await asyncio.to_thread(shop.run, "--profile", "chen", "status", view.case_id)
    assert "1 unit(s); CNY 109.00 → original_payment_method once checked in" in " ".join(card.stdout.split())

    again, conflict = await replay_and_conflict(shop, shop.cases().open(f"case-{view.case_id}").workflow, action)
    assert again.replay and again.receipt_id == receipt.receipt_id
    assert conflict == "idempotency_conflict"
    assert len(shop._rows(ActionExecutionRow)) == 1 and len(shop._rows(ReturnRow)) == 1

    second = await shop.ask("alice", QUESTION)
    assert second.status is CaseStatus.NEEDS_HUMAN, (second.status, second.reason)
    assert second.reason == f"{StopCode.ACTION_REFUSED.value}:action_not_eligible"
    assert second.action is None and len(shop._rows(ReturnRow)) == 1

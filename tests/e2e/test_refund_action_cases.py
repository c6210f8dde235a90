"""A refund case of a tenant whose policy names ``refund_order`` (issue 48): the refund as an action, against
the real worker, dev server, commerce server (stdio) and rehearsal model, the tenant's rule set by
``starter.py directory``.

The case investigates and quotes as every refund case does; instead of the refund's own proposal it asks
the commerce server to preview ``refund_order``, keeps it only if it pays exactly the quote the draft
states, and waits for the customer's signed yes and the reviewers the directory asks (never fewer than
the tenant's refund approval policy). Executed once: the order is refunded once, the case's decision is
paid, verify walks the chain; the same execution again is a replay and another body a conflict. A
tenant that does not name ``refund_order`` keeps the refund's own proposal (every other refund test).
"""

from __future__ import annotations

import asyncio

from activities.commerce.commerce_client import open_stdio_client
from commerce_server.db import ActionExecutionRow, CaseDecisionRow, OrderRow, RefundRow
from contracts.action_policy import ActionKind
from contracts.actions import ActionExecution
from contracts.case import CaseStatus
from contracts.errors import SupportError
from contracts.names import StopCode
from contracts.tools import ToolName
from keystore.signers import KeyFileSigner
from tests.e2e.action_support import replay_and_conflict
from tests.e2e.merchant_world import Merchant

QUESTION = "Please refund QH-1001 and explain the amount and the policy"


def _refunded(shop: Merchant, order_id: str = "QH-1001") -> tuple[int, int]:
    [order] = [row for row in shop._rows(OrderRow) if row.order_id == order_id]
    return order.refunded_cents, order.version


async def test_a_refund_as_an_action_pays_the_quote_once_on_the_customers_yes_and_a_reviewers_approval(
    merchant: Merchant,
) -> None:
    shop = merchant
    shop.run("directory", "allow-action", "qinghe", "refund_order", "--reviewers", "1")
    view = await shop.ask("alice", QUESTION)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.action is not None, (view.status, view.reason)
    action = view.action
    effect = action.effect
    assert view.proposal is None  # not the refund's own proposal
    assert (action.kind, effect.order_id, effect.refund_cents, effect.status_after) == (
        ActionKind.REFUND_ORDER,
        "QH-1001",
        12900,
        effect.status_before,
    )
    assert effect.quote_id is not None and effect.quote_id.startswith("Q-")
    assert (action.requires.customer, action.requires.reviewers) == (True, 1)
    assert view.answer is not None and "Order QH-1001 will be refunded CNY 129.00 (12900 cents)" in view.answer
    assert 'reply "yes"' in view.answer

    said = await asyncio.to_thread(shop.run, "--profile", "alice", "say", view.case_id, "yes", check=False)
    assert said.returncode == 0, (said.stdout[-800:], said.stderr[-800:])
    half = await shop.view(view.case_id)
    assert half.status is CaseStatus.WAITING_APPROVAL and half.confirmed_by == "alice"
    assert _refunded(shop) == (0, 1)
    approved = await shop.review("chen", half)
    assert approved.returncode == 0, (approved.stdout[-800:], approved.stderr[-800:])
    done = await shop.view(view.case_id)
    assert done.status is CaseStatus.COMPLETED and done.reason == StopCode.ACTION_EXECUTED.value, done.reason
    receipt = done.action_receipt
    assert receipt is not None and set(receipt.agreed_by) == {"alice", "chen"}
    assert (receipt.kind, receipt.refund_cents) == (ActionKind.REFUND_ORDER, 12900)
    assert done.answer is not None and f"receipt {receipt.receipt_id}" in done.answer
    assert "Order QH-1001 was refunded CNY 129.00 (12900 cents)" in done.answer and "SIMULATED" in done.answer
    assert _refunded(shop) == (12900, 2)
    [decision] = shop._rows(CaseDecisionRow)
    assert (decision.case_id, decision.outcome, decision.approval_id) == (view.case_id, "paid", action.proposal_id)
    assert shop._rows(RefundRow) == []  # paid once, as the action, never through execute_refund too

    verified = await asyncio.to_thread(shop.run, "--profile", "alice", "verify", view.case_id, check=False)
    assert verified.returncode == 0, (verified.stdout[-1500:], verified.stderr[-800:])
    assert "applicant token -> action proposal -> confirmation -> approvals -> action receipt" in verified.stdout
    assert "1 of 1 distinct reviewer(s) of qinghe approved this digest: chen" in verified.stdout
    card = await asyncio.to_thread(shop.run, "--profile", "alice", "status", view.case_id)
    assert "refund_order · QH-1001" in card.stdout and effect.quote_id in card.stdout

    again, conflict = await replay_and_conflict(shop, shop.cases().open(f"case-{view.case_id}").workflow, action)
    assert again.replay and again.receipt_id == receipt.receipt_id
    assert conflict == "idempotency_conflict"
    assert len(shop._rows(ActionExecutionRow)) == 1 and _refunded(shop) == (12900, 2)


async def test_the_tenants_four_eyes_policy_holds_for_a_refund_as_an_action(merchant: Merchant) -> None:
    """The rule asks one reviewer; the tenant's refund approval policy two from 100.00: the proposal asks two,
    and chen's approval with the customer's yes executes nothing."""
    shop = merchant
    shop.run("directory", "allow-action", "qinghe", "refund_order", "--reviewers", "1")
    shop.run("directory", "set-policy", "qinghe", "--two-reviewers-from", "10000")
    view = await shop.ask("alice", QUESTION)
    assert view.action is not None and view.action.requires.reviewers == 2, (view.status, view.reason)

    said = await asyncio.to_thread(shop.run, "--profile", "alice", "say", view.case_id, "yes", check=False)
    assert said.returncode == 0, said.stderr[-800:]
    approved = await shop.review("chen", await shop.view(view.case_id))
    assert approved.returncode == 0, (approved.stdout[-800:], approved.stderr[-800:])
    waiting = await shop.view(view.case_id)

    assert waiting.status is CaseStatus.WAITING_APPROVAL and waiting.approved_by == ["chen"]
    assert _refunded(shop) == (0, 1) and shop._rows(ActionExecutionRow) == []


async def test_a_rejected_refund_as_an_action_is_closed_and_agreements_signed_in_time_execute_nothing(
    merchant: Merchant,
) -> None:
    """chen rejects; the case closes the proposal at the commerce server. The customer's confirmation and
    chen's approval of the very digest, signed now (before the proposal expires), then sent straight to the
    server as a hand-made run would, are refused case_closed_unpaid, and nothing is paid."""
    shop = merchant
    shop.run("directory", "allow-action", "qinghe", "refund_order", "--reviewers", "1")
    view = await shop.ask("alice", QUESTION)
    assert view.action is not None, (view.status, view.reason)
    rejected = await shop.review("chen", view, "--reject")
    assert rejected.returncode == 0, (rejected.stdout[-800:], rejected.stderr[-800:])
    done = await shop.view(view.case_id)
    assert done.status is CaseStatus.REJECTED, (done.status, done.reason)
    events = await shop.events(view.case_id)
    assert any(e.startswith("proposal_closed: closed as rejected at the commerce server") for e in events), events

    action, signer = view.action, KeyFileSigner(shop.state_dir)
    execution = ActionExecution(
        proposal_id=action.proposal_id,
        digest=action.digest,
        idempotency_key="hand-made-run",
        confirmation_token=signer.confirmation_token(
            shop.identity("alice"), case_id=view.case_id, digest=action.digest
        ),
        approval_tokens=(
            signer.approval_token(
                shop.identity("chen"), case_id=view.case_id, digest=action.digest, decision="approve"
            ),
        ),
    )
    async with open_stdio_client("alice", shop.state_dir) as commerce:
        try:
            receipt = await commerce.call(ToolName.EXECUTE_ACTION, {"execution": execution.model_dump(mode="json")})
        except SupportError as refused:
            code = refused.code
        else:
            raise AssertionError(f"the commerce server executed a closed proposal: {receipt}")

    assert code == "case_closed_unpaid"
    [decision] = shop._rows(CaseDecisionRow)
    assert (decision.case_id, decision.outcome) == (view.case_id, "rejected")
    assert _refunded(shop) == (0, 1) and shop._rows(ActionExecutionRow) == []

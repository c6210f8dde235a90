"""A case proposes an action (issue 48): "please cancel my order" against the real worker, dev server,
commerce server (stdio) and rehearsal model, with the tenant's policy set by ``starter.py directory``.

The commerce server computes the cancellation; code states it to the customer; the customer's "yes"
through ``starter.py say`` carries a confirmation their sign-in signed over the proposal's digest; a
reviewer approves where the rule asks for one; the action executes once and the receipt answers. The
words "yes" alone agree to nothing, a confirmation of another proposal is refused, a tenant that allows
no cancellation is never even asked, and a proposal nobody agrees to in time executes nothing.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

from case_client import MessageRefused
from case_client._conversation import new_message_id, send_message
from case_history.action_trail import action_trail
from case_history.trail import Decoded, trail_from_history
from case_history.verify_action import verify_action_chain
from cli.exit_codes import ExitCode
from commerce_server.db import ActionExecutionRow, ActionProposalRow, OrderRow, ShippingAddressRow
from contracts.action_policy import ActionKind
from contracts.case import CaseStatus, CaseView
from contracts.commerce import OrderStatus
from contracts.conversation import CustomerMessage, MessageRefusal
from contracts.names import StopCode
from keystore import directory_location, load_directory
from keystore.signers import KeyFileSigner
from tests.e2e.action_support import replay_and_conflict
from tests.e2e.merchant_world import Merchant

OPEN = (CaseStatus.QUEUED, CaseStatus.RUNNING, CaseStatus.WAITING_APPROVAL, CaseStatus.WAITING_CUSTOMER)
QUESTION = "Please cancel my order QH-1006, I no longer need the cable."


def _allow(shop: Merchant, *options: str) -> None:
    shop.run("directory", "allow-action", "qinghe", "cancel_order", *options)


async def _waiting(shop: Merchant) -> CaseView:
    view = await shop.ask("alice", QUESTION)
    assert view.status is CaseStatus.WAITING_APPROVAL, (view.status, view.reason)
    assert view.action is not None and view.digest == view.action.digest
    return view


def _order_status(shop: Merchant, order_id: str = "QH-1006") -> OrderStatus:
    [row] = [row for row in shop._rows(OrderRow) if row.order_id == order_id]
    return OrderStatus(row.status)


async def test_a_cancellation_the_customer_confirms_executes_once_and_replays(merchant: Merchant) -> None:
    shop = merchant
    _allow(shop, "--reviewers", "0", "--max-per-day", "3")
    view = await _waiting(shop)
    action = view.action
    assert action is not None
    assert (action.kind, action.effect.order_id, action.effect.refund_cents) == (
        ActionKind.CANCEL_ORDER,
        "QH-1006",
        4700,
    )
    assert (action.requires.customer, action.requires.reviewers) == (True, 0)
    assert view.answer is not None and "CNY 47.00 (4700 cents)" in view.answer and 'reply "yes"' in view.answer
    assert _order_status(shop) is OrderStatus.PROCESSING

    handle = shop.cases().open(f"case-{view.case_id}")
    token = KeyFileSigner(shop.state_dir).applicant_token(shop.identity("alice"), view.case_id)
    words = CustomerMessage(text="yes", token=token, message_id=new_message_id())
    await send_message(handle.workflow, words)  # "yes" without the signed confirmation
    still = await handle.wait_for(lambda v: len(v.conversation) >= 4, timeout=30, poll_seconds=0.2)
    assert still.status is CaseStatus.WAITING_APPROVAL and still.confirmed_by is None
    assert "still waits for your confirmation" in still.conversation[-1].text
    assert _order_status(shop) is OrderStatus.PROCESSING

    said = await asyncio.to_thread(shop.run, "--profile", "alice", "say", view.case_id, "yes", check=False)
    assert said.returncode == 0, (said.stdout[-800:], said.stderr[-800:])
    done = await shop.view(view.case_id)
    assert done.status is CaseStatus.COMPLETED and done.reason == StopCode.ACTION_EXECUTED.value, done.reason
    receipt = done.action_receipt
    assert receipt is not None and not receipt.replay and receipt.agreed_by == ("alice",)
    assert (receipt.order_id, receipt.refund_cents, receipt.status_after) == ("QH-1006", 4700, OrderStatus.CANCELLED)
    assert done.confirmed_by == "alice" and done.answer is not None and receipt.receipt_id in done.answer
    assert _order_status(shop) is OrderStatus.CANCELLED
    assert len(shop._rows(ActionExecutionRow)) == 1
    events = await shop.events(view.case_id)
    kinds = [event.split(":", 1)[0] for event in events]
    assert kinds.index("action_proposed") < kinds.index("confirmation_accepted") < kinds.index("action_executed")
    assert any("rule {" in event and "reviewers: 0" in event for event in events if event.startswith("action_proposed"))

    audited = await asyncio.to_thread(shop.run, "--profile", "alice", "audit", view.case_id)
    text = audited.stdout
    assert "action proposal" in text and "recomputed here: the same" in text and action.digest in text
    assert "confirmations: 1 sent" in text and "execution: completed" in text and receipt.receipt_id in text
    as_json = json.loads(
        (await asyncio.to_thread(shop.run, "--profile", "alice", "audit", view.case_id, "--json")).stdout
    )
    assert as_json["action"]["digest_recomputed"] == action.digest
    assert as_json["action"]["execution"]["confirmation_claims"]["sub"] == "alice"
    assert "eyJ" not in json.dumps(as_json["action"])  # tokens appear as their claims, never as tokens

    again, conflict = await replay_and_conflict(shop, handle.workflow, action)
    assert again.replay and again.receipt_id == receipt.receipt_id
    assert conflict == "idempotency_conflict"
    assert len(shop._rows(ActionExecutionRow)) == 1 and _order_status(shop) is OrderStatus.CANCELLED


async def test_a_cancellation_the_rule_sends_to_a_reviewer_waits_for_both(merchant: Merchant) -> None:
    shop = merchant
    _allow(shop, "--reviewers", "1")
    view = await _waiting(shop)
    assert view.action is not None and view.action.requires.reviewers == 1
    early = await shop.review("chen", view)  # a reviewer may approve first: the customer must still say yes
    assert early.returncode == 0, early.stderr
    half = await shop.view(view.case_id)
    assert half.status is CaseStatus.WAITING_APPROVAL and half.approved_by == ["chen"] and half.confirmed_by is None
    assert _order_status(shop) is OrderStatus.PROCESSING
    said = await asyncio.to_thread(shop.run, "--profile", "alice", "say", view.case_id, "yes", check=False)
    assert said.returncode == 0, (said.stdout[-800:], said.stderr[-800:])
    done = await shop.view(view.case_id)
    assert done.status is CaseStatus.COMPLETED, (done.status, done.reason)
    assert done.action_receipt is not None and set(done.action_receipt.agreed_by) == {"alice", "chen"}
    assert _order_status(shop) is OrderStatus.CANCELLED

    verified = await asyncio.to_thread(shop.run, "--profile", "alice", "verify", view.case_id, check=False)
    assert verified.returncode == 0, (verified.stdout[-1500:], verified.stderr[-800:])
    assert "chain verified: applicant token -> action proposal -> confirmation -> approvals -> action receipt" in (
        verified.stdout
    )
    assert "1 of 1 distinct reviewer(s) of qinghe approved this digest: chen" in verified.stdout

    histories = [await shop.cases().open(f"case-{view.case_id}").workflow.fetch_history()]
    runs = [trail_from_history(history) for history in histories]
    keys = load_directory(directory_location(shop.state_dir, {}))
    trail = action_trail(histories)
    assert verify_action_chain(runs, trail, keys, case_id=view.case_id).verified
    execution = trail.execution
    assert execution is not None and execution.request.value is not None and execution.receipt.value is not None
    request, receipt = execution.request.value, execution.receipt.value
    tampered = {
        "confirmation": replace(execution, request=Decoded(request.model_copy(update={"confirmation_token": None}))),
        "approvals": replace(execution, request=Decoded(request.model_copy(update={"approval_tokens": []}))),
        "action receipt": replace(execution, receipt=Decoded(receipt.model_copy(update={"refund_cents": 1}))),
    }
    for link, forged in tampered.items():
        report = verify_action_chain(runs, replace(trail, execution=forged), keys, case_id=view.case_id)
        assert report.first_broken is not None and report.first_broken.name == link, (link, report.links)


async def test_a_confirmation_of_another_proposal_is_refused_and_changes_nothing(merchant: Merchant) -> None:
    shop = merchant
    _allow(shop, "--reviewers", "0", "--max-per-day", "3")
    view = await _waiting(shop)
    signer = KeyFileSigner(shop.state_dir)
    alice = shop.identity("alice")
    wrong = signer.confirmation_token(alice, case_id=view.case_id, digest="0" * 64)
    message = CustomerMessage(
        text="yes",
        token=signer.applicant_token(alice, view.case_id),
        message_id=new_message_id(),
        confirmation=wrong,
    )
    handle = shop.cases().open(f"case-{view.case_id}")
    try:
        await send_message(handle.workflow, message)
    except MessageRefused as refused:
        assert refused.refusal is MessageRefusal.CONFIRMATION_INVALID, refused
    else:
        raise AssertionError("a confirmation of another proposal was taken")
    after = await handle.status()
    assert after.status is CaseStatus.WAITING_APPROVAL and after.confirmed_by is None
    assert any(event.startswith("confirmation_refused") for event in await shop.events(view.case_id))
    assert _order_status(shop) is OrderStatus.PROCESSING


async def test_a_tenant_that_allows_no_cancellation_is_never_asked_for_one(merchant: Merchant) -> None:
    shop = merchant
    view = await shop.ask("alice", QUESTION)
    assert view.status is CaseStatus.NEEDS_HUMAN, (view.status, view.reason)
    assert view.reason == f"{StopCode.ACTION_NOT_ALLOWED.value}:cancel_order" and view.action is None
    assert view.answer is not None and "cancel" not in view.answer.lower()  # the draft that offered it is not shown
    assert shop._rows(ActionProposalRow) == []  # default deny at the workflow: nothing was previewed
    assert _order_status(shop) is OrderStatus.PROCESSING


async def test_a_cancellation_nobody_confirms_in_time_executes_nothing(merchant: Merchant) -> None:
    """qinghe names no escalation reviewer: the proposal is noted as it nears its expiry (a third of its 15 s
    left), then closes undecided; nothing executes."""
    shop = merchant
    _allow(shop, "--reviewers", "0", "--max-per-day", "3")
    handle = await shop.cases().start(shop.identity("alice"), QUESTION, ttl_seconds=15)
    view = await handle.wait_for(lambda v: v.status not in OPEN, timeout=120, poll_seconds=0.5)
    assert view.status is CaseStatus.EXPIRED, (view.status, view.reason)
    assert view.reason == StopCode.ACTION_EXPIRED_WITHOUT_AGREEMENT.value and view.action is not None
    assert view.answer is not None and "nothing has been changed" in view.answer
    assert shop._rows(ActionExecutionRow) == [] and _order_status(shop) is OrderStatus.PROCESSING
    events = await shop.events(view.case_id)
    kinds = [event.split(":", 1)[0] for event in events]
    assert kinds.count("near_expiry") == 1 and kinds.index("near_expiry") < kinds.index("case_finished"), events
    assert "escalated" not in kinds and view.escalated_to is None
    assert view.near_expiry_at is not None and view.action.created_at < view.near_expiry_at < view.action.expires_at
    card = await asyncio.to_thread(shop.run, "--profile", "alice", "status", view.case_id, check=False)
    assert card.returncode == ExitCode.NEEDS_PERSON, card.stderr  # expired: a person takes it from here
    said = " ".join(card.stdout.split())
    assert "near expiry noted at" in said and "the proposal neared its expiry undecided" in said, card.stdout
    history = await handle.workflow.fetch_history()
    timers = [
        json.loads(event.user_metadata.summary.data)
        for event in history.events
        if event.HasField("timer_started_event_attributes")
    ]
    assert timers[:2] == [
        "cancel_order proposal expires; first note the proposal nearing its expiry",
        "cancel_order proposal expires",
    ], timers


async def test_a_proposal_nearing_its_expiry_undecided_is_escalated_then_closes(merchant: Merchant) -> None:
    """qinghe names chen its escalation reviewer: a cancellation and a refund, each given 9 s, ask chen when a
    third of their time is left, and still close undecided at their expiry, nothing executed or paid."""
    shop = merchant
    _allow(shop, "--reviewers", "1")
    shop.run("directory", "escalate", "qinghe", "chen")
    for question in (QUESTION, "Please refund QH-1002"):
        handle = await shop.cases().start(shop.identity("alice"), question, ttl_seconds=9)
        view = await handle.wait_for(lambda v: v.status not in OPEN, timeout=120, poll_seconds=0.5)
        assert view.status is CaseStatus.EXPIRED and view.escalated_to == "chen", (question, view.status, view.reason)
        events = await shop.events(view.case_id)
        kinds = [event.split(":", 1)[0] for event in events]
        assert kinds.count("escalated") == 1 and kinds.index("escalated") < kinds.index("case_finished"), events
        assert any("chen asked to decide" in event for event in events)
    assert shop._rows(ActionExecutionRow) == [] and _order_status(shop) is OrderStatus.PROCESSING
    assert shop.refunds() == []


NEW_ADDRESS = "to: Li Lei (fictional), +86 21 5555 0199, 8 River Road, Shanghai, 200000, CN"


async def test_an_address_change_the_customer_asks_for_is_confirmed_and_executed_once(merchant: Merchant) -> None:
    """The customer gives the new address in the form the host reads; the proposal states it back, the
    customer's signed yes executes it once, the ledger holds it, and verify walks the chain."""
    shop = merchant
    shop.run("directory", "allow-action", "qinghe", "change_order_address", "--reviewers", "0", "--max-per-day", "3")
    view = await shop.ask("alice", f"Please send my order QH-1006 {NEW_ADDRESS}")
    assert view.status is CaseStatus.WAITING_APPROVAL and view.action is not None, (view.status, view.reason)
    after = view.action.effect.address_after
    assert view.action.kind is ActionKind.CHANGE_ORDER_ADDRESS and after is not None
    assert (after.recipient, after.line1, after.city, after.postcode) == (
        "Li Lei (fictional)",
        "8 River Road",
        "Shanghai",
        "200000",
    )
    assert view.answer is not None and "8 River Road" in view.answer and "free of charge" in view.answer

    said = await asyncio.to_thread(shop.run, "--profile", "alice", "say", view.case_id, "yes", check=False)
    assert said.returncode == 0, (said.stdout[-800:], said.stderr[-800:])
    done = await shop.view(view.case_id)
    assert done.status is CaseStatus.COMPLETED and done.action_receipt is not None, (done.status, done.reason)
    assert done.action_receipt.kind is ActionKind.CHANGE_ORDER_ADDRESS and _order_status(shop) is OrderStatus.PROCESSING
    [row] = [row for row in shop._rows(ShippingAddressRow) if row.order_id == "QH-1006"]
    assert (row.recipient, row.line1, row.city) == ("Li Lei (fictional)", "8 River Road", "Shanghai")
    verified = await asyncio.to_thread(shop.run, "--profile", "alice", "verify", view.case_id, check=False)
    assert verified.returncode == 0, verified.stdout[-1500:]


async def test_a_rule_revoked_after_the_proposal_executes_nothing_when_the_customer_says_yes(
    merchant: Merchant,
) -> None:
    """The commerce server re-checks the tenant's rule as the directory says now: a cancellation proposed
    under a rule the merchant then revokes is refused at execution, whatever the customer signed."""
    shop = merchant
    _allow(shop, "--reviewers", "0", "--max-per-day", "3")
    view = await _waiting(shop)
    shop.run("directory", "deny-action", "qinghe", "cancel_order")
    await asyncio.to_thread(shop.run, "--profile", "alice", "say", view.case_id, "yes", check=False)
    done = await shop.view(view.case_id)
    assert done.status is CaseStatus.NEEDS_HUMAN, (done.status, done.reason)
    assert done.reason == f"{StopCode.SETTLEMENT_REFUSED.value}:action_not_allowed", done.reason
    assert done.action_receipt is None and shop._rows(ActionExecutionRow) == []
    assert _order_status(shop) is OrderStatus.PROCESSING
    assert done.answer is not None and "was cancelled" not in done.answer

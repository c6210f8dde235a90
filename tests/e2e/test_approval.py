"""Human approval: who may approve, duplicates, rejection and expiry, against a real server.

Only a reviewer's own signed approval decides a case: a review that merely names a reviewer is
refused (``signature_required``), whoever it names."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from contracts.case import AnswerSource, CaseStatus, CaseView, Decision, ReviewDecision, ReviewOutcome
from contracts.credentials import SignedReview
from contracts.knowledge import Language
from devstack.temporal_cli import temporal_cli
from tests.case_world import event_details
from tests.credentials_support import signed_review
from workflows.customer_notice import receipt_notice, status_notice

REFUND_QUESTION = "Please refund QH-1001 and explain the amount and the policy"


def _claimed(reviewer: str, digest: str, decision: Decision = Decision.APPROVE) -> ReviewDecision:
    """A review that only names ``reviewer`` (no signature): what anyone can send."""
    return ReviewDecision(reviewer=reviewer, digest=digest, decision=decision, note="test")


def _signed(
    reviewer: str, view: CaseView, digest: str | None = None, decision: Decision = Decision.APPROVE
) -> SignedReview:
    """``reviewer``'s own signed decision on this case, over ``digest`` (default: the proposal's)."""
    assert view.digest is not None
    return signed_review(reviewer, view.case_id, digest or view.digest, decision)


async def test_only_a_same_tenant_reviewer_with_the_digest_can_approve_and_it_pays_once(world, temporal_server) -> None:
    handle = await world.start(REFUND_QUESTION)
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL
    digest = view.digest

    listed = subprocess.run(
        [
            temporal_cli(),
            "workflow",
            "list",
            "--address",
            temporal_server.address,
            "--query",
            'CaseStatus="waiting_approval"',
            "--output",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert handle.id in {row["execution"]["workflowId"] for row in json.loads(listed.stdout)}

    # (who tries, the review they send, the refusal). alice (the applicant) and bob have no reviewer
    # key: all they can send is a claim of a name, refused as such, like a claim of chen's name.
    refusals: list[tuple[str, ReviewDecision | SignedReview, str]] = [
        ("chen, over another digest", _signed("chen", view, "0" * 64), "digest_mismatch"),
        ("the applicant", _claimed("alice", digest), "signature_required"),
        ("mei, of another tenant (not in the case's directory slice)", _signed("mei", view), "unknown_signer"),
        ("bob, a customer", _claimed("bob", digest), "signature_required"),
        ("anyone, naming chen", _claimed("chen", digest), "signature_required"),
    ]
    for who, decision, reason in refusals:
        with pytest.raises(WorkflowUpdateFailedError) as failed:  # a refused update fails, visibly
            await handle.execute_update("review", decision, result_type=ReviewOutcome)
        assert isinstance(failed.value.cause, ApplicationError), who
        assert failed.value.cause.type == "review_refused", who
        assert failed.value.cause.message.partition(": ")[0] == reason, who
    await handle.signal("review", _signed("mei", view))
    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update("review", _signed("chen", view, "not-a-digest"), result_type=ReviewOutcome)

    view = await world.wait_for(handle, lambda v: True)
    refused = await event_details(handle, "review_refused")
    assert len(refused) == 7 and sum("via signal" in r for r in refused) == 1
    assert view.status is CaseStatus.WAITING_APPROVAL and view.receipt is None
    assert world.refund_records() == []

    approve = _signed("chen", view)
    results = await asyncio.gather(
        handle.signal("review", approve),
        handle.signal("review", approve),
        handle.execute_update("review", approve, result_type=ReviewOutcome),
        handle.execute_update("review", approve, result_type=ReviewOutcome),
        return_exceptions=True,
    )
    accepted = [r for r in results if isinstance(r, ReviewOutcome) and r.accepted]
    assert len(accepted) <= 1
    assert all(isinstance(r, ReviewOutcome | WorkflowUpdateFailedError) or r is None for r in results), results
    final: CaseView = await handle.result()
    assert final.status is CaseStatus.COMPLETED
    assert final.receipt is not None and final.receipt.receipt_id.startswith("SIM-")
    assert final.receipt.amount_cents == 12900
    assert len(await event_details(handle, "review_accepted")) == 1
    # After settlement the customer reads the receipt, stated by code, not the pre-approval draft.
    assert view.answer_source is AnswerSource.MODEL_DRAFT and "no money has moved" in view.answer
    assert (final.answer, final.answer_source) == (receipt_notice(final.receipt, Language.EN), AnswerSource.RECEIPT)
    assert final.answer is not None
    assert final.receipt.receipt_id in final.answer and "CNY 129.00 (12900 cents)" in final.answer
    assert "SIMULATED" in final.answer and "no money has moved yet" not in final.answer

    with pytest.raises(RPCError):
        await handle.signal("review", approve)
    records = world.refund_records()
    assert [(r.order_id, r.amount_cents) for r in records] == [("QH-1001", 12900)]
    order = world.order("QH-1001")
    assert (order.refunded_cents, order.version) == (12900, 2)


async def test_a_rejected_proposal_pays_nothing(world) -> None:
    handle = await world.start("Please refund QH-1002")
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.proposal.amount_cents == 17900
    await handle.signal("review", _signed("chen", view, decision=Decision.REJECT))
    final: CaseView = await handle.result()
    assert final.status is CaseStatus.REJECTED and final.receipt is None
    assert (final.answer, final.answer_source) == (
        status_notice(CaseStatus.REJECTED, Language.EN),
        AnswerSource.STATUS_NOTICE,
    )
    assert world.refund_records() == []
    assert world.order("QH-1002").refunded_cents == 0


async def test_an_unanswered_proposal_expires_and_a_late_approval_is_refused(world) -> None:
    handle = await world.start(REFUND_QUESTION, ttl=3)
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL
    final: CaseView = await asyncio.wait_for(handle.result(), timeout=60)
    assert final.status is CaseStatus.EXPIRED and final.receipt is None
    assert final.answer is not None
    assert final.answer == status_notice(CaseStatus.EXPIRED, Language.EN) and "no refund has been made" in final.answer
    with pytest.raises(RPCError):
        await handle.execute_update("review", _signed("chen", view), result_type=ReviewOutcome)
    assert world.refund_records() == []
    assert world.order("QH-1001").refunded_cents == 0


MALFORMED_REVIEWS = {
    "decision outside the enum": '{"reviewer": "chen", "digest": "%s", "decision": "approved", "note": ""}',
    "missing decision": '{"reviewer": "chen", "digest": "%s", "note": ""}',
    "wrong type": '{"reviewer": ["chen"], "digest": "%s", "decision": "approve", "note": ""}',
    "not an object": '"approve %s"',
    "a token that is not a string": '{"approval_token": ["%s"]}',
}
"""Malformed ``review`` payloads: the first three are reviews by name with a broken field (neither a
signed review nor a named one), the last one a signed review whose token is no string."""


async def test_malformed_and_refused_reviews_from_the_temporal_cli_are_recorded_and_refused_updates_fail(
    world, temporal_server
) -> None:
    handle = await world.start(REFUND_QUESTION)
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL

    async def cli(*args: str) -> subprocess.CompletedProcess:
        """The Temporal CLI in a thread: the worker under test runs on this event loop."""
        command = [temporal_cli(), "workflow", *args, "--address", temporal_server.address, "--workflow-id", handle.id]
        return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=30)

    for payload in MALFORMED_REVIEWS.values():
        signalled = await cli("signal", "--name", "review", "--input", payload % view.digest)
        assert signalled.returncode == 0, signalled.stderr  # a signal is accepted by the server, then judged
        updated = await cli("update", "execute", "--name", "review", "--input", payload % view.digest)
        assert updated.returncode != 0, updated.stdout  # a malformed update fails for the caller
    refused = await cli(
        "update",
        "execute",
        "--name",
        "review",
        "--input",
        MALFORMED_REVIEWS["decision outside the enum"].replace('"approved"', '"approve"').replace('"chen"', '"bob"')
        % view.digest,
    )
    # well formed, but only a claim of a name: refused (a case with signed credentials takes signatures only)
    assert refused.returncode != 0 and "signature_required" in refused.stdout + refused.stderr

    events = await event_details(handle, "review_refused")
    malformed = [e for e in events if e.startswith("malformed payload")]
    assert len(malformed) == 2 * len(MALFORMED_REVIEWS), events
    assert (
        sum("via signal" in e for e in malformed) == sum("via update" in e for e in malformed) == len(MALFORMED_REVIEWS)
    )
    # each event names the field of the expected signed review and what is wrong with it
    assert sum("approval_token: Field required" in e for e in malformed) == 2 * 3, malformed
    assert sum("approval_token: Input should be a valid string" in e for e in malformed) == 2, malformed
    assert sum("payload: Input should be an object" in e for e in malformed) == 2, malformed
    assert [e for e in events if not e.startswith("malformed payload")] == [
        "bob (claimed) via update: signature_required"
    ]
    still = await handle.query("status", result_type=CaseView)
    assert still.status is CaseStatus.WAITING_APPROVAL and world.refund_records() == []

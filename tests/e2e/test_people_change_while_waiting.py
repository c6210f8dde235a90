"""People and policy change while a refund waits, and the case follows: a review is judged against the
directory as it is when the review arrives (read by an activity and recorded), and the commerce server,
reading its own copy when it pays, applies the same.

A merchant's own state dir (``starter.py init``), edited with ``starter.py directory`` (or, for a
passkey, as the reviewer console's enrolment writes it) while the case waits; the real worker, dev server
and commerce server over stdio.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from pathlib import Path

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from contracts.case import CaseStatus, CaseView, ReviewOutcome
from contracts.credentials import SignedReview
from contracts.identity import Identity
from contracts.passkey import ReviewStatement, encode_passkey_approval, passkey_approval_from_browser, review_challenge
from devstack.software_authenticator import SoftwareAuthenticator
from keystore import directory_location, load_directory, write_directory
from keystore.directory_edit import add_passkey
from keystore.signers import KeyFileSigner
from tests.e2e.merchant_world import Merchant

RP_ID, ORIGIN = "localhost", "http://localhost:8090"


async def waiting(shop: Merchant, question: str = "Please refund QH-1001") -> CaseView:
    view = await shop.ask("alice", question)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None, (view.status, view.reason)
    return view


def enrol_passkey(state_dir: Path, reviewer: str) -> SoftwareAuthenticator:
    """``reviewer``'s new passkey written to the directory, as the console's enrolment does."""
    authenticator = SoftwareAuthenticator(RP_ID, ORIGIN)
    path = Path(directory_location(state_dir, {}))
    write_directory(path, add_passkey(load_directory(str(path)), reviewer, authenticator.passkey_record()))
    return authenticator


def passkey_review(authenticator: SoftwareAuthenticator, reviewer: str, view: CaseView) -> SignedReview:
    assert view.digest is not None
    statement = ReviewStatement(
        case_id=view.case_id,
        digest=view.digest,
        decision="approve",
        reviewer=reviewer,
        nonce=secrets.token_urlsafe(16),
        issued_at=int(time.time()),
    )
    credential = authenticator.assert_(review_challenge(statement))
    return SignedReview(approval_token=encode_passkey_approval(passkey_approval_from_browser(statement, credential)))


def signed_with(shop: Merchant, reviewer: Identity, view: CaseView, *, kid: str) -> SignedReview:
    """``reviewer``'s approval of ``view`` signed with the private key ``kid`` in the state dir."""
    assert view.digest is not None
    token = KeyFileSigner(shop.state_dir).approval_token(
        reviewer, case_id=view.case_id, digest=view.digest, decision="approve", kid=kid
    )
    return SignedReview(approval_token=token)


async def refused(shop: Merchant, view: CaseView, review: SignedReview) -> str:
    """The code of a refused ``review`` update."""
    handle = shop.client.get_workflow_handle(f"case-{view.case_id}")
    with pytest.raises(WorkflowUpdateFailedError) as failed:
        await handle.execute_update("review", review, result_type=ReviewOutcome)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "review_refused", cause
    return cause.message.partition(":")[0]


async def test_a_passkey_enrolled_after_the_case_started_approves_it(merchant: Merchant) -> None:
    shop = merchant
    view = await waiting(shop)
    chen = enrol_passkey(shop.state_dir, "chen")  # the support lead's first day: the refund was already waiting
    handle = shop.client.get_workflow_handle(f"case-{view.case_id}")
    outcome = await handle.execute_update("review", passkey_review(chen, "chen", view), result_type=ReviewOutcome)
    assert outcome.accepted, outcome
    paid = await shop.view(view.case_id)
    assert paid.status is CaseStatus.COMPLETED and paid.receipt is not None, (paid.status, paid.reason)
    assert [(row.case_id, row.amount_cents) for row in shop.refunds()] == [(view.case_id, 12900)]
    assert any(
        event.startswith("directory_read: directory read for a review") for event in await shop.events(view.case_id)
    )


async def test_a_key_rotated_while_the_case_waits_approves_and_the_old_one_is_refused_by_both(
    merchant: Merchant,
) -> None:
    shop = merchant
    view = await waiting(shop)
    old = signed_with(shop, shop.identity("chen"), view, kid="reviewer:chen")
    rotated = await asyncio.to_thread(shop.run, "directory", "rotate-key", "chen")
    assert "reviewer:chen:2" in rotated.stdout, rotated.stdout

    assert await refused(shop, view, old) == "wrong_signer"  # chen's key now is reviewer:chen:2
    straight = await shop.refused_straight(view, old.approval_token)
    assert straight.code == "approval_signature_invalid", straight
    assert shop.refunds() == []

    assert (await shop.review("chen", view)).returncode == 0  # the new key
    paid = await shop.view(view.case_id)
    assert paid.status is CaseStatus.COMPLETED and paid.receipt is not None, (paid.status, paid.reason)
    assert [row.case_id for row in shop.refunds()] == [view.case_id]


async def test_a_threshold_raised_while_the_case_waits_asks_for_a_second_approval_and_pays_once(
    merchant: Merchant,
) -> None:
    shop = merchant
    view = await waiting(shop)
    assert view.effect is not None and view.effect.approvals_required == 1
    await asyncio.to_thread(shop.run, "directory", "add-person", "zoe", "--tenant", "qinghe", "--role", "reviewer")
    await asyncio.to_thread(shop.run, "directory", "set-policy", "qinghe", "--two-reviewers-from", "10000")

    first = await shop.review("chen", view)
    assert first.returncode == 0, first.stderr
    assert "1 of 2" in first.stdout + first.stderr, first.stdout + first.stderr
    still = await shop.view(view.case_id)
    assert still.status is CaseStatus.WAITING_APPROVAL and still.effect is not None
    assert (still.effect.approvals_required, still.effect.approved_by) == (2, ["chen"])
    status = await asyncio.to_thread(shop.run, "--profile", "chen", "status", view.case_id)
    assert "1 of 2 approvals" in status.stdout, status.stdout
    assert shop.refunds() == []

    second = await shop.review("zoe", view)
    assert second.returncode == 0, second.stderr
    paid = await shop.view(view.case_id)
    assert paid.status is CaseStatus.COMPLETED and paid.receipt is not None, (paid.status, paid.reason)
    [refund] = shop.refunds()
    assert (refund.case_id, refund.reviewer, refund.amount_cents) == (view.case_id, "chen", 12900)
    assert [row.reviewer for row in shop.co_approvals()] == ["zoe"]


async def test_a_removed_reviewers_approval_is_refused_by_the_case_and_the_commerce_server(
    merchant: Merchant,
) -> None:
    shop = merchant
    await asyncio.to_thread(shop.run, "directory", "add-person", "sam", "--tenant", "qinghe", "--role", "reviewer")
    view = await waiting(shop)
    sams = signed_with(shop, shop.identity("sam"), view, kid="reviewer:sam")
    await asyncio.to_thread(shop.run, "directory", "remove-person", "sam")

    assert await refused(shop, view, sams) == "unknown_signer"  # sam and sam's key are gone
    straight = await shop.refused_straight(view, sams.approval_token)
    assert straight.code == "approval_signature_invalid", straight
    still = await shop.view(view.case_id)
    assert still.status is CaseStatus.WAITING_APPROVAL, still.status
    assert shop.refunds() == []

"""Identity and approval are credentials, not names, against the real worker, the Temporal dev server
and the real commerce server over stdio.

* A review that merely names chen, sent with the real Temporal CLI as a signal and as an update, is
  refused (``signature_required``) and recorded; nothing is paid and the case keeps waiting.
* Every forged or misused approval token is refused in the workflow, by the signal handler and by the
  update (which fails with the reason), is recorded, and changes nothing; then chen's own signed
  approval pays exactly once, with a receipt signed by the commerce key over the digest and amount.
* A case started without a valid applicant token (none, forged, another case's, another applicant's)
  ends FAILED ``applicant_unverified:<code>``: it schedules no activity but ``verify_applicant`` and
  ``write_case_record``, and the commerce server is never called for it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from activities.commerce.commerce_sessions import CommerceCheck, CommerceGateway
from activities.model.model_settings import load_model_settings
from case_worker import build_worker, commerce_gateway
from commerce_server.db import make_engine
from commerce_server.seed import seed_fixture
from contracts.case import CaseStatus, CaseView, ReviewOutcome
from contracts.case_input import CaseInput
from contracts.credentials import (
    ISSUER_KID,
    SignedReview,
    applicant_claims,
    approval_claims,
    claimed_subject,
    sign,
    verify_receipt,
)
from contracts.identity import Identity
from contracts.knowledge import Language
from contracts.names import WORKFLOW_NAME, ActivityName, EventKind, QueryName, workflow_id
from contracts.refusals import refusal_sentence
from devstack.temporal_cli import temporal_cli
from keystore import demo_identity, load_private_key, private_key_path, reviewer_kid
from tests.case_world import CaseWorld, event_details, scheduled_activity_types, stress_options
from tests.conftest import DemoKeys
from tests.credentials_support import applicant_token, forged_approval_token, signed_review, use_test_keys

REFUND_QUESTION = "Please refund QH-1001 and explain the amount and the policy"
OTHER_REFUND_QUESTION = "Please refund QH-1002"
ALICE, BOB, CHEN, MEI = (demo_identity(name) for name in ("alice", "bob", "chen", "mei"))


# --- helpers -------------------------------------------------------------------------------------


def _private_key(kid: str) -> Any:
    """A private key of the session's demo keys (the test plays every key holder, and the thief)."""
    return load_private_key(private_key_path(use_test_keys().state_dir, kid))


def _approval(
    reviewer: Identity, case_id: str, digest: str, *, now: datetime | None = None, decision: str = "approve"
) -> dict[str, Any]:
    return approval_claims(
        reviewer, case_id=case_id, digest=digest, decision=decision, now=now or datetime.now(UTC), jti=uuid.uuid4().hex
    )


def _token_of(reviewer: Identity, case_id: str, digest: str, *, now: datetime | None = None) -> str:
    """``reviewer``'s own, correctly signed approval (valid or not depends on what it is used for)."""
    return use_test_keys().approval_token(reviewer, case_id=case_id, digest=digest, decision="approve", now=now)


async def _until_events(handle: WorkflowHandle, kind: EventKind, count: int, timeout: float = 30) -> list[str]:
    """The case's events of ``kind`` once there are ``count`` of them (a signal is judged asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        found = await event_details(handle, kind)
        if len(found) >= count:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"only {len(found)} of {count} {kind.value} events after {timeout:.0f}s: {found}")
        await asyncio.sleep(0.1)


def sentence_reviewer(review: SignedReview) -> str:
    """The reviewer a refusal's sentence names: the one the token claims, as the workflow reads it."""
    return (claimed_subject(review.approval_token) or "?")[:40]


async def _refused_update(handle: WorkflowHandle, review: SignedReview) -> str:
    """Send ``review`` by update; it must fail as a non-retryable ``review_refused`` whose message is the
    refusal's code and its sentence; returns the code."""
    with pytest.raises(WorkflowUpdateFailedError) as failed:
        await handle.execute_update("review", review, result_type=ReviewOutcome)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError), cause
    assert cause.type == "review_refused", (cause.type, cause.message)
    assert cause.non_retryable, cause.message
    code, _, sentence = cause.message.partition(": ")
    assert sentence == refusal_sentence(code, reviewer=sentence_reviewer(review)), cause.message
    return code


def _order_state(world: CaseWorld, order_id: str) -> tuple[int, int]:
    order = world.order(order_id)
    return order.refunded_cents, order.version


def _refunds_by_case(world: CaseWorld) -> dict[str, list[tuple[str, int]]]:
    found: dict[str, list[tuple[str, int]]] = {}
    for row in world.refund_records():
        found.setdefault(row.case_id, []).append((row.order_id, row.amount_cents))
    return found


# --- the claimed-name attack through the Temporal CLI ---------------------------------------------


async def test_a_review_that_only_names_chen_is_refused_from_the_temporal_cli_and_pays_nothing(
    world: CaseWorld, temporal_server
) -> None:
    handle = await world.start(REFUND_QUESTION)
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None
    before = _order_state(world, "QH-1001")
    claimed = json.dumps({"reviewer": "chen", "digest": view.digest, "decision": "approve"})

    async def cli(*args: str) -> subprocess.CompletedProcess[str]:
        """The real Temporal CLI, in a thread: the worker under test runs on this event loop."""
        command = [temporal_cli(), "workflow", *args, "--address", temporal_server.address, "--workflow-id", handle.id]
        return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=60)

    signalled = await cli("signal", "--name", "review", "--input", claimed)
    assert signalled.returncode == 0, signalled.stderr  # the server takes any signal; the workflow judges it
    assert await _until_events(handle, EventKind.REVIEW_REFUSED, 1) == ["chen (claimed) via signal: signature_required"]

    updated = await cli("update", "execute", "--name", "review", "--input", claimed)
    assert updated.returncode != 0, updated.stdout  # a refused update fails for the caller
    assert "signature_required" in updated.stdout + updated.stderr

    assert await event_details(handle, EventKind.REVIEW_REFUSED) == [
        "chen (claimed) via signal: signature_required",
        "chen (claimed) via update: signature_required",
    ]
    assert await event_details(handle, EventKind.REVIEW_ACCEPTED) == []
    still = await handle.query(QueryName.STATUS, result_type=CaseView)
    assert (still.status, still.digest, still.receipt) == (CaseStatus.WAITING_APPROVAL, view.digest, None)
    assert (await handle.describe()).status is WorkflowExecutionStatus.RUNNING
    assert world.refund_records() == []
    assert _order_state(world, "QH-1001") == before == (0, 1)


# --- forged and misused approval tokens -----------------------------------------------------------


async def test_forged_and_misused_approvals_are_refused_and_recorded_then_chens_own_pays_once(
    world: CaseWorld, demo_keys: DemoKeys
) -> None:
    target, other = await asyncio.gather(world.start(REFUND_QUESTION), world.start(OTHER_REFUND_QUESTION))
    view, other_view = await asyncio.gather(world.settled(target), world.settled(other))
    assert view.status is other_view.status is CaseStatus.WAITING_APPROVAL
    assert view.digest is not None and other_view.digest is not None and view.digest != other_view.digest
    case_id, digest = view.case_id, view.digest

    # chen's real approval of the other case is accepted there (and pays that case's own refund).
    accepted_elsewhere = signed_review("chen", other_view.case_id, other_view.digest).approval_token
    outcome = await other.execute_update(
        "review", SignedReview(approval_token=accepted_elsewhere), result_type=ReviewOutcome
    )
    assert outcome.accepted and outcome.reason == "approve"
    other_final = await other.result()
    assert other_final.status is CaseStatus.COMPLETED and other_final.receipt is not None
    before = _order_state(world, "QH-1001")
    assert before == (0, 1)

    forgeries: dict[str, tuple[str, str, str]] = {
        # name: (token, who the record names: the signer once the signature verifies, else the claim, the refusal)
        "mei's key signing as chen": (
            forged_approval_token("chen", reviewer_kid("mei"), case_id, digest),
            "chen (claimed)",
            "bad_signature",
        ),
        # the case recorded only qinghe's slice of the directory: another tenant's reviewer has no key there
        "mei's own approval": (_token_of(MEI, case_id, digest), "mei (claimed)", "unknown_signer"),
        "chen's token for another case": (
            _token_of(CHEN, other_view.case_id, digest),
            "chen",
            "token_for_another_case",
        ),
        "chen's token for another digest": (
            _token_of(CHEN, case_id, other_view.digest),
            "chen",
            "digest_mismatch",
        ),
        "chen's token signed 11 minutes ago": (
            _token_of(CHEN, case_id, digest, now=datetime.now(UTC) - timedelta(minutes=11)),
            "chen",
            "token_expired",
        ),
        "alg none": (
            jwt.encode(_approval(CHEN, case_id, digest), "", algorithm="none"),
            "chen (claimed)",
            "wrong_algorithm",
        ),
        "the issuer key signing as chen": (
            forged_approval_token("chen", ISSUER_KID, case_id, digest),
            "chen (claimed)",
            "bad_signature",
        ),
        "chen's token accepted by another case": (accepted_elsewhere, "chen", "token_for_another_case"),
    }

    expected: list[str] = []
    for name, (token, who, refusal) in forgeries.items():
        review = SignedReview(approval_token=token)
        await target.signal("review", review)  # judged by the signal handler: recorded, nothing else
        expected.append(f"{who} via signal: {refusal}")
        assert await _until_events(target, EventKind.REVIEW_REFUSED, len(expected)) == expected, name
        assert await _refused_update(target, review) == refusal, name  # the update fails with the reason
        expected.append(f"{who} via update: {refusal}")
        assert await event_details(target, EventKind.REVIEW_REFUSED) == expected, name

    assert len(expected) == 2 * len(forgeries)
    # Nothing changed: the case waits on the same proposal, nothing was accepted or paid for it.
    assert await event_details(target, EventKind.REVIEW_ACCEPTED) == []
    still = await target.query(QueryName.STATUS, result_type=CaseView)
    assert (still.status, still.digest, still.proposal, still.receipt) == (
        CaseStatus.WAITING_APPROVAL,
        digest,
        view.proposal,
        None,
    )
    assert case_id not in _refunds_by_case(world)
    assert _order_state(world, "QH-1001") == before

    # chen's own approval of exactly this proposal pays it, once, with a receipt signed by commerce.
    valid = signed_review("chen", case_id, digest).approval_token
    outcome = await target.execute_update("review", SignedReview(approval_token=valid), result_type=ReviewOutcome)
    assert outcome.accepted and outcome.reason == "approve"
    final = await target.result()
    assert final.status is CaseStatus.COMPLETED and final.reason == "refund_settled"
    assert await event_details(target, EventKind.REVIEW_ACCEPTED) == ["chen via update: approve (signed)"]
    receipt = final.receipt
    assert receipt is not None and receipt.signature is not None
    assert (receipt.order_id, receipt.amount_cents, receipt.digest) == ("QH-1001", 12900, digest)

    claims = verify_receipt(receipt.signature, demo_keys.public_keys())
    assert claims.receipt_id == receipt.receipt_id and claims.approval_id == receipt.approval_id
    assert claims.approval_jti == jwt.decode(valid, options={"verify_signature": False})["jti"]
    assert (claims.case_id, claims.order_id, claims.digest) == (case_id, "QH-1001", digest)
    assert (claims.amount_cents, claims.currency) == (12900, receipt.currency)
    assert (claims.order_version_before, claims.order_version_after, claims.refunded_cents_after) == (1, 2, 12900)

    assert _refunds_by_case(world) == {case_id: [("QH-1001", 12900)], other_view.case_id: [("QH-1002", 17900)]}
    assert _order_state(world, "QH-1001") == (12900, 2)


# --- cases without a valid applicant token ---------------------------------------------------------


@dataclass
class RecordedCommerce:
    """The worker's real commerce gateway (stdio pool), with every call it is asked to make recorded."""

    inner: CommerceGateway
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    """(case id, identity, tool) of every call."""

    async def call(self, identity: Identity, tool: str, arguments: dict[str, Any], *, case_id: str) -> dict[str, Any]:
        self.calls.append((case_id, identity.subject, tool))
        return await self.inner.call(identity, tool, arguments, case_id=case_id)

    async def check(self) -> CommerceCheck:
        return await self.inner.check()

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class WatchedWorld:
    world: CaseWorld
    commerce: RecordedCommerce


@pytest.fixture
async def watched_world(temporal_client: Client, tmp_path: Path) -> AsyncIterator[WatchedWorld]:
    """Like ``open_world``: the production worker with the rehearsal model and the real commerce server
    over stdio on a fresh seeded database, its commerce calls recorded."""
    state_dir = tmp_path / "state"
    state_dir.mkdir(parents=True)
    engine = make_engine(f"sqlite:///{state_dir / 'commerce.db'}")
    seed_fixture(engine)
    task_queue = f"support-cases-test-{uuid.uuid4().hex[:8]}"
    commerce = RecordedCommerce(commerce_gateway(state_dir))
    worker, cleanup = build_worker(
        temporal_client,
        state_dir,
        task_queue=task_queue,
        model_settings=load_model_settings({}),
        commerce=commerce,
        **stress_options(),
    )
    async with worker:
        yield WatchedWorld(CaseWorld(temporal_client, state_dir, task_queue, engine), commerce)
    await cleanup()
    engine.dispose()


def _forged_applicant_token(identity: Identity, case_id: str) -> str:
    """An applicant token signed by chen's key but labelled as the issuer's."""
    claims = applicant_claims(identity, case_id=case_id, now=datetime.now(UTC), jti=uuid.uuid4().hex)
    return sign(claims, _private_key(reviewer_kid("chen")), kid=ISSUER_KID)


async def test_a_case_without_a_valid_applicant_token_reads_nothing_and_ends_with_the_reason(
    watched_world: WatchedWorld,
) -> None:
    world, commerce = watched_world.world, watched_world.commerce
    ids = {name: uuid.uuid4().hex[:12] for name in ("missing", "forged", "other_case", "mismatch")}
    starts: dict[str, tuple[Identity, str, str | None, str]] = {
        # name: (claimed applicant, question, applicant token, expected reason)
        "missing": (ALICE, REFUND_QUESTION, None, "applicant_unverified:applicant_token_missing"),
        "forged": (
            ALICE,
            REFUND_QUESTION,
            _forged_applicant_token(ALICE, ids["forged"]),
            "applicant_unverified:bad_signature",
        ),
        "other_case": (
            ALICE,
            REFUND_QUESTION,
            applicant_token(ALICE, uuid.uuid4().hex[:12]),
            "applicant_unverified:token_for_another_case",
        ),
        "mismatch": (
            BOB,
            "Where is QH-2001? Please refund it",
            applicant_token(ALICE, ids["mismatch"]),
            "applicant_unverified:applicant_mismatch",
        ),
    }
    handles: dict[str, WorkflowHandle[Any, CaseView]] = {}
    for name, (applicant, question, token, _) in starts.items():
        case = CaseInput(
            case_id=ids[name], question=question, language=Language.EN, applicant=applicant, applicant_token=token
        )
        handles[name] = await world.client.start_workflow(
            WORKFLOW_NAME, case, id=workflow_id(case.case_id), task_queue=world.task_queue, result_type=CaseView
        )

    for name, handle in handles.items():
        final = await asyncio.wait_for(handle.result(), timeout=60)
        applicant, _, _, reason = starts[name]
        assert (final.status, final.reason) == (CaseStatus.FAILED, reason), name
        assert (final.applicant, final.order_id, final.quote, final.proposal) == (applicant.subject, None, None, None)
        assert await scheduled_activity_types(handle) == [
            ActivityName.VERIFY_APPLICANT.value,
            ActivityName.WRITE_CASE_RECORD.value,
        ], name
        assert await event_details(handle, EventKind.APPLICANT_VERIFIED) == [], name
        assert await event_details(handle, EventKind.CASE_FINISHED) == [f"failed: {reason}"], name
    assert commerce.calls == []  # no order (and nothing else) was read for any of them
    assert world.refund_records() == []

    # The same worker does read for a case whose applicant token verifies (the recording works).
    control = await world.start("Where is QH-1005?")
    view = await world.settled(control)
    assert view.status is CaseStatus.COMPLETED, (view.status, view.reason)
    assert await event_details(control, EventKind.APPLICANT_VERIFIED) == [
        "alice (qinghe), signed by the built-in issuer; directory recorded: 1 reviewer(s) of qinghe"
    ]
    assert commerce.calls and {(case, who) for case, who, _ in commerce.calls} == {(view.case_id, "alice")}

"""Passkey approvals decide a refund on the real worker, dev server and commerce server over stdio.

The directory gives chen and a second qinghe reviewer, dong, a passkey each (the software
authenticator test double, devstack/software_authenticator.py) and qinghe a four-eyes policy, before
the cases start (a case decides from the directory slice it records at its start; the commerce
server reloads the file). An envelope made for another case and relabelled to this one is refused
``passkey_challenge_mismatch``; unedited it is refused as another case's; chen's own approval is kept
and the same envelope sent again is refused ``approval_reused``; dong's approval completes the
four-eyes policy, and the commerce server, verifying both assertions with its own copy of the
directory, pays QH-1001 once.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from cli.exit_codes import ExitCode
from contracts.case import CaseStatus, ReviewOutcome
from contracts.credentials import SignedReview, verify_approval_token, verify_receipt
from contracts.directory import ApprovalPolicy, Directory, Person
from contracts.identity import Role
from contracts.names import EventKind
from contracts.passkey import (
    ReviewStatement,
    encode_passkey_approval,
    passkey_approval_from_browser,
    review_challenge,
)
from contracts.refusals import refusal_sentence
from devstack.software_authenticator import SoftwareAuthenticator
from keystore import directory_location, load_directory, write_directory
from tests.case_world import CaseWorld, event_details
from tests.conftest import DemoKeys

REFUND_QUESTION = "Please refund QH-1001 and explain the amount and the policy"
OTHER_REFUND_QUESTION = "Please refund QH-1002"
RP_ID = "localhost"
ORIGIN = "http://localhost:8090"
ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def passkeys_enrolled(state_dir: Path, passkeys: dict[str, SoftwareAuthenticator]) -> Iterator[None]:
    """The world's directory with qinghe four-eyes from 10,000 cents, reviewer dong added, and each of
    ``passkeys`` enrolled for its reviewer; the document as it was is written back afterwards."""
    path = Path(directory_location(state_dir))
    original = load_directory(str(path))
    dong = Person(subject="dong", tenant="qinghe", role=Role.REVIEWER, display_name="Dong")
    people = [
        person.model_copy(update={"passkeys": [passkeys[person.subject].passkey_record()]})
        if person.subject in passkeys
        else person
        for person in [*original.people, dong]
    ]
    tenants = [
        tenant.model_copy(update={"approval": ApprovalPolicy(two_reviewers_from_cents=10000)})
        if tenant.tenant == "qinghe"
        else tenant
        for tenant in original.tenants
    ]
    write_directory(path, Directory(tenants=tenants, people=people, keys=original.keys))
    try:
        yield
    finally:
        write_directory(path, original)


def passkey_review(
    authenticator: SoftwareAuthenticator, reviewer: str, case_id: str, digest: str, *, carried_case: str | None = None
) -> SignedReview:
    """``reviewer``'s passkey approval of ``digest`` on ``case_id``, as the console builds it; with
    ``carried_case`` the statement is relabelled to that case after the browser signed."""
    signed = ReviewStatement(
        case_id=case_id,
        digest=digest,
        decision="approve",
        reviewer=reviewer,
        nonce=secrets.token_urlsafe(16),
        issued_at=int(time.time()),
    )
    credential = authenticator.assert_(review_challenge(signed))
    carried = signed.model_copy(update={"case_id": carried_case}) if carried_case else signed
    return SignedReview(approval_token=encode_passkey_approval(passkey_approval_from_browser(carried, credential)))


async def refused_update(handle: WorkflowHandle, review: SignedReview, *, reviewer: str) -> str:
    """The code of a refused ``review`` update, whose message is the code and its one sentence."""
    with pytest.raises(WorkflowUpdateFailedError) as failed:
        await handle.execute_update("review", review, result_type=ReviewOutcome)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "review_refused", cause
    code, _, sentence = cause.message.partition(": ")
    assert sentence == refusal_sentence(code, reviewer=reviewer), cause.message
    return code


def refunds_of(world: CaseWorld, case_id: str) -> list[tuple[str, int]]:
    return [(row.order_id, row.amount_cents) for row in world.refund_records() if row.case_id == case_id]


async def starter_verify(world: CaseWorld, address: str, case_id: str) -> subprocess.CompletedProcess[str]:
    """``starter.py --profile chen verify CASE`` on this world, in a thread (the worker runs on this loop)."""
    env = {**os.environ, "TEMPORAL_ADDRESS": address, "SUPPORT_TASK_QUEUE": world.task_queue}
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(world.state_dir)]
    command += ["--profile", "chen", "verify", case_id]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


async def test_a_passkey_approval_decides_the_refund_and_pays_once(
    world: CaseWorld, demo_keys: DemoKeys, temporal_server
) -> None:
    chen, dong = SoftwareAuthenticator(RP_ID, ORIGIN), SoftwareAuthenticator(RP_ID, ORIGIN)
    with passkeys_enrolled(world.state_dir, {"chen": chen, "dong": dong}):
        target, other = await asyncio.gather(world.start(REFUND_QUESTION), world.start(OTHER_REFUND_QUESTION))
        view, other_view = await asyncio.gather(world.settled(target), world.settled(other))
        assert view.status is other_view.status is CaseStatus.WAITING_APPROVAL
        assert view.digest is not None and other_view.digest is not None
        case_id, digest = view.case_id, view.digest

        relabelled = passkey_review(chen, "chen", other_view.case_id, other_view.digest, carried_case=case_id)
        assert await refused_update(target, relabelled, reviewer="chen") == "passkey_challenge_mismatch"
        elsewhere = passkey_review(chen, "chen", other_view.case_id, other_view.digest)
        assert await refused_update(target, elsewhere, reviewer="chen") == "token_for_another_case"

        approval = passkey_review(chen, "chen", case_id, digest)
        first = await target.execute_update("review", approval, result_type=ReviewOutcome)
        assert first.accepted
        assert await refused_update(target, approval, reviewer="chen") == "approval_reused"
        assert refunds_of(world, case_id) == []  # four-eyes: one approval pays nothing

        second = await target.execute_update(
            "review", passkey_review(dong, "dong", case_id, digest), result_type=ReviewOutcome
        )
        assert second.accepted and second.reason == "approve"
        final = await target.result()
        assert final.status is CaseStatus.COMPLETED and final.reason == "refund_settled"

        assert await event_details(target, EventKind.REVIEW_REFUSED) == [
            "chen (claimed) via update: passkey_challenge_mismatch",
            "chen via update: token_for_another_case",
            "chen via update: approval_reused",
        ]
        accepted = await event_details(target, EventKind.REVIEW_ACCEPTED)
        assert accepted == [
            "chen via update: approve (signed), 1 of 2 approvals",
            "dong via update: approve (signed), 2 of 2 approvals",
        ]
        receipt = final.receipt
        assert receipt is not None and receipt.signature is not None
        claims = verify_receipt(receipt.signature, demo_keys.public_keys())
        chens = verify_approval_token(approval.approval_token, load_directory(directory_location(world.state_dir)))
        assert claims.approval_jti == chens.jti and chens.jti.startswith("passkey-")
        assert (claims.case_id, claims.order_id, claims.digest, claims.amount_cents) == (
            case_id,
            "QH-1001",
            digest,
            12900,
        )
        assert refunds_of(world, case_id) == [("QH-1001", 12900)]

        with pytest.raises(RPCError):  # the case has ended: the envelope reaches nothing any more
            await target.execute_update("review", approval, result_type=ReviewOutcome)
        assert refunds_of(world, case_id) == [("QH-1001", 12900)]
        assert refunds_of(world, other_view.case_id) == []

        verified = await starter_verify(world, temporal_server.address, case_id)
        assert verified.returncode == ExitCode.DECIDED, verified.stdout + verified.stderr
        assert "chain verified" in verified.stdout, verified.stdout
        assert "passkey1." not in verified.stdout + verified.stderr  # token ids only, never the envelope
        await other.terminate("test done")

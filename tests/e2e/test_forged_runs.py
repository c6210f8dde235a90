"""Runs a namespace writer starts by hand: a forged carried state, a copy of a decided case, a replayed
applicant token, an input outside the contract. Each is refused and recorded, shows nothing, and pays
nothing, also when its approval is sent straight to the commerce server; ``verify`` names the link.

Real parts throughout: the production worker, a real Temporal dev server, the commerce MCP server over
stdio on a seeded SQLite ledger, and ``starter.py verify`` as a subprocess. The forgeries are what a
client with ``temporal workflow start`` rights can send: any start input, any workflow id, any id
reuse policy.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from case_history.trail import local_activity, trail_from_history
from case_worker import commerce_gateway
from cli.exit_codes import ExitCode
from contracts.case import CaseStatus, CaseView, Decision, Phase
from contracts.case_input import CaseInput, CaseState, Lifecycle
from contracts.commerce import RefundApproval, RefundProposal
from contracts.errors import SupportError
from contracts.model_io import ComposedAnswer, NextAction, Plan
from contracts.names import CASE_INPUT_REFUSED, WORKFLOW_NAME, EventKind, QueryName, workflow_id
from keystore import demo_identity
from tests.case_world import CaseWorld, event_details
from tests.credentials_support import signed_review

ROOT = Path(__file__).resolve().parents[2]
ALICE, BOB = demo_identity("alice"), demo_identity("bob")
REFUSED_WITHIN_SECONDS = 15


# --- what a namespace writer sends ---------------------------------------------------------------


def hand_made_carried(view: CaseView, proposal: RefundProposal) -> CaseState:
    """A waiting case's carried state, written by hand from what a case view shows."""
    assert view.quote is not None and view.intent is not None
    return CaseState(
        continued=1,
        lifecycle=Lifecycle(phase=Phase.WAITING_APPROVAL),
        budgets=view.budgets,
        plan=Plan(intent=view.intent, order_id=proposal.order_id, action_requested=True, queries=[], milestones=[]),
        quote=view.quote,
        answer=ComposedAnswer(
            answer="Approved as shown.", citations=view.citations, next_action=NextAction.PROPOSE_REFUND
        ),
        answer_admitted=True,
        proposal=proposal,
        digest=proposal.digest(),
    )


async def start_by_hand(world: CaseWorld, case: CaseInput | dict[str, Any], run_workflow_id: str) -> WorkflowHandle:
    """``temporal workflow start`` with any input, any id, and a reuse policy that allows a closed id."""
    return await world.client.start_workflow(
        WORKFLOW_NAME,
        case,
        id=run_workflow_id,
        task_queue=world.task_queue,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        result_type=CaseView,
    )


async def refused_at_once(handle: WorkflowHandle) -> ApplicationError:
    """The run ends failed within seconds, as ``case_input_refused``; the failure is its recorded reason."""
    began = time.monotonic()
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), REFUSED_WITHIN_SECONDS)
    assert time.monotonic() - began < REFUSED_WITHIN_SECONDS
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == CASE_INPUT_REFUSED, cause
    assert cause.non_retryable
    assert (await handle.describe()).status is WorkflowExecutionStatus.FAILED
    return cause


async def assert_read_and_showed_nothing(handle: WorkflowHandle) -> None:
    """No activity ran (nothing was read or written), and no query shows a case or a proposal."""
    history = await handle.fetch_history()
    scheduled = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]
    assert scheduled == [] and [local_activity(e) for e in history.events if local_activity(e)] == []
    for query in (QueryName.STATUS, QueryName.PROPOSAL):
        with pytest.raises(Exception, match=CASE_INPUT_REFUSED):
            await handle.query(query)


async def pay_straight(world: CaseWorld, approval: RefundApproval) -> SupportError:
    """Send an approval straight to the commerce server, as the worker's own settlement would; return its
    refusal (a payment fails the test)."""
    pool = commerce_gateway(world.state_dir)
    try:
        receipt = await pool.call(
            demo_identity(approval.proposal.applicant),
            "execute_refund",
            {"approval": approval.model_dump(mode="json")},
            case_id=approval.proposal.case_id,
        )
    except SupportError as refused:
        return refused
    finally:
        await pool.aclose()
    raise AssertionError(f"the commerce server paid {receipt}")


def approval_of(
    proposal: RefundProposal, *, applicant_token: str | None, decision: Decision = Decision.APPROVE
) -> RefundApproval:
    """chen's signed approval of exactly ``proposal``, as a reviewer shown it would sign it."""
    digest = proposal.digest()
    token = signed_review("chen", proposal.case_id, digest, decision).approval_token
    return RefundApproval(
        approval_id=f"APR-{digest[:32]}",
        proposal=proposal,
        digest=digest,
        reviewer="chen",
        approved_at=proposal.created_at,
        approval_token=token,
        applicant_token=applicant_token,
    )


async def waiting_refund(
    world: CaseWorld, question: str, *, profile: str = "alice", ttl: int = 900
) -> tuple[WorkflowHandle, CaseView]:
    handle = await world.start(question, profile=profile, ttl=ttl)
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.proposal is not None, view.reason
    return handle, view


async def started_input(handle: WorkflowHandle) -> CaseInput:
    case = trail_from_history(await handle.fetch_history()).case.value
    assert case is not None and case.applicant_token
    return case


async def verify(world: CaseWorld, temporal_server: Any, case_id: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_server.address, "SUPPORT_TASK_QUEUE": world.task_queue}
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(world.state_dir), "--profile", "chen"]
    return await asyncio.to_thread(
        subprocess.run, [*command, "verify", case_id], capture_output=True, text=True, timeout=120, env=env
    )


# --- A1: a hand-made carried state ---------------------------------------------------------------


async def forged_case_of(world: CaseWorld) -> tuple[CaseInput, CaseView]:
    """Bob's real waiting refund, and a hand-made carried state of it under a fresh case id, as a namespace
    writer who read the case's history can write."""
    _, bobs = await waiting_refund(world, "Please refund QH-2001", profile="bob")
    assert bobs.proposal is not None
    forged_id = f"forged{uuid.uuid4().hex[:8]}"
    proposal = bobs.proposal.model_copy(update={"case_id": forged_id})
    forged = CaseInput(
        case_id=forged_id,
        question="Please refund QH-2001",
        language=bobs.language,
        applicant=BOB,
        carried=hand_made_carried(bobs, proposal),
    )
    return forged, bobs


async def test_a_start_with_a_hand_made_carried_state_is_refused_at_once_and_pays_nothing(world: CaseWorld) -> None:
    forged, bobs = await forged_case_of(world)
    assert forged.carried is not None and forged.carried.proposal is not None
    forged_id, proposal = forged.case_id, forged.carried.proposal
    handle = await start_by_hand(world, forged, workflow_id(forged_id))

    cause = await refused_at_once(handle)
    assert cause.message.startswith("carried_state_not_continued: "), cause.message
    await assert_read_and_showed_nothing(handle)
    with pytest.raises(RPCError, match="already completed"):  # the run has ended: no review reaches it
        await handle.execute_update("review", signed_review("chen", forged_id, proposal.digest()))

    # Had chen been shown it and signed, the commerce server still pays no case that no applicant token
    # stands behind, nor one whose token is another case's.
    no_token = await pay_straight(world, approval_of(proposal, applicant_token=None))
    bobs_token = (await started_input(world.cases.open(bobs.case_id).workflow)).applicant_token
    borrowed = await pay_straight(world, approval_of(proposal, applicant_token=bobs_token))
    assert (no_token.code, borrowed.code) == ("applicant_unverified", "applicant_unverified")
    assert "token_for_another_case" in borrowed.message
    assert world.order("QH-2001").refunded_cents == 0 and world.refund_records() == []


# --- A2: a rejected proposal and its never-accepted approval -------------------------------------


async def test_a_rejected_proposal_is_closed_and_its_earlier_unsent_approval_never_pays(world: CaseWorld) -> None:
    handle, view = await waiting_refund(world, "Please refund QH-1002")
    assert view.proposal is not None and view.digest is not None
    unsent = approval_of(view.proposal, applicant_token=(await started_input(handle)).applicant_token)
    rejection = signed_review("chen", view.case_id, view.digest, Decision.REJECT)
    await handle.execute_update("review", rejection)
    final: CaseView = await handle.result()
    assert final.status is CaseStatus.REJECTED
    [closed] = await event_details(handle, EventKind.PROPOSAL_CLOSED)
    assert closed.startswith("closed as rejected at the commerce server"), closed

    # A carried copy of the case, under its own id or another, is refused before it shows anything.
    case = await started_input(handle)
    copy = case.model_copy(update={"carried": hand_made_carried(view, view.proposal)})
    for run_id in (workflow_id(view.case_id), workflow_id(f"{view.case_id}-copy")):
        forged = await start_by_hand(world, copy, run_id)
        cause = await refused_at_once(forged)
        assert cause.message.startswith("carried_state_not_continued: "), cause.message
        await assert_read_and_showed_nothing(forged)

    # The approval chen signed and never sent, presented straight to the commerce server: refused.
    refused = await pay_straight(world, unsent)
    assert refused.code == "case_closed_unpaid" and "closed as rejected" in refused.message
    assert world.order("QH-1002").refunded_cents == 0 and world.refund_records() == []


async def test_an_expired_proposal_is_closed_and_an_approval_signed_in_time_never_pays(world: CaseWorld) -> None:
    handle, view = await waiting_refund(world, "Please refund QH-1002", ttl=3)
    assert view.proposal is not None
    in_time = approval_of(view.proposal, applicant_token=(await started_input(handle)).applicant_token)
    final: CaseView = await handle.result()
    assert final.status is CaseStatus.EXPIRED
    [closed] = await event_details(handle, EventKind.PROPOSAL_CLOSED)
    assert closed.startswith("closed as expired"), closed
    refused = await pay_straight(world, in_time)
    assert refused.code == "case_closed_unpaid" and "closed as expired" in refused.message
    assert world.order("QH-1002").refunded_cents == 0


# --- A3: a new run of an ended case ----------------------------------------------------------------


async def test_a_new_run_of_a_paid_case_is_refused_flagged_by_verify_and_pays_nothing(
    world: CaseWorld, temporal_server: Any
) -> None:
    handle, view = await waiting_refund(world, "Please refund QH-1001 and explain the amount and the policy")
    assert view.digest is not None
    await handle.execute_update("review", signed_review("chen", view.case_id, view.digest))
    paid: CaseView = await handle.result()
    assert paid.status is CaseStatus.COMPLETED and paid.receipt is not None
    case = await started_input(handle)
    ok = await verify(world, temporal_server, view.case_id)
    assert ok.returncode == ExitCode.DECIDED, ok.stdout + ok.stderr

    # The captured applicant token and a forged carried state proposing another order (QH-1002).
    _, other = await waiting_refund(world, "Please refund QH-1002")
    assert other.proposal is not None
    proposal = other.proposal.model_copy(update={"case_id": view.case_id})
    forged = case.model_copy(
        update={"question": "Please refund QH-1002", "carried": hand_made_carried(other, proposal)}
    )
    run = await start_by_hand(world, forged, workflow_id(view.case_id))
    cause = await refused_at_once(run)
    assert cause.message.startswith("carried_state_not_continued: "), cause.message
    await assert_read_and_showed_nothing(run)

    broken = await verify(world, temporal_server, view.case_id)
    assert broken.returncode == ExitCode.CHAIN_BROKEN, broken.stdout + broken.stderr
    assert "the applicant token link is broken: the case's first run was started with a carried state" in broken.stderr
    assert "chain verified" not in broken.stdout

    refused = await pay_straight(world, approval_of(proposal, applicant_token=case.applicant_token))
    assert refused.code == "case_already_paid", refused
    assert world.order("QH-1002").refunded_cents == 0 and len(world.refund_records()) == 1


async def test_a_replayed_applicant_token_starts_nothing_and_is_named_by_verify(
    world: CaseWorld, temporal_server: Any
) -> None:
    handle, view = await waiting_refund(world, "Please refund QH-1001 and explain the amount and the policy")
    assert view.digest is not None
    await handle.execute_update("review", signed_review("chen", view.case_id, view.digest))
    assert (await handle.result()).status is CaseStatus.COMPLETED
    first_run = (await handle.describe()).run_id
    case = await started_input(handle)

    # Within the token's 5 minutes, a fresh run of the same workflow id with the captured token: the case
    # id had an earlier run, so the applicant check refuses it and the run reads nothing.
    replay = await start_by_hand(
        world, case.model_copy(update={"question": "Please refund QH-1002"}), workflow_id(view.case_id)
    )
    replayed: CaseView = await replay.result()
    assert (replayed.status, replayed.reason) == (CaseStatus.FAILED, "applicant_unverified:case_id_reused")
    assert (replayed.order_id, replayed.quote, replayed.proposal) == (None, None, None)

    broken = await verify(world, temporal_server, view.case_id)
    assert broken.returncode == ExitCode.CHAIN_BROKEN, broken.stdout + broken.stderr
    assert f"replayed: the applicant token was issued for run {first_run}" in broken.stderr
    assert world.order("QH-1002").refunded_cents == 0 and len(world.refund_records()) == 1


# --- A7: an input outside the contract -----------------------------------------------------------


async def test_a_case_id_outside_its_pattern_ends_failed_within_seconds(world: CaseWorld) -> None:
    case = {
        "case_id": "../elsewhere",
        "question": "Please refund QH-1001",
        "language": "en",
        "applicant": ALICE.model_dump(mode="json"),
    }
    handle = await start_by_hand(world, case, "case-elsewhere-" + uuid.uuid4().hex[:6])
    cause = await refused_at_once(handle)
    assert cause.message.startswith("case_input_malformed: "), cause.message
    assert "case_id" in cause.message and "../elsewhere" not in cause.message
    await assert_read_and_showed_nothing(handle)

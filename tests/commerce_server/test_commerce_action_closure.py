"""``close_action_proposal`` at the commerce service, on both databases: once a case's action proposal is
closed (rejected, expired or withdrawn), agreements signed in time execute nothing of the case, through
either path for a refund; an executed proposal cannot be closed, and only the proposal's own customer
closes it."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from threading import Barrier

import pytest
from sqlalchemy import Engine
from sqlmodel import Session

from commerce_server.action_records import ExecutionState
from commerce_server.db import ActionExecutionRow, CaseDecisionRow
from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ActionClosure, ActionExecution, ActionProposal, ActionRequest
from contracts.commerce import ProposalOutcome, RefundApproval
from contracts.errors import SupportError
from tests.commerce_server.support_actions import ActionWorld, action_world
from tests.conftest import DemoKeys

MakeApproval = Callable[..., RefundApproval]


@pytest.fixture
def world(commerce_engine: Engine, demo_keys: DemoKeys, tmp_path: Path) -> ActionWorld:
    allowed = action_world(commerce_engine, demo_keys, tmp_path)
    allowed.allow()
    allowed.allow(kind=ActionKind.REFUND_ORDER)
    return allowed


def refusal(call: Callable[[], object]) -> SupportError:
    with pytest.raises(SupportError) as caught:
        call()
    return caught.value


def closure(proposal: ActionProposal, outcome: ProposalOutcome = ProposalOutcome.REJECTED) -> ActionClosure:
    return ActionClosure(proposal_id=proposal.proposal_id, digest=proposal.digest, outcome=outcome)


@pytest.mark.parametrize("outcome", list(ProposalOutcome))
def test_a_closed_proposal_executes_nothing_whatever_agreements_come(
    world: ActionWorld, outcome: ProposalOutcome
) -> None:
    proposal = world.preview()
    before = world.order()

    closed = world.service().close_action_proposal(closure(proposal, outcome))
    again = world.service().close_action_proposal(closure(proposal, ProposalOutcome.EXPIRED))
    refused = refusal(lambda: world.service().execute_action(world.execution(proposal)))

    assert (closed.case_id, closed.outcome, closed.digest) == (proposal.case_id, outcome, proposal.digest)
    assert again == closed  # the first closure stays
    assert refused.code == "case_closed_unpaid" and outcome.value in refused.message
    assert world.order() == before and before[0] == "processing"


def test_an_executed_proposal_cannot_be_closed(world: ActionWorld) -> None:
    proposal = world.preview()
    execution = world.execution(proposal)
    receipt = world.service().execute_action(execution)

    refused = refusal(lambda: world.service().close_action_proposal(closure(proposal)))

    assert refused.code == "action_executed"
    assert world.service().execute_action(execution).receipt_id == receipt.receipt_id  # a replay, unaffected


def test_only_the_proposals_customer_closes_it_with_its_digest(world: ActionWorld) -> None:
    proposal = world.preview()

    by_bob = refusal(lambda: world.service("bob").close_action_proposal(closure(proposal)))
    other_digest = closure(proposal).model_copy(update={"digest": "0" * 64})
    wrong_digest = refusal(lambda: world.service().close_action_proposal(other_digest))

    assert (by_bob.code, wrong_digest.code) == ("proposal_not_accessible", "invalid_argument")
    assert world.service().execute_action(world.execution(proposal)).refund_cents > 0


def test_a_closed_refund_case_is_paid_neither_as_an_action_nor_by_execute_refund(
    world: ActionWorld, refund_approval: MakeApproval
) -> None:
    proposal = world.preview("QH-1009", kind=ActionKind.REFUND_ORDER)
    world.service().close_action_proposal(closure(proposal, ProposalOutcome.EXPIRED))
    approval = refund_approval(world.service().get_order("QH-1001"), case_id=proposal.case_id)

    as_action = refusal(lambda: world.service().execute_action(world.execution(proposal)))
    as_refund = refusal(lambda: world.service().execute_refund(approval))

    assert (as_action.code, as_refund.code) == ("case_closed_unpaid", "case_closed_unpaid")
    assert world.service().get_order("QH-1009").refunded_cents == 4900
    assert world.service().get_order("QH-1001").refunded_cents == 0


RACE_ROUNDS = 6
TRANSIENT = {"database_unavailable", "request_in_flight"}


def test_a_closure_and_an_execution_racing_for_one_case_never_both_stand(world: ActionWorld) -> None:
    """Round after round, a closure and a fully agreed execution of the same fresh proposal start at once
    (threads behind a barrier, each its own session). A side refused as transient tries once more after the
    other ended. Exactly one stands: executed (the closure refused ``action_executed``) or closed (the
    execution refused ``case_closed_unpaid``), and the ledger agrees."""
    world.allow(kind=ActionKind.CHANGE_ORDER_ADDRESS, rule=ActionRule(reviewers=0, max_per_customer_per_day=100))
    current = world.address()
    assert current is not None
    for number in range(RACE_ROUNDS):
        moved = current.model_copy(update={"line1": f"{number + 1} Race Street"})
        request = ActionRequest(
            kind=ActionKind.CHANGE_ORDER_ADDRESS, case_id=f"case-race-{number}", order_id="QH-1006", address=moved
        )
        proposal = world.service().preview_action(request)
        execution = world.execution(proposal, key=f"race-{number}", approval_tokens=())
        start = Barrier(2)
        with ThreadPoolExecutor(max_workers=2) as pool:
            closing = pool.submit(close_now, world, proposal, start)
            executing = pool.submit(execute_now, world, execution, start)
            closed, executed = closing.result(), executing.result()
        if closed in TRANSIENT:
            closed = close_now(world, proposal)
        if executed in TRANSIENT:
            executed = execute_now(world, execution)
        assert (closed, executed) in {("action_executed", "executed"), ("rejected", "case_closed_unpaid")}, (
            number,
            closed,
            executed,
        )
        stood = ledger(world.engine, proposal)
        assert stood == ("executed" if executed == "executed" else "rejected"), (number, stood)
        if executed == "executed":
            current = moved
    assert world.address() == current


def close_now(world: ActionWorld, proposal: ActionProposal, start: Barrier | None = None) -> str:
    """Close ``proposal`` (once every party is at ``start``): the outcome, or the refusal's code."""
    service = world.service()
    if start is not None:
        start.wait()
    try:
        return service.close_action_proposal(closure(proposal)).outcome.value
    except SupportError as refused:
        return refused.code


def execute_now(world: ActionWorld, execution: ActionExecution, start: Barrier | None = None) -> str:
    """Execute (once every party is at ``start``): ``executed``, or the refusal's code."""
    service = world.service()
    if start is not None:
        start.wait()
    try:
        service.execute_action(execution)
    except SupportError as refused:
        return refused.code
    return "executed"


def ledger(engine: Engine, proposal: ActionProposal) -> str:
    """What the ledger holds for the proposal: ``executed``, ``rejected`` (closed), or both (never allowed)."""
    with Session(engine) as session:
        run = session.get(ActionExecutionRow, proposal.proposal_id)
        decided = session.get(CaseDecisionRow, proposal.case_id)
        done = run is not None and run.state == ExecutionState.DONE.value
        if done and decided is not None:
            return f"both: executed and {decided.outcome}"
        return "executed" if done else decided.outcome if decided is not None else "neither"

"""The check of ``close_action_proposal``: once a case's action proposal is closed (here: rejected), an
execution with every agreement it asks for, signed in time, executes nothing. The kit closes a fresh
proposal of the first still-processing cancellable order, so it changes nothing a later check needs."""

from __future__ import annotations

from commerce_contract.checks_actions import (
    agreement_for,
    cancellable,
    execution_of,
    previewed,
    refused_unchanged,
    required_rule,
)
from commerce_contract.checks_refunds import Check
from commerce_contract.context import CheckFailed, Run
from contracts.actions import ActionClosure
from contracts.commerce import ProposalClosed, ProposalOutcome
from contracts.errors import CommerceErrorCode
from contracts.tools import ToolName


async def action_after_case_closed(run: Run) -> str:
    required_rule(run)
    order = await cancellable(run)
    proposal = await previewed(run, order.order_id)
    closure = ActionClosure(proposal_id=proposal.proposal_id, digest=proposal.digest, outcome=ProposalOutcome.REJECTED)
    answer = await run.answer(
        ToolName.CLOSE_ACTION_PROPOSAL, {"closure": closure.model_dump(mode="json")}, case_id=proposal.case_id
    )
    closed = ProposalClosed.model_validate(answer)
    if (closed.case_id, closed.outcome) != (proposal.case_id, ProposalOutcome.REJECTED):
        raise CheckFailed(f"closing answered {closed}, not the case's rejection")
    execution = execution_of(proposal, **agreement_for(run, proposal))
    what = "an execution of a closed proposal, with every agreement signed in time"
    return await refused_unchanged(run, proposal, execution, CommerceErrorCode.CASE_CLOSED_UNPAID, what)


def closure_checks() -> list[Check]:
    return [action_after_case_closed]

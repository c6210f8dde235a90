"""``close_action_proposal``: a case's action proposal ended unagreed, and nothing agreed to it executes.

The customer's confirmation and a reviewer's approval stay valid for their settle window, so a proposal
that a reviewer rejected, that expired, or that the customer withdrew could otherwise still be executed by
whoever holds agreements signed in time: a hand-made run of the workflow, a replayed history, a worker
acting on its own. The workflow that decides the case closes it here; from then on ``execute_action``
refuses every proposal of the case (``case_closed_unpaid``), as ``execute_refund`` refuses a refund case
closed the same way (:mod:`commerce_server.case_decisions`). A proposal that was executed cannot be closed
(``action_executed``). Closing only ever takes an action away, so the worker's case-scoped access suffices.
"""

from __future__ import annotations

from sqlmodel import Session

from commerce_server.action_execution import own_proposal
from commerce_server.action_records import ExecutionState, lock_case
from commerce_server.case_decisions import record_closure
from commerce_server.db import ActionExecutionRow
from contracts.actions import ActionClosure
from contracts.commerce import ProposalClosed
from contracts.errors import CommerceErrorCode, error_from_code
from contracts.identity import Identity


def close_action_proposal(
    session: Session, identity: Identity, closure: ActionClosure, *, token_case: str | None
) -> ProposalClosed:
    """Record that the caller's proposal ``closure`` names ended as ``closure.outcome`` (idempotent: the first
    closure of the case stays)."""
    proposal = own_proposal(session, identity, closure.proposal_id, token_case=token_case)
    if closure.digest != proposal.digest:
        raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, "The digest does not match the proposal.")
    lock_case(session, proposal.case_id)  # an execution of the case holding it commits first
    _refuse_if_executed(session, closure.proposal_id)
    return record_closure(
        session,
        identity,
        proposal.case_id,
        digest=proposal.digest,
        outcome=closure.outcome,
        # Again with the closure written (SQLite then holds the write lock): an execution that committed
        # meanwhile stands, and the closure is not kept.
        before_commit=lambda: _refuse_if_executed(session, closure.proposal_id),
    )


def _refuse_if_executed(session: Session, proposal_id: str) -> None:
    executed = session.get(ActionExecutionRow, proposal_id, populate_existing=True)  # never the cached row
    if executed is not None and executed.state == ExecutionState.DONE.value:
        raise error_from_code(
            CommerceErrorCode.ACTION_EXECUTED, f"Proposal {proposal_id} was executed; it can no longer be closed."
        )

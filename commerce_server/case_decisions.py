"""The one decision this ledger holds per case: its refund paid, or its proposal closed unpaid (rejected, expired
or withdrawn).

A reviewer may sign an approval and never send it, or send a rejection afterwards; the token stays
valid for its settle window. The workflow that decides the case closes a rejected or expired proposal
here (``close_refund_proposal``), and from then on every approval of that case is refused, whoever
presents it: a hand-made run of the workflow, a replayed history, a worker acting on its own. A case is
paid at most once: the refund's transaction writes the ``paid`` decision, so a second proposal of the
same case is refused too. Closing only ever takes a payment away, so the worker's case-scoped access
(the stdio session or the bearer token) suffices; no reviewer signature is needed for it.

An action's proposal is closed the same way (``close_action_proposal``): once closed, no agreement to any
action of the case executes (:func:`refuse_if_closed`); a refund as an action (``refund_order``) also writes
the ``paid`` decision, so it is paid once whichever way the case goes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from commerce_server.db import CaseDecisionRow
from contracts.commerce import ProposalClosed, ProposalClosure, ProposalOutcome
from contracts.errors import CommerceErrorCode, SupportError, error_from_code
from contracts.identity import Identity

PAID = "paid"


def refuse_if_decided(session: Session, case_id: str, *, approval_id: str) -> None:
    """Refuse to pay an approval of ``case_id`` when the ledger already holds its decision; a case paid
    by this very ``approval_id`` passes (the caller replays that refund's receipt)."""
    decided = session.get(CaseDecisionRow, case_id)
    if decided is None or (decided.outcome == PAID and decided.approval_id == approval_id):
        return
    when = decided.decided_at.isoformat(timespec="seconds")
    if decided.outcome == PAID:
        raise error_from_code(
            CommerceErrorCode.CASE_ALREADY_PAID,
            f"Case {case_id} was already paid at {when}; a case is paid once, on one proposal.",
        )
    raise _closed_unpaid(decided, "no approval of it is paid")


def paid_decision(case_id: str, *, identity: Identity, digest: str, approval_id: str, at: datetime) -> CaseDecisionRow:
    """The ``paid`` decision a refund's transaction writes beside its idempotency record."""
    return CaseDecisionRow(
        case_id=case_id,
        tenant=identity.tenant,
        customer=identity.subject,
        outcome=PAID,
        digest=digest,
        approval_id=approval_id,
        decided_at=at,
    )


def close_proposal(session: Session, identity: Identity, closure: ProposalClosure) -> ProposalClosed:
    """Record that the case's refund proposal was rejected or expired (idempotent: the first closure stays)."""
    proposal = closure.proposal
    if closure.digest != proposal.digest():
        raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, "The digest does not match the proposal.")
    if (proposal.applicant, proposal.tenant) != (identity.subject, identity.tenant):
        raise error_from_code(CommerceErrorCode.APPROVAL_INVALID, "The proposal was made for another customer.")
    return record_closure(session, identity, proposal.case_id, digest=closure.digest, outcome=closure.outcome)


def record_closure(
    session: Session,
    identity: Identity,
    case_id: str,
    *,
    digest: str,
    outcome: ProposalOutcome,
    before_commit: Callable[[], None] | None = None,
) -> ProposalClosed:
    """Write ``case_id``'s closure as ``outcome`` and commit it, or answer the decision it holds already (the
    first closure stays; a case paid is refused). ``before_commit`` runs with the row written and not yet
    committed (a refusal it raises leaves nothing written)."""
    existing = session.get(CaseDecisionRow, case_id)
    if existing is None:
        row = CaseDecisionRow(
            case_id=case_id,
            tenant=identity.tenant,
            customer=identity.subject,
            outcome=outcome.value,
            digest=digest,
            decided_at=datetime.now(UTC),
        )
        session.add(row)
        try:
            session.flush()
            if before_commit is not None:
                before_commit()
            session.commit()
            return _closed(row)
        except IntegrityError:
            session.rollback()  # a twin closed it, or the refund's transaction paid it, meanwhile
            existing = session.get(CaseDecisionRow, case_id)
            assert existing is not None
    if (existing.tenant, existing.customer) != (identity.tenant, identity.subject):
        raise error_from_code(CommerceErrorCode.APPROVAL_INVALID, "This case belongs to another customer.")
    if existing.outcome == PAID:
        raise error_from_code(
            CommerceErrorCode.CASE_ALREADY_PAID, f"Case {case_id} was already paid; it cannot be closed."
        )
    return _closed(existing)


def refuse_if_closed(session: Session, case_id: str) -> None:
    """Refuse to execute an action of ``case_id`` once its proposal was closed unagreed (rejected, expired or
    withdrawn: ``close_action_proposal``)."""
    decided = session.get(CaseDecisionRow, case_id)
    if decided is not None and decided.outcome != PAID:
        raise _closed_unpaid(decided, "no agreement to it executes")


def _closed_unpaid(decided: CaseDecisionRow, consequence: str) -> SupportError:
    when = decided.decided_at.isoformat(timespec="seconds")
    return error_from_code(
        CommerceErrorCode.CASE_CLOSED_UNPAID,
        f"Case {decided.case_id}'s proposal was closed as {decided.outcome} at {when}; {consequence}.",
    )


def _closed(row: CaseDecisionRow) -> ProposalClosed:
    return ProposalClosed(
        case_id=row.case_id, digest=row.digest, outcome=ProposalOutcome(row.outcome), closed_at=row.decided_at
    )

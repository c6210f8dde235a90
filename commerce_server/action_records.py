"""The records behind the action contract's promises: the caps a rule sets, and the idempotency claim.

An execution is claimed before any check (an ``in_flight`` row, committed) so that a twin request sees
it: the same key and body while it runs is ``request_in_flight``, with a retry-after; once done, the
same key and body get the stored receipt again, marked a replay; another body under the key, or under
the proposal, is ``idempotency_conflict``. A refused request deletes its claim: refusals are not cached.
A claim left by a process that died mid-request is taken over after :data:`IN_FLIGHT_LEASE`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from commerce_server.db import ActionExecutionRow, ActionProposalRow
from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ActionExecution, ActionReceipt
from contracts.errors import CommerceErrorCode, TransientError, error_from_code
from contracts.identity import Identity

IN_FLIGHT_LEASE = timedelta(seconds=30)
RETRY_AFTER_SECONDS = 1.0
DAY = timedelta(days=1)
RUNNING_TOTAL_PERIOD = timedelta(days=30)


class ExecutionState(StrEnum):
    IN_FLIGHT = "in_flight"
    DONE = "done"


def check_caps(
    session: Session, identity: Identity, kind: ActionKind, rule: ActionRule, *, adding_cents: int, now: datetime
) -> None:
    """``action_cap_reached`` when one more action of ``kind`` moving ``adding_cents`` would pass the
    rule's count over the last 24 hours or its running total over the last 30 days."""
    if rule.max_per_customer_per_day is None and rule.max_cents_per_customer_per_30_days is None:
        return
    passed = rule.cap_passed(
        kind,
        count_today=_executed(session, identity, kind, since=now - DAY, total=False),
        total_30_days=_executed(session, identity, kind, since=now - RUNNING_TOTAL_PERIOD, total=True),
        adding_cents=adding_cents,
    )
    if passed is not None:
        raise error_from_code(CommerceErrorCode.ACTION_CAP_REACHED, passed)


def _executed(session: Session, identity: Identity, kind: ActionKind, *, since: datetime, total: bool) -> int:
    measure = func.coalesce(func.sum(ActionExecutionRow.refund_cents), 0) if total else func.count()
    query = select(measure).where(
        ActionExecutionRow.tenant == identity.tenant,
        ActionExecutionRow.customer == identity.subject,
        ActionExecutionRow.kind == kind.value,
        ActionExecutionRow.state == ExecutionState.DONE.value,
        col(ActionExecutionRow.executed_at) >= since,
    )
    return int(session.exec(query).one())


def claim_execution(
    session: Session, identity: Identity, execution: ActionExecution, *, kind: ActionKind, now: datetime
) -> ActionReceipt | None:
    """Claim ``execution`` (committed), or answer it from the record: the stored receipt for a replay
    (None means the claim is this request's to complete), a conflict or a request in flight."""
    for _ in range(2):
        existing = _existing(session, identity, execution)
        if existing is None:
            session.add(
                ActionExecutionRow(
                    proposal_id=execution.proposal_id,
                    tenant=identity.tenant,
                    customer=identity.subject,
                    kind=kind.value,
                    idempotency_key=execution.idempotency_key,
                    body_digest=execution.body_digest(),
                    state=ExecutionState.IN_FLIGHT.value,
                    claimed_at=now,
                )
            )
            try:
                session.commit()
                return None
            except IntegrityError:  # a twin claimed it between the read and the write: answer from its record
                session.rollback()
                continue
        if existing.body_digest != execution.body_digest() or existing.proposal_id != execution.proposal_id:
            raise error_from_code(
                CommerceErrorCode.IDEMPOTENCY_CONFLICT,
                "This proposal or idempotency key was already used with a different request.",
            )
        if existing.state == ExecutionState.DONE.value and existing.receipt is not None:
            return ActionReceipt.model_validate_json(existing.receipt).model_copy(update={"replay": True})
        if now - existing.claimed_at < IN_FLIGHT_LEASE:
            raise TransientError(
                CommerceErrorCode.REQUEST_IN_FLIGHT,
                "The same request is being executed; retry after a moment.",
                retry_after_seconds=RETRY_AFTER_SECONDS,
            )
        existing.claimed_at = now  # its process died mid-request: this request takes the claim over
        session.add(existing)
        session.commit()
        return None
    raise TransientError(
        CommerceErrorCode.REQUEST_IN_FLIGHT,
        "The same request is being executed; retry after a moment.",
        retry_after_seconds=RETRY_AFTER_SECONDS,
    )


def lock_case(session: Session, case_id: str) -> None:
    """Hold every proposal row of ``case_id`` until the transaction ends (PostgreSQL ``SELECT ... FOR UPDATE``;
    SQLite serializes writers with its database lock instead). An execution and a closure of one case each
    take it before they write, so one of them commits before the other reads what it re-checks."""
    query = select(ActionProposalRow.proposal_id).where(ActionProposalRow.case_id == case_id).with_for_update()
    session.exec(query).all()


def release_claim(session: Session, proposal_id: str) -> None:
    """Forget an in-flight claim whose request was refused (a completed execution is never removed)."""
    session.rollback()
    row = session.get(ActionExecutionRow, proposal_id)
    if row is not None and row.state == ExecutionState.IN_FLIGHT.value:
        session.delete(row)
        session.commit()


def _existing(session: Session, identity: Identity, execution: ActionExecution) -> ActionExecutionRow | None:
    by_proposal = session.get(ActionExecutionRow, execution.proposal_id)
    if by_proposal is not None:
        return by_proposal
    return session.exec(
        select(ActionExecutionRow).where(
            ActionExecutionRow.tenant == identity.tenant,
            ActionExecutionRow.customer == identity.subject,
            ActionExecutionRow.idempotency_key == execution.idempotency_key,
        )
    ).first()

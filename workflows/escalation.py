"""A pending proposal nearing its expiry undecided: the tenant's escalation reviewer asked, or the moment
noted (workflow code, no I/O).

When a pending proposal (a refund, or an action not yet agreed) nears its expiry, :data:`contracts.case.
NEAR_EXPIRY` or a third of a shorter proposal's time before it, the wait wakes. A tenant that names an
escalation reviewer has them asked: the escalation is recorded, counted and shown (the case view's
``escalated_to``, which the console marks in that reviewer's inbox). A tenant that names nobody has the
moment noted (``near_expiry`` event, ``support_proposals_near_expiry_total``, ``near_expiry_at``), in cases
that took :data:`NEAR_EXPIRY_PATCH`: the v0.12 histories recorded before it wait with one timer, and
replay so. Either way the proposal still closes at its expiry if nobody decides.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import Enum

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.case import NEAR_EXPIRY
    from contracts.case_input import CaseState
    from contracts.names import EventKind
    from workflows import case_metrics


NEAR_EXPIRY_PATCH = "near-expiry-note"
"""The patch a case takes to wake near its proposal's expiry when its tenant names no escalation reviewer."""


class Wake(Enum):
    """Why a wait for a pending proposal's decision wakes."""

    ESCALATE = "escalate"
    NOTE_NEAR_EXPIRY = "note near expiry"
    EXPIRE = "expire"


def _near_expiry(created_at: datetime, expires_at: datetime) -> datetime:
    return expires_at - min(NEAR_EXPIRY, (expires_at - created_at) / 3)


def next_wake(s: CaseState, created_at: datetime, expires_at: datetime) -> tuple[datetime, Wake]:
    """When a wait for the pending proposal's decision wakes, and why: to ask the escalation reviewer, to
    note the proposal nearing its expiry, or its expiry."""
    near = _near_expiry(created_at, expires_at)
    if s.escalated_to is not None or s.near_expiry_at is not None or s.directory is None or near >= expires_at:
        return expires_at, Wake.EXPIRE
    if s.directory.escalation_reviewer(s.case.applicant.tenant) is not None:
        return near, Wake.ESCALATE
    if workflow.patched(NEAR_EXPIRY_PATCH):
        return near, Wake.NOTE_NEAR_EXPIRY
    return expires_at, Wake.EXPIRE


def timer_summary(wake: Wake, expiry_summary: str) -> str:
    """What the wait's timer is for, as the history shows it: the proposal's own summary (what the Temporal
    UI shows a waiting case by), with what wakes first where the wait wakes before the expiry."""
    if wake is Wake.ESCALATE:
        return f"{expiry_summary}; first {ESCALATION_TIMER_SUMMARY}"
    if wake is Wake.NOTE_NEAR_EXPIRY:
        return f"{expiry_summary}; first {NEAR_EXPIRY_TIMER_SUMMARY}"
    return expiry_summary


def on_near_expiry(
    s: CaseState, wake: Wake, record: Callable[[EventKind, str], None], now: datetime, expires_at: datetime
) -> None:
    """Ask the escalation reviewer, or note the moment: recorded, counted and shown."""
    if wake is Wake.ESCALATE:
        escalate(s, record, now, expires_at)
    else:
        s.near_expiry_at = now
        left = int((expires_at - now).total_seconds())
        record(EventKind.NEAR_EXPIRY, f"undecided, the proposal closes in {left} s; no escalation reviewer named")
    case_metrics.proposal_near_expiry(s)


def escalate(s: CaseState, record: Callable[[EventKind, str], None], now: datetime, expires_at: datetime) -> None:
    """Ask the escalation reviewer: recorded as an event, counted, and shown in the case view."""
    assert s.directory is not None
    reviewer = s.directory.escalation_reviewer(s.case.applicant.tenant)
    assert reviewer is not None
    s.escalated_to = reviewer
    left = int((expires_at - now).total_seconds())
    record(EventKind.ESCALATED, f"{reviewer} asked to decide: the proposal closes undecided in {left} s")
    case_metrics.proposal_escalated(s)


ESCALATION_TIMER_SUMMARY = "ask the escalation reviewer"
NEAR_EXPIRY_TIMER_SUMMARY = "note the proposal nearing its expiry"

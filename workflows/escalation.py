"""Asking the tenant's escalation reviewer before a proposal closes undecided (workflow code, no I/O).

A tenant may name one of its reviewers to be asked when a pending proposal (a refund, or an action not
yet agreed) nears its expiry: when :data:`contracts.case.NEAR_EXPIRY` is left, or a third of a shorter
proposal's time. The wait then wakes at that moment, records the escalation, counts it and shows it
(the case view's ``escalated_to``, which the console marks in that reviewer's inbox); the proposal still
closes at its expiry if nobody decides. A tenant that names nobody waits as before: no timer is added.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.case import NEAR_EXPIRY
    from contracts.case_input import CaseState
    from contracts.names import EventKind
    from workflows import case_metrics


def escalation_at(s: CaseState, created_at: datetime, expires_at: datetime) -> datetime | None:
    """When to ask the tenant's escalation reviewer about the pending proposal (None: nobody is asked,
    or they were already)."""
    if s.escalated_to is not None or s.directory is None:
        return None
    if s.directory.escalation_reviewer(s.case.applicant.tenant) is None:
        return None
    lead = min(NEAR_EXPIRY, (expires_at - created_at) / 3)
    return expires_at - lead


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


def next_wake(s: CaseState, created_at: datetime, expires_at: datetime) -> tuple[datetime, bool]:
    """When a wait for the pending proposal's decision wakes: the moment to escalate it (True), or its
    expiry (False)."""
    ask_at = escalation_at(s, created_at, expires_at)
    if ask_at is not None and ask_at < expires_at:
        return ask_at, True
    return expires_at, False

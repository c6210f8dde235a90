"""The case lifecycle as an explicit transition table.

A case moves through phases (plan, investigate, review, deliver, waiting_approval, settle) and ends
in exactly one terminal status. Any move not listed here raises, so an illegal transition cannot
happen silently.
"""

from __future__ import annotations

from contracts.case import TERMINAL_STATUSES, CaseStatus, Phase

Stage = Phase | CaseStatus

TRANSITIONS: dict[Stage, frozenset[Stage]] = {
    Phase.PLAN: frozenset(
        {Phase.INVESTIGATE, Phase.WAITING_CUSTOMER, CaseStatus.NEEDS_INPUT, CaseStatus.NEEDS_HUMAN, CaseStatus.FAILED}
    ),
    Phase.INVESTIGATE: frozenset(
        {Phase.REVIEW, Phase.WAITING_CUSTOMER, CaseStatus.NEEDS_INPUT, CaseStatus.NEEDS_HUMAN, CaseStatus.FAILED}
    ),
    Phase.REVIEW: frozenset(
        {Phase.DELIVER, Phase.WAITING_CUSTOMER, CaseStatus.NEEDS_INPUT, CaseStatus.NEEDS_HUMAN, CaseStatus.FAILED}
    ),
    Phase.DELIVER: frozenset(
        {
            Phase.WAITING_APPROVAL,
            Phase.WAITING_CUSTOMER,
            CaseStatus.COMPLETED,
            CaseStatus.NEEDS_INPUT,
            CaseStatus.NEEDS_HUMAN,
        }
    ),
    Phase.WAITING_CUSTOMER: frozenset(
        {Phase.PLAN, CaseStatus.NEEDS_INPUT, CaseStatus.NEEDS_HUMAN, CaseStatus.WITHDRAWN, CaseStatus.FAILED}
    ),
    Phase.WAITING_APPROVAL: frozenset({Phase.SETTLE, CaseStatus.REJECTED, CaseStatus.EXPIRED, CaseStatus.WITHDRAWN}),
    Phase.SETTLE: frozenset({CaseStatus.COMPLETED, CaseStatus.NEEDS_HUMAN, CaseStatus.FAILED}),
    **{status: frozenset() for status in TERMINAL_STATUSES},
}


class IllegalTransition(RuntimeError):
    """A bug in the workflow: it tried a move the table does not allow."""


def check_transition(current: Stage, target: Stage) -> Stage:
    """Return ``target`` if the table allows ``current -> target``, else raise.

    Membership is by kind and value: ``Phase.WAITING_APPROVAL`` and ``CaseStatus.WAITING_APPROVAL``
    are equal strings, but only the phase is a legal step after ``deliver``.
    """
    if not any(type(allowed) is type(target) and allowed == target for allowed in TRANSITIONS[current]):
        raise IllegalTransition(f"illegal case transition {current.value} -> {target.value}")
    return target

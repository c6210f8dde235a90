"""One review attempt of a waiting case, as the ``review`` signal and update handlers both take it:
decoded, judged by the approval gate, recorded as an event, counted and logged, and its outcome stated
by code. The handlers add only what is theirs (the directory read before judging, the update's
failure for its caller)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadConverter

from contracts.case import AWAITING_ANOTHER_REVIEWER, ReviewDecision, ReviewOutcome
from contracts.case_input import CaseState
from contracts.credentials import SignedReview
from contracts.names import EventKind, ReviewRefusal
from workflows import case_logs, case_metrics
from workflows.approval_gate import accept_review, approvals_missing, decode_review, judge_review, waiting_for_more

Record = Callable[[EventKind, str], None]


def decoded_review(
    converter: PayloadConverter, payload: Payload, s: CaseState, record: Record, *, via: str
) -> ReviewDecision | SignedReview | None:
    """The review payload, or None after recording why it is not one."""
    review = decode_review(converter, payload)
    if isinstance(review, str):
        record(EventKind.REVIEW_REFUSED, f"malformed payload via {via} {review}")
        case_metrics.approval_refused(s, ReviewRefusal.MALFORMED_PAYLOAD)
        case_logs.review_refused(ReviewRefusal.MALFORMED_PAYLOAD, via=via)
        return None
    return review


def review_attempt(
    s: CaseState,
    review: ReviewDecision | SignedReview,
    record: Record,
    *,
    now: datetime,
    via: str,
    refusal: ReviewRefusal | None = None,
) -> tuple[ReviewOutcome, str]:
    """The outcome of one review attempt (``refusal``: refused before it is judged), and the reviewer's
    name as it claimed (or proved) it."""
    status = s.lifecycle.status
    verdict = judge_review(review, s, now=now, refusal=refusal)
    if verdict.decision is None:
        record(EventKind.REVIEW_REFUSED, f"{verdict.who} via {via}: {verdict.refusal}")
        case_metrics.approval_refused(s, str(verdict.refusal))
        case_logs.review_refused(str(verdict.refusal), via=via)
        return ReviewOutcome(accepted=False, status=status, reason=str(verdict.refusal)), verdict.subject
    text = accept_review(s, verdict, now=now, via=via)
    case_metrics.approval_decided(s, verdict.approval_token, verdict.decision.decision, now)
    record(EventKind.REVIEW_ACCEPTED, text)
    pending = waiting_for_more(s)
    reason = verdict.decision.decision.value + (f" ({pending}; {AWAITING_ANOTHER_REVIEWER})" if pending else "")
    outcome = ReviewOutcome(accepted=True, status=status, reason=reason, approvals_missing=approvals_missing(s))
    return outcome, verdict.subject

"""The review attempts of a case's workflow history: each ``review`` signal or update as its payload
claims or names it (decoded, never verified), the answer an update got, and the case event the workflow
recorded for it. :func:`case_history.audit.audit_from_history` collects them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import HistoryEvent

from case_history.trail import decode, decode_payload, event_time, failure_text, unverified_claims
from contracts.case import CaseEvent, ReviewDecision, ReviewOutcome
from contracts.credentials import SignedReview
from contracts.names import EventKind

CLAIMED = "claimed, unverified; run `starter.py verify` to check signatures"
NAMED = "named, unsigned"
_REVIEW_KINDS = frozenset({EventKind.REVIEW_ACCEPTED, EventKind.REVIEW_REFUSED})
_VIA = re.compile(r" via (signal|update)\b")


@dataclass(frozen=True)
class ReviewAttempt:
    """One ``review`` signal or update, with who it claims or names and what became of it."""

    event_id: int
    at: datetime
    channel: str
    """``signal`` or ``update``."""
    sender: str
    """The Temporal client identity that sent it (free text the client chose)."""
    who: str | None = None
    label: str | None = None
    """:data:`CLAIMED` for a signed approval token, :data:`NAMED` for a plain ReviewDecision."""
    decision: str | None = None
    digest: str | None = None
    note: str | None = None
    token_id: str | None = None
    problem: str | None = None
    """Why the payload is neither kind of review (a malformed attempt)."""
    answer: str | None = None
    """For an update: ``accepted: ...``, ``refused: ...``, ``failed (...): ...`` or None (no answer yet)."""
    recorded: CaseEvent | None = None
    """The case's own ``review_accepted``/``review_refused`` event for this attempt, when recorded."""


def review_attempt(
    event: HistoryEvent, channel: str, sender: str, payloads: list[Payload], signed: bool
) -> ReviewAttempt:
    """The attempt as its payload claims it; a malformed one says why it is not the kind of review this
    case takes (a signed approval in a case with signed credentials, a named decision before)."""
    attempt = ReviewAttempt(event.event_id, event_time(event), channel, sender)
    if not payloads:
        return replace(attempt, problem="no payload")
    signed_review = decode_payload(payloads[0], SignedReview)
    if signed_review.value is not None:
        claims = unverified_claims(signed_review.value.approval_token)
        if claims is None:
            return replace(attempt, label=CLAIMED, problem="the approval token is not a readable token")
        return replace(
            attempt,
            who=str(claims.get("sub", "?")),
            label=CLAIMED,
            decision=str(claims.get("decision", "?")),
            digest=str(claims.get("digest", "")) or None,
            token_id=str(claims.get("jti", "")) or None,
        )
    named = decode_payload(payloads[0], ReviewDecision)
    if named.value is not None:
        decision = named.value
        return replace(
            attempt,
            who=decision.reviewer,
            label=NAMED,
            decision=decision.decision.value,
            digest=decision.digest,
            note=decision.note or None,
        )
    return replace(attempt, problem=f"malformed review payload ({(signed_review if signed else named).problem})")


def update_answer(outcome: Any) -> str:
    """What a completed ``review`` update answered, in a few words."""
    if outcome.HasField("failure"):
        return f"failed ({failure_text(outcome.failure)})"
    answer = decode(outcome.success, ReviewOutcome).value
    if answer is None:
        return "answered (not a review outcome)"
    return f"{'accepted' if answer.accepted else 'refused'}: {answer.reason}"


def paired(reviews: list[ReviewAttempt], events: list[CaseEvent]) -> list[ReviewAttempt]:
    """Each attempt with the case event the workflow recorded for it: per channel, in order (a
    workflow handles one channel's attempts in the order the history lists them)."""
    recorded: dict[str, list[CaseEvent]] = {"signal": [], "update": []}
    for event in events:
        match = _VIA.search(event.detail)
        if event.kind in _REVIEW_KINDS and match:
            recorded[match.group(1)].append(event)
    result = []
    for review in reviews:
        queue = recorded.get(review.channel, [])
        result.append(replace(review, recorded=queue.pop(0)) if queue else review)
    return result

"""The approval gate: who may decide a waiting refund proposal, checked in the workflow.

Pure and deterministic: the workflow passes in the case's facts and ``workflow.now()``. A refusal is
a code from :class:`contracts.names.ReviewRefusal`; the workflow records it and changes nothing.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadConverter

from contracts.case import CaseStatus, ReviewDecision
from contracts.commerce import RefundProposal
from contracts.errors import bounded
from contracts.identity import PROFILES, Identity, Role
from contracts.names import ReviewRefusal


def refuse_review(
    decision: ReviewDecision,
    *,
    status: CaseStatus,
    proposal: RefundProposal | None,
    digest: str | None,
    already_decided: bool,
    applicant: Identity,
    now: datetime,
) -> ReviewRefusal | None:
    """Return why ``decision`` may not decide this case, or None when it may."""
    if status is not CaseStatus.WAITING_APPROVAL or proposal is None:
        return ReviewRefusal.CASE_NOT_WAITING_FOR_REVIEW
    if already_decided:
        return ReviewRefusal.ALREADY_DECIDED
    reviewer = PROFILES.get(decision.reviewer)
    if reviewer is None:
        return ReviewRefusal.UNKNOWN_REVIEWER
    if reviewer.subject == applicant.subject:
        return ReviewRefusal.APPLICANT_CANNOT_REVIEW
    if reviewer.role is not Role.REVIEWER:
        return ReviewRefusal.NOT_A_REVIEWER
    if reviewer.tenant != applicant.tenant:
        return ReviewRefusal.REVIEWER_OF_ANOTHER_TENANT
    if decision.digest != digest:
        return ReviewRefusal.DIGEST_MISMATCH
    if now >= proposal.expires_at:
        return ReviewRefusal.PROPOSAL_EXPIRED
    return None


def decode_review(converter: PayloadConverter, payload: Payload) -> ReviewDecision | str:
    """The payload as a :class:`ReviewDecision`, or what is wrong with it: its size, the field and the
    message, never the (possibly huge) input. Any decoding failure is the sender's, never the case's."""
    try:
        return converter.from_payload(payload, ReviewDecision)
    except Exception as error:
        return f"({len(payload.data)} bytes): {_describe(error)}"


def _describe(error: Exception) -> str:
    if isinstance(error, ValidationError):
        problems = [
            f"{'.'.join(str(part) for part in item['loc']) or 'payload'}: {item['msg']}" for item in error.errors()[:3]
        ]
        return bounded("; ".join(problems), 200)
    return type(error).__name__

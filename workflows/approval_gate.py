"""The approval gate: who may decide a waiting refund proposal, checked in the workflow.

Pure and deterministic: the workflow passes in the case's facts and ``workflow.now()``. A refusal is
a code (:class:`contracts.names.ReviewRefusal`, or the failed check of a credential); the workflow
records it and changes nothing.

A case is decided only by approval tokens signed by reviewers' own keys, verified against the slice of
the directory read when the review arrived (:func:`adopt_directory`, recorded in the history); a
review that merely names a reviewer is refused. Where the tenant's policy needs two reviewers
(four-eyes), a first approval is kept and the case waits for a second from another reviewer; the same
reviewer approving again is refused, and a rejection by any reviewer of the tenant, before or after a
first approval, decides the case rejected.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadConverter
from temporalio.exceptions import ApplicationError

from contracts.approval_claims import CredentialCode
from contracts.approval_verification import ApprovalRefused, ApprovalTerms, reviewer_still_counts, verify_approval
from contracts.case import AcceptedApproval, CaseStatus, Decision, ReviewDecision
from contracts.case_input import CaseState
from contracts.credentials import SignedReview, claimed_subject
from contracts.directory import Directory
from contracts.errors import bounded
from contracts.names import REVIEW_REFUSED, ReviewRefusal
from contracts.payload_codec import undecodable_reason
from contracts.refusals import refusal_message

UNKNOWN_SIGNER = CredentialCode.UNKNOWN_SIGNER
"""The refusal of every signed review of a waiting case that holds no directory: no signature can be
verified, so nothing decides it."""


@dataclass(frozen=True)
class ReviewVerdict:
    """What one review attempt does: decide the case, or be refused with a code."""

    who: str
    """The reviewer as far as it is known: verified, or marked as claimed."""
    subject: str = ""
    """The reviewer's name as the review claims it (or as its signature proved it), unmarked."""
    decision: ReviewDecision | None = None
    refusal: str | None = None
    approval_token: str | None = None
    token_id: str | None = None


def judge_review(
    review: ReviewDecision | SignedReview, state: CaseState, *, now: datetime, refusal: ReviewRefusal | None = None
) -> ReviewVerdict:
    """Accept or refuse one review of the case in ``state`` at ``now`` (nothing is changed here);
    ``refusal`` refuses a signed review before it is judged (the directory could not be read)."""
    status = state.lifecycle.status
    if isinstance(review, ReviewDecision):
        name = review.reviewer[:40]
        return ReviewVerdict(f"{name} (claimed)", name, refusal=ReviewRefusal.SIGNATURE_REQUIRED.value)
    subject = (claimed_subject(review.approval_token) or "?")[:40]
    claimed = f"{subject} (claimed)"
    if refusal is not None:
        return ReviewVerdict(claimed, subject, refusal=refusal.value)
    waiting = status is CaseStatus.WAITING_APPROVAL and state.withdrawn_at is None
    expiry = state.pending_expiry
    if not waiting or expiry is None or state.digest is None or state.approvals_required() == 0:
        return ReviewVerdict(claimed, subject, refusal=ReviewRefusal.CASE_NOT_WAITING_FOR_REVIEW.value)
    if state.decision is not None:
        return ReviewVerdict(claimed, subject, refusal=ReviewRefusal.ALREADY_DECIDED.value)
    if state.directory is None:
        return ReviewVerdict(claimed, subject, refusal=UNKNOWN_SIGNER)
    terms = ApprovalTerms(
        case_id=state.case.case_id,
        digest=state.digest,
        applicant=state.case.applicant,
        proposal_expires_at=expiry,
    )
    try:
        approval = verify_approval(review.approval_token, terms, state.directory, now=now)
    except ApprovalRefused as refused:
        if refused.signer is None:
            return ReviewVerdict(claimed, subject, refusal=refused.code)
        # The signature held and a term failed: the signer's name is proven.
        return ReviewVerdict(refused.signer, refused.signer, refusal=refused.code)
    claims = approval.claims
    if claims.jti in state.used_approvals:
        return ReviewVerdict(claims.sub, claims.sub, refusal=ReviewRefusal.APPROVAL_REUSED.value)
    if claims.decision == Decision.APPROVE.value and any(kept.reviewer == claims.sub for kept in state.approvals):
        return ReviewVerdict(claims.sub, claims.sub, refusal=ReviewRefusal.REVIEWER_ALREADY_APPROVED.value)
    decision = ReviewDecision(reviewer=claims.sub, digest=claims.digest, decision=Decision(claims.decision))
    return ReviewVerdict(claims.sub, claims.sub, decision, approval_token=review.approval_token, token_id=claims.jti)


def accept_review(state: CaseState, verdict: ReviewVerdict, *, now: datetime, via: str) -> str:
    """Apply an accepted verdict to ``state`` and return the event text. An approval is kept; the case
    is decided once the kept approvals meet the recorded policy (the first reviewer's token is the one
    settlement presents, the others go with it). A rejection decides at once."""
    decision = verdict.decision
    assert decision is not None
    if verdict.token_id:
        state.used_approvals.add(verdict.token_id)
    signed = " (signed)" if verdict.approval_token else ""
    note = f" ({decision.note[:200]})" if decision.note else ""
    text = f"{verdict.who} via {via}: {decision.decision.value}{signed}{note}"
    if decision.decision is Decision.APPROVE and verdict.approval_token and verdict.token_id:
        state.approvals.append(
            AcceptedApproval(
                reviewer=decision.reviewer,
                approval_token=verdict.approval_token,
                token_id=verdict.token_id,
                at=now,
                via=via,
            )
        )
        required = state.approvals_required()
        if required > 1:
            text += f", {len(state.approvals)} of {required} approvals"
        if len(state.approvals) < required:
            return text
    _decide(state, decision, now=now, via=via, token=verdict.approval_token)
    return text


def _decide(state: CaseState, decision: ReviewDecision, *, now: datetime, via: str, token: str | None) -> None:
    """Record the case's decision; the first kept approval's token is the one settlement presents."""
    state.decision, state.decided_at, state.decided_via = decision, now, via
    state.approval_token = state.approvals[0].approval_token if state.approvals else token


def adopt_directory(state: CaseState, fresh: Directory, *, now: datetime, via: str) -> list[str]:
    """Judge from ``fresh`` (the directory as it is when a review arrived) from now on, and return what
    changed, as event texts. An approval kept earlier still counts only while ``fresh`` lists its
    reviewer, as a reviewer of the tenant, with the key that signed it; the policy is ``fresh``'s, so a
    raised threshold asks for a further approval and a lowered one decides the case on the approvals it
    holds."""
    if fresh == state.directory:
        return []
    state.directory = fresh
    changes: list[str] = []
    kept: list[AcceptedApproval] = []
    for approval in state.approvals:
        if _still_counts(approval, state):
            kept.append(approval)
        else:
            changes.append(
                f"the approval of {approval.reviewer} no longer counts: "
                "the directory no longer lists them as a reviewer, or that key"
            )
    state.approvals = kept
    required = state.approvals_required()
    reviewers = len(fresh.reviewers(state.case.applicant.tenant))
    changes.insert(0, f"directory read for a review: {reviewers} reviewer(s), {required} approval(s) needed")
    if state.decision is None and state.approvals and len(state.approvals) >= required:
        first = state.approvals[0]
        decision = ReviewDecision(reviewer=first.reviewer, digest=state.digest or "", decision=Decision.APPROVE)
        _decide(state, decision, now=now, via=via, token=first.approval_token)
        changes.append(f"the policy now needs {required} approval(s): the {len(state.approvals)} held decide the case")
    return changes


def _still_counts(approval: AcceptedApproval, state: CaseState) -> bool:
    """The kept approval's signature still verifies against the current directory, by a reviewer of the
    applicant's tenant (the time rules were met when it was accepted)."""
    assert state.directory is not None
    return reviewer_still_counts(approval.approval_token, state.directory, state.case.applicant)


def approvals_missing(state: CaseState) -> int:
    """Approvals the policy still needs beside the ones kept (0 once decided, or while none is kept)."""
    if state.decision is not None or not state.approvals:
        return 0
    return max(state.approvals_required() - len(state.approvals), 0)


def waiting_for_more(state: CaseState) -> str | None:
    """``1 of 2 approvals`` while kept approvals do not meet the policy yet, else None."""
    missing = approvals_missing(state)
    return f"{len(state.approvals)} of {len(state.approvals) + missing} approvals" if missing else None


def decode_review(converter: PayloadConverter, payload: Payload) -> ReviewDecision | SignedReview | str:
    """The payload as a review, or what is wrong with it: its size, the field and the message, never
    the (possibly huge) input. Any decoding failure is the sender's, never the case's. A case expects a
    :class:`SignedReview`; a :class:`ReviewDecision` is kept, so that the gate can refuse it by name
    (``signature_required``). A compressed payload the codec could not decode arrives as its marker,
    and what is wrong is the codec's reason."""
    undecodable = undecodable_reason(payload)
    if undecodable is not None:
        return f"(undecodable): {bounded(undecodable, 200)}"
    try:
        return converter.from_payload(payload, SignedReview)
    except Exception as error:
        try:
            return converter.from_payload(payload, ReviewDecision)
        except Exception:
            return f"({len(payload.data)} bytes): {_describe(error)}"


def _describe(error: Exception) -> str:
    if isinstance(error, ValidationError):
        problems = [
            f"{'.'.join(str(part) for part in item['loc']) or 'payload'}: {item['msg']}" for item in error.errors()[:3]
        ]
        return bounded("; ".join(problems), 200)
    return type(error).__name__


def refused_review_error(code: str, *, reviewer: str | None = None) -> ApplicationError:
    """A refused review update's failure: ``<code>: <one sentence>``, non-retryable (the same review sent
    again is refused again), without a stack trace (:class:`contracts.payload_codec.CaseFailureConverter`)."""
    return ApplicationError(
        refusal_message(code, reviewer=reviewer), {"code": code}, type=REVIEW_REFUSED, non_retryable=True
    )

"""Whether everyone the proposal's rule names agreed to it, checked with this server's own directory.

The customer agrees with a confirmation over the proposal's digest (:mod:`contracts.action_credentials`);
reviewers with approval tokens over it, as they approve refunds (:mod:`contracts.approval_verification`):
distinct reviewers of the customer's tenant, none of them the customer. Every agreement must have been
signed before the proposal expired, and the action runs within the settle window (30 minutes) of each,
so that an execution interrupted after a timely agreement still completes once. A token agrees
to one action only: its id is consumed in the action's transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from sqlmodel import Session

from commerce_server.db import ActionCredentialUseRow
from contracts.action_credentials import verify_confirmation
from contracts.actions import ActionExecution, ActionProposal, Agreement
from contracts.approval_claims import CredentialCode, CredentialRefused
from contracts.approval_verification import ApprovalRefused, ApprovalTerms, approval_meets, signed_approval
from contracts.case import Decision
from contracts.credentials import SETTLE_WINDOW
from contracts.directory import Directory
from contracts.errors import CommerceErrorCode, SupportError, error_from_code
from contracts.identity import Identity

NO_EXPIRY = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Agreed:
    """Who agreed, and the token ids their agreement consumes."""

    confirmation_jti: str | None
    approvals: tuple[tuple[str, str], ...]
    """Each approving reviewer's token id and subject."""

    def agreed_by(self, customer: str) -> tuple[str, ...]:
        return ((customer,) if self.confirmation_jti else ()) + tuple(reviewer for _, reviewer in self.approvals)

    def uses(self, customer: str) -> list[tuple[str, str]]:
        """Every token id consumed, with the subject who signed it."""
        confirmed = [(self.confirmation_jti, customer)] if self.confirmation_jti else []
        return confirmed + list(self.approvals)


class Agreeable(Protocol):
    """What an agreement is checked against: a proposal of our own server's or of another merchant server
    that speaks the same contract (:mod:`retail_server`)."""

    @property
    def case_id(self) -> str: ...
    @property
    def digest(self) -> str: ...
    @property
    def requires(self) -> Agreement: ...
    @property
    def expires_at(self) -> datetime: ...


def check_agreement(
    session: Session,
    proposal: ActionProposal,
    execution: ActionExecution,
    customer: Identity,
    directory: Directory,
    *,
    now: datetime,
) -> Agreed:
    """Everyone ``proposal.requires`` agreed, in time, with tokens that agreed to nothing else; else the
    refusal naming who did not."""
    agreed = agreement_of(proposal, execution, customer, directory, now=now)
    refuse_reused(agreed, customer, lambda jti: session.get(ActionCredentialUseRow, jti) is not None)
    return agreed


def agreement_of(
    proposal: Agreeable, execution: ActionExecution, customer: Identity, directory: Directory, *, now: datetime
) -> Agreed:
    """Everyone ``proposal.requires`` agreed, in time; else the refusal naming who did not."""
    confirmation_jti, confirmed_at = _confirmation(proposal, execution, customer, directory, now=now)
    approvals = _approvals(proposal, execution, customer, directory, now=now)
    times = ([confirmed_at] if confirmed_at else []) + [signed_at for _, _, signed_at in approvals]
    in_time(proposal, times, now=now)
    return Agreed(
        confirmation_jti=confirmation_jti,
        approvals=tuple((jti, who) for jti, who, _ in approvals),
    )


def refuse_reused(agreed: Agreed, customer: Identity, used: Callable[[str], bool]) -> None:
    """``approval_reused`` when a token of ``agreed`` already agreed to another action (``used``)."""
    for jti, _ in agreed.uses(customer.subject):
        if used(jti):
            raise error_from_code(
                CommerceErrorCode.APPROVAL_REUSED, "A confirmation or approval presented here agreed to another action."
            )


def in_time(proposal: Agreeable, signed_at: list[datetime], *, now: datetime) -> None:
    """Every agreement was signed before the proposal expired, and the action runs within the settle window
    of each; an action nobody agrees to runs before the proposal expires."""
    if not signed_at:
        if now >= proposal.expires_at:
            raise _expired("The proposal expired before it was executed.")
        return
    if max(signed_at) >= proposal.expires_at:
        raise _expired("An agreement was signed after the proposal expired; ask for a new proposal.")
    if now > min(signed_at) + SETTLE_WINDOW:
        raise _expired("An agreement is older than the settle window; ask for a new proposal.")


def _confirmation(
    proposal: Agreeable, execution: ActionExecution, customer: Identity, directory: Directory, *, now: datetime
) -> tuple[str | None, datetime | None]:
    if not proposal.requires.customer:
        return None, None
    if not execution.confirmation_token:
        raise error_from_code(
            CommerceErrorCode.CONFIRMATION_REQUIRED,
            "The merchant's policy needs the customer's confirmation of this action.",
        )
    try:
        claims = verify_confirmation(
            execution.confirmation_token,
            directory,
            customer=customer,
            case_id=proposal.case_id,
            digest=proposal.digest,
            now=now,
        )
    except CredentialRefused as refused:
        raise error_from_code(CommerceErrorCode.CONFIRMATION_INVALID, f"{refused.code}: {refused.message}") from None
    return claims.jti, claims.issued_at


def _approvals(
    proposal: Agreeable, execution: ActionExecution, customer: Identity, directory: Directory, *, now: datetime
) -> list[tuple[str, str, datetime]]:
    needed = proposal.requires.reviewers
    if needed == 0:
        return []
    if not execution.approval_tokens:
        raise error_from_code(
            CommerceErrorCode.APPROVAL_SIGNATURE_REQUIRED,
            f"The merchant's policy needs {needed} reviewer approval(s) of this action; none was given.",
        )
    # The proposal's expiry is checked once for every agreement (in_time); here, the approval itself.
    terms = ApprovalTerms(
        case_id=proposal.case_id, digest=proposal.digest, applicant=customer, proposal_expires_at=NO_EXPIRY
    )
    approved: dict[str, tuple[str, str, datetime]] = {}
    for token in execution.approval_tokens:
        try:
            signed = signed_approval(token, directory)
        except ApprovalRefused as refused:
            raise error_from_code(
                CommerceErrorCode.APPROVAL_SIGNATURE_INVALID, f"{refused.code}: {refused.message}"
            ) from None
        try:
            verified = approval_meets(signed, terms, directory, now=now, settle_window=SETTLE_WINDOW)
        except ApprovalRefused as refused:
            raise _approval_refusal(refused) from None
        if verified.claims.decision != Decision.APPROVE:
            raise error_from_code(CommerceErrorCode.APPROVAL_INVALID, "A reviewer's signed decision is a rejection.")
        approved.setdefault(verified.reviewer, (verified.token_id, verified.reviewer, verified.claims.issued_at))
    if len(approved) < needed:
        raise error_from_code(
            CommerceErrorCode.APPROVAL_INVALID,
            f"The merchant's policy needs {needed} distinct reviewers; {len(approved)} approved.",
        )
    return list(approved.values())[:needed]


def _approval_refusal(refused: ApprovalRefused) -> SupportError:
    late = refused.code in (CredentialCode.PROPOSAL_EXPIRED, CredentialCode.SETTLE_WINDOW_PASSED)
    code = CommerceErrorCode.PROPOSAL_EXPIRED if late else CommerceErrorCode.APPROVAL_INVALID
    return error_from_code(code, f"{refused.code}: {refused.message}")


def _expired(message: str) -> SupportError:
    return error_from_code(CommerceErrorCode.PROPOSAL_EXPIRED, message)

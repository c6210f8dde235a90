"""The one approval verifier: the workflow's approval gate and the commerce server both call it.

An approval (an Ed25519 approval token, or a passkey approval: :mod:`contracts.passkey`) is verified
in two steps, always in this order:

1. its signature (:func:`signed_approval`): signed by the reviewer it names, with a key or passkey the
   directory lists for them. A :class:`SignedApproval` says who signed what, nothing more.
2. its terms (:func:`approval_meets`): this case and this exact proposal, a reviewer of the applicant's
   tenant who is not the applicant, signed before the proposal expired, and still fresh: before the
   token's own expiry (the workflow, deciding), or within a settle window of its signing (the commerce
   server, paying what was decided in time). A :class:`VerifiedApproval` is one that met them.

:func:`verify_approval` is both steps in one call (the workflow gate). The commerce server calls them
apart because it looks up its idempotency record by the signed token id between them: a paid
approval's replay is answered whatever the time. What stays with each caller is its own: the workflow
records the token ids a case has used and its events; the commerce server reads its own directory,
consumes token ids in its database and maps a refusal to its error codes.

Every refusal is an :class:`ApprovalRefused` with a :class:`contracts.approval_claims.CredentialCode`,
whatever the token holds (a crafted token never crashes a caller: in the workflow it would fail the
task and wedge the case). Pure: the caller passes the directory and the time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from contracts.approval_claims import ApprovalClaims, CredentialCode, CredentialRefused
from contracts.case_start import CLOCK_SKEW
from contracts.credentials import check_token_time, verify_approval_token
from contracts.directory import Directory
from contracts.errors import ErrorCode
from contracts.identity import Identity, Role

__all__ = [
    "ApprovalRefused",
    "ApprovalTerms",
    "SignedApproval",
    "VerifiedApproval",
    "approval_meets",
    "reviewer_still_counts",
    "signed_approval",
    "verify_approval",
]


class ApprovalRefused(CredentialRefused):
    """An approval that proves nothing here; ``code`` names the check that failed.

    ``signer`` is the reviewer the signature proved when the signature held and a term failed (the
    name may then be shown as proven), None when the signature itself was refused."""

    def __init__(self, code: ErrorCode, message: str, *, signer: str | None = None, **details: Any) -> None:
        super().__init__(code, message, **details)
        self.signer = signer


@dataclass(frozen=True)
class ApprovalTerms:
    """What an approval must be for: the case, the proposal's digest and its expiry, and the applicant
    (the reviewer must be of their tenant, and not them)."""

    case_id: str
    digest: str
    applicant: Identity
    proposal_expires_at: datetime


@dataclass(frozen=True)
class SignedApproval:
    """An approval whose signature holds, and the claims it proves; its terms are not checked yet."""

    token: str
    claims: ApprovalClaims

    @property
    def reviewer(self) -> str:
        return self.claims.sub

    @property
    def token_id(self) -> str:
        """The approval's ``jti``: each caller accepts (or consumes) an approval once by it."""
        return self.claims.jti


@dataclass(frozen=True)
class VerifiedApproval(SignedApproval):
    """An approval whose signature holds and that meets its terms at the time it was checked."""


def verify_approval(
    token: str,
    terms: ApprovalTerms,
    directory: Directory,
    *,
    now: datetime,
    settle_window: timedelta | None = None,
) -> VerifiedApproval:
    """The approval ``token`` proves, if its signature holds and it meets ``terms`` at ``now``
    (``settle_window``: see :func:`approval_meets`); else :class:`ApprovalRefused`."""
    return approval_meets(signed_approval(token, directory), terms, directory, now=now, settle_window=settle_window)


def signed_approval(token: str, directory: Directory) -> SignedApproval:
    """Step 1: the approval ``token`` carries, signed by the reviewer it names with a key or passkey
    ``directory`` lists for them; else :class:`ApprovalRefused` (``signer`` None)."""
    try:
        return SignedApproval(token=token, claims=verify_approval_token(token, directory))
    except CredentialRefused as refused:
        raise ApprovalRefused(refused.code, refused.message) from None
    except Exception:  # anything a sender can put in a token: a refusal, never a crash of the caller
        raise ApprovalRefused(CredentialCode.MALFORMED_TOKEN, "The approval cannot be read as a credential.") from None


def approval_meets(
    signed: SignedApproval,
    terms: ApprovalTerms,
    directory: Directory,
    *,
    now: datetime,
    settle_window: timedelta | None = None,
) -> VerifiedApproval:
    """Step 2: ``signed`` as a verified approval if it meets ``terms`` with ``directory``'s reviewers at
    ``now``: still valid before the token's expiry (``settle_window`` None: the workflow, deciding), or
    within ``settle_window`` of its signing (the commerce server, paying what was decided in time).
    Else :class:`ApprovalRefused` naming the proven ``signer``."""
    claims = signed.claims
    try:
        if claims.case_id != terms.case_id:
            raise CredentialRefused(CredentialCode.TOKEN_FOR_ANOTHER_CASE, "The approval was signed for another case.")
        if claims.digest != terms.digest:
            raise CredentialRefused(CredentialCode.DIGEST_MISMATCH, "The approval was signed for another proposal.")
        _check_reviewer(claims, directory, terms.applicant)
        if claims.issued_at >= terms.proposal_expires_at:
            raise CredentialRefused(
                CredentialCode.PROPOSAL_EXPIRED, "The approval was signed after the proposal expired."
            )
        _check_fresh(claims, now, settle_window)
    except CredentialRefused as refused:
        raise ApprovalRefused(refused.code, refused.message, signer=signed.reviewer) from None
    return VerifiedApproval(token=signed.token, claims=claims)


def reviewer_still_counts(token: str, directory: Directory, applicant: Identity) -> bool:
    """Whether an approval accepted earlier still counts with ``directory`` as it is now: its signature
    still verifies (the key or passkey is still listed) and its signer is still a reviewer of the
    applicant's tenant who is not the applicant. Its time terms are not checked again: they held when
    it was accepted."""
    try:
        _check_reviewer(signed_approval(token, directory).claims, directory, applicant)
    except CredentialRefused:
        return False
    return True


def _check_reviewer(claims: ApprovalClaims, directory: Directory, applicant: Identity) -> None:
    reviewer = directory.person(claims.sub)
    if reviewer is None or reviewer.role is not Role.REVIEWER:
        raise CredentialRefused(CredentialCode.NOT_A_REVIEWER, "The approval is not signed by a reviewer.")
    if reviewer.subject == applicant.subject:
        raise CredentialRefused(
            CredentialCode.APPLICANT_CANNOT_REVIEW, "The applicant cannot approve their own refund."
        )
    if reviewer.tenant != applicant.tenant or claims.tenant != applicant.tenant:
        raise CredentialRefused(CredentialCode.REVIEWER_OF_ANOTHER_TENANT, "The reviewer belongs to another tenant.")


def _check_fresh(claims: ApprovalClaims, now: datetime, settle_window: timedelta | None) -> None:
    if settle_window is None:
        check_token_time(claims, now)
    elif claims.issued_at > now + CLOCK_SKEW:
        raise CredentialRefused(CredentialCode.ISSUED_IN_FUTURE, "The approval is dated in the future.")
    elif now > claims.issued_at + settle_window:
        raise CredentialRefused(
            CredentialCode.SETTLE_WINDOW_PASSED, "The approval is older than the settle window; ask for a new one."
        )

"""Signed credentials: who asks (the applicant token), who approves (the approval token), what was
paid (the signed receipt), and the public keys that check them. Pure: no files, no clock.

A claim of a name proves nothing; a valid signature by the key published for that name does. Every
credential is a JWS signed with Ed25519 (``EdDSA``) by PyJWT (which key signs what: :data:`ALGORITHM`).
The verifier is told the time (``workflow.now()`` in the workflow, the wall clock elsewhere), so the
same check runs deterministically inside a workflow and as-is at the commerce server.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import jwt
from jwt.exceptions import InvalidTokenError, PyJWKError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contracts.approval_claims import (
    APPROVAL_AUDIENCE,
    APPROVAL_TOKEN_TTL,
    MAX_TOKEN_CHARS,
    ApprovalClaims,
    CredentialCode,
    CredentialRefused,
    TimedClaims,
)
from contracts.case_start import CLOCK_SKEW, check_held_at_start
from contracts.directory import COMMERCE_KID, ISSUER_KID, KEY_ALGORITHM, Directory
from contracts.errors import AuthorizationError
from contracts.identity import Identity, Role
from contracts.passkey import claimed_reviewer, is_passkey_approval, verify_passkey_approval

__all__ = [
    "ALGORITHM",
    "APPLICANT_AUDIENCE",
    "APPROVAL_AUDIENCE",
    "COMMERCE_KID",
    "ISSUER_KID",
    "RECEIPT_AUDIENCE",
    "ApplicantCheck",
    "ApprovalClaims",
    "CaseDirectoryRequest",
    "CredentialCode",
    "CredentialRefused",
    "PublicKeys",
    "ReceiptClaims",
    "SignedReview",
    "VerifiedApplicant",
    "applicant_claims",
    "approval_claims",
    "check_token_time",
    "claimed_subject",
    "key_set",
    "sign",
    "verified_claims",
    "verify_applicant_of_proposal",
    "verify_applicant_token",
    "verify_approval_token",
    "verify_receipt",
]

ALGORITHM = KEY_ALGORITHM
"""Every credential is signed with Ed25519; which key signs what is the directory's table
(:mod:`contracts.directory`): the issuer, a reviewer's own key, the commerce server."""
APPLICANT_AUDIENCE = "support-case"
RECEIPT_AUDIENCE = "refund-receipt"
APPLICANT_TOKEN_TTL = timedelta(minutes=5)
"""Long enough to start a case; the token is checked once, when the case starts."""
SETTLE_WINDOW = timedelta(minutes=30)
"""How long after a reviewer signed an approval the commerce server still pays it: a worker that
crashed after a timely approval retries within this window and pays once, even if the proposal
expired meanwhile; an approval signed after the proposal expired is never paid."""


class ApplicantClaims(TimedClaims):
    sub: str
    tenant: str
    role: Role
    case_id: str


class ReceiptClaims(TimedClaims):
    receipt_id: str
    approval_id: str
    approval_jti: str
    case_id: str
    order_id: str
    digest: str
    amount_cents: int
    currency: str
    order_version_before: int
    order_version_after: int
    refunded_cents_after: int


class PublicKeys(BaseModel):
    """A JSON Web Key Set of Ed25519 public keys, each named by its ``kid``. Never a private key."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    keys: list[dict[str, Any]]

    def kids(self) -> list[str]:
        return [str(key.get("kid")) for key in self.keys]

    def key_for(self, kid: str) -> Any:
        """The public key published as ``kid``; ``unknown_signer`` when there is none."""
        for key in self.keys:
            if key.get("kid") == kid:
                if "d" in key:
                    raise AuthorizationError(
                        CredentialCode.PRIVATE_KEY_IN_KEY_SET, "The key set holds a private key; refused."
                    )
                try:
                    return jwt.PyJWK.from_dict(key, algorithm=ALGORITHM).key
                except PyJWKError:
                    break
        raise AuthorizationError(CredentialCode.UNKNOWN_SIGNER, f"No public key is published for {kid[:60]!r}.")


class SignedReview(BaseModel):
    """The payload of the ``review`` signal and update for cases with signed credentials."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    approval_token: str = Field(min_length=1, max_length=MAX_TOKEN_CHARS)


class ApplicantCheck(BaseModel):
    """What the ``verify_applicant`` activity is asked to check."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    applicant_token: str | None
    started_at: datetime | None = None
    """When Temporal recorded the case's start: the token is judged as of then
    (:mod:`contracts.case_start`). None: as of the moment the check runs (a release that did not send it)."""
    first_run_id: str | None = Field(default=None, max_length=100)
    """The case's first run (``workflow.info().first_execution_run_id``): a workflow id that had a run
    before it is a reused case id, refused. None: not checked (a release that did not send it)."""


class CaseDirectoryRequest(BaseModel):
    """What the ``read_case_directory`` activity is asked: the slice of the directory, as it is now, that
    can decide a case of ``applicant`` (:meth:`contracts.directory.Directory.for_case`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    applicant: str


class VerifiedApplicant(BaseModel):
    """Who the applicant token proves, and the slice of the directory that decides the case
    (:meth:`contracts.directory.Directory.for_case`): recorded in history, so every later check in the
    workflow uses exactly these reviewers, keys and policy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    identity: Identity
    directory: Directory
    issuer: str = Field(default="built-in", max_length=200)
    """Who vouched for the applicant: ``built-in`` (the ``issuer`` key) or an outside issuer's URL."""


def key_set(directory: Directory) -> PublicKeys:
    """The directory's public keys as a key set."""
    return PublicKeys(keys=list(directory.keys))


def _refuse(code: CredentialCode, message: str) -> CredentialRefused:
    return CredentialRefused(code, message)


def verified_claims(token: str, keys: PublicKeys, *, audience: str, allowed_kids: tuple[str, ...]) -> dict[str, Any]:
    """The claims of a token signed with EdDSA by the key its ``kid`` names, which must be one of
    ``allowed_kids``; time is not checked here (the caller passes its own clock)."""
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise _refuse(CredentialCode.MALFORMED_TOKEN, "The credential is missing or not a token.")
    try:
        header = jwt.get_unverified_header(token)
    except InvalidTokenError:
        raise _refuse(CredentialCode.MALFORMED_TOKEN, "The credential is not a signed token.") from None
    if header.get("alg") != ALGORITHM:
        raise _refuse(CredentialCode.WRONG_ALGORITHM, f"Only {ALGORITHM} signatures are accepted.")
    kid = str(header.get("kid", ""))
    if not allowed_kids:
        raise _refuse(CredentialCode.UNKNOWN_SIGNER, "No public key is published for the signer the token names.")
    if kid not in allowed_kids:
        raise _refuse(
            CredentialCode.WRONG_SIGNER, f"The token is signed as {kid[:60]!r}, not with a key of the signer it names."
        )
    try:
        return jwt.decode(
            token,
            keys.key_for(kid),
            algorithms=[ALGORITHM],
            audience=audience,
            options={"verify_exp": False, "verify_iat": False, "verify_nbf": False, "require": ["iat", "exp", "jti"]},
        )
    except CredentialRefused:
        raise
    except AuthorizationError as error:
        raise CredentialRefused(error.code, error.message) from None
    except InvalidTokenError as error:
        raise _refuse(CredentialCode.BAD_SIGNATURE, f"The token does not verify: {type(error).__name__}.") from None


def check_token_time(claims: TimedClaims, now: datetime) -> None:
    """Issued no later than ``now`` (give or take the clock skew) and not yet expired."""
    if claims.issued_at > now + CLOCK_SKEW:
        raise _refuse(CredentialCode.ISSUED_IN_FUTURE, "The token is dated in the future.")
    if now >= claims.expires_at:
        raise _refuse(CredentialCode.TOKEN_EXPIRED, "The token has expired.")


def verify_applicant_token(token: str, directory: Directory, *, case_id: str, now: datetime) -> Identity:
    """The applicant the built-in issuer's token proves, for this case, now, as the directory lists
    them; else :class:`CredentialRefused`."""
    claims = _applicant_claims(token, directory)
    check_token_time(claims, now)
    return _applicant_of_case(claims, directory, case_id=case_id)


def _applicant_claims(token: str, directory: Directory) -> ApplicantClaims:
    """The claims of an applicant token signed with the issuer key the directory publishes."""
    raw = verified_claims(token, key_set(directory), audience=APPLICANT_AUDIENCE, allowed_kids=(ISSUER_KID,))
    try:
        return ApplicantClaims.model_validate(raw)
    except ValidationError:
        raise _refuse(CredentialCode.MALFORMED_CLAIMS, "The applicant token lacks a required claim.") from None


def _applicant_of_case(claims: ApplicantClaims, directory: Directory, *, case_id: str) -> Identity:
    if claims.case_id != case_id:
        raise _refuse(CredentialCode.TOKEN_FOR_ANOTHER_CASE, "The applicant token was issued for another case.")
    return directory_customer(directory, claims.sub, tenant=claims.tenant, role=claims.role)


def directory_customer(directory: Directory, subject: str, *, tenant: str, role: str | None) -> Identity:
    """The customer ``subject`` as the directory lists them, when the token's tenant (and role, where
    the token states one) agree with it; else ``unknown_applicant``."""
    known = directory.person(subject)
    if known is None or known.role is not Role.CUSTOMER or known.tenant != tenant:
        raise _refuse(CredentialCode.UNKNOWN_APPLICANT, "The applicant token names no customer of the directory.")
    if role is not None and role != Role.CUSTOMER.value:
        raise _refuse(CredentialCode.UNKNOWN_APPLICANT, "The applicant token names no customer of the directory.")
    return known.identity()


def verify_applicant_of_proposal(
    token: str, directory: Directory, *, case_id: str, started_at: datetime | None, proposal_created_at: datetime
) -> Identity:
    """The applicant the issuer vouched for on case ``case_id``, with a token that held when the case
    started (:func:`contracts.case_start.check_held_at_start`). The commerce server pays only a case that
    such an issuer-signed applicant token stands behind."""
    claims = _applicant_claims(token, directory)
    identity = _applicant_of_case(claims, directory, case_id=case_id)
    check_held_at_start(
        claims.issued_at, claims.expires_at, started_at=started_at, proposal_created_at=proposal_created_at
    )
    return identity


def claimed_subject(token: str) -> str | None:
    """The ``sub`` a token claims, before any check (to pick the key that must have signed it, and to
    name the claim in a record); None when the token cannot even be read. For a passkey approval, the
    reviewer its statement names."""
    if is_passkey_approval(token):
        return claimed_reviewer(token)
    try:
        return str(jwt.decode(token, options={"verify_signature": False}).get("sub", ""))
    except Exception:  # anything a sender can put in a token: refused by the caller, never raised
        return None


def verify_approval_token(token: str, directory: Directory) -> ApprovalClaims:
    """The claims of an approval token signed with a key the directory lists for the person it names,
    or of a passkey approval (``passkey1.``, :mod:`contracts.passkey`) signed by a passkey the directory
    lists for the reviewer it names (no case, time or rule checks: :mod:`contracts.approval_verification`
    applies those, after this)."""
    if is_passkey_approval(token):
        return verify_passkey_approval(token, directory)
    subject = claimed_subject(token)
    if subject is None:
        raise _refuse(CredentialCode.MALFORMED_TOKEN, "The credential is not a signed token.")
    person = directory.person(subject)
    kids = tuple(person.kids) if person is not None else ()
    raw = verified_claims(token, key_set(directory), audience=APPROVAL_AUDIENCE, allowed_kids=kids)
    try:
        return ApprovalClaims.model_validate(raw)
    except ValidationError:
        raise _refuse(CredentialCode.MALFORMED_CLAIMS, "The approval token lacks a required claim.") from None


def sign(claims: dict[str, Any], private_key: Any, *, kid: str) -> str:
    """A token over ``claims`` signed with ``private_key`` as ``kid`` (for the key holders only)."""
    return jwt.encode(claims, private_key, algorithm=ALGORITHM, headers={"kid": kid})


def applicant_claims(
    identity: Identity, *, case_id: str, now: datetime, jti: str, lifetime: timedelta = APPLICANT_TOKEN_TTL
) -> dict[str, Any]:
    return {
        "aud": APPLICANT_AUDIENCE,
        "sub": identity.subject,
        "tenant": identity.tenant,
        "role": identity.role.value,
        "case_id": case_id,
        "iat": int(now.timestamp()),
        "exp": int((now + lifetime).timestamp()),
        "jti": jti,
    }


def approval_claims(
    reviewer: Identity, *, case_id: str, digest: str, decision: str, now: datetime, jti: str
) -> dict[str, Any]:
    return {
        "aud": APPROVAL_AUDIENCE,
        "sub": reviewer.subject,
        "tenant": reviewer.tenant,
        "case_id": case_id,
        "digest": digest,
        "decision": decision,
        "iat": int(now.timestamp()),
        "exp": int((now + APPROVAL_TOKEN_TTL).timestamp()),
        "jti": jti,
    }


def verify_receipt(token: str, keys: PublicKeys) -> ReceiptClaims:
    """A receipt signed by the commerce server's published key."""
    raw = verified_claims(token, keys, audience=RECEIPT_AUDIENCE, allowed_kids=(COMMERCE_KID,))
    try:
        return ReceiptClaims.model_validate(raw)
    except ValidationError:
        raise _refuse(CredentialCode.MALFORMED_CLAIMS, "The receipt lacks a required claim.") from None

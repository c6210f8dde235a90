"""What a verified approval proves, whatever signed it, and the refusal of one that proves nothing.

Both approval credentials, the Ed25519 approval token (:mod:`contracts.credentials`) and the passkey
approval (:mod:`contracts.passkey`), verify to the same :class:`ApprovalClaims`, so every rule after
the signature (:mod:`contracts.approval_verification`) and every use of the token id runs unchanged.
The claims and the refusal codes live here, apart from both verifiers, so that each imports them
without importing the other.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.errors import AuthorizationError

__all__ = [
    "APPROVAL_AUDIENCE",
    "APPROVAL_TOKEN_TTL",
    "MAX_TOKEN_CHARS",
    "ApprovalClaims",
    "CredentialCode",
    "CredentialRefused",
    "TimedClaims",
]

APPROVAL_AUDIENCE = "refund-approval"
APPROVAL_TOKEN_TTL = timedelta(minutes=10)
MAX_TOKEN_CHARS = 4000


class CredentialCode(StrEnum):
    """Which check refused a credential (an applicant token, an approval, a receipt, a passkey or its
    enrollment): the ``code`` of a :class:`CredentialRefused`, a wire value the workflow records, the
    commerce server sends and the review refusal sentences (:mod:`contracts.refusals`) are keyed by."""

    MALFORMED_TOKEN = "malformed_token"
    MALFORMED_CLAIMS = "malformed_claims"
    WRONG_ALGORITHM = "wrong_algorithm"
    UNKNOWN_SIGNER = "unknown_signer"
    WRONG_SIGNER = "wrong_signer"
    PRIVATE_KEY_IN_KEY_SET = "private_key_in_key_set"
    BAD_SIGNATURE = "bad_signature"
    ISSUED_IN_FUTURE = "issued_in_future"
    TOKEN_EXPIRED = "token_expired"
    TOKEN_FOR_ANOTHER_CASE = "token_for_another_case"
    UNKNOWN_APPLICANT = "unknown_applicant"
    UNKNOWN_PERSON = "unknown_person"
    DIGEST_MISMATCH = "digest_mismatch"
    NOT_A_REVIEWER = "not_a_reviewer"
    APPLICANT_CANNOT_REVIEW = "applicant_cannot_review"
    REVIEWER_OF_ANOTHER_TENANT = "reviewer_of_another_tenant"
    PROPOSAL_EXPIRED = "proposal_expired"
    SETTLE_WINDOW_PASSED = "settle_window_passed"
    PASSKEY_CHALLENGE_MISMATCH = "passkey_challenge_mismatch"
    PASSKEY_WRONG_ORIGIN = "passkey_wrong_origin"
    PASSKEY_WRONG_RP = "passkey_wrong_rp"
    PASSKEY_USER_NOT_VERIFIED = "passkey_user_not_verified"
    PASSKEY_USER_NOT_PRESENT = "passkey_user_not_present"
    ENROLLMENT_REFUSED = "enrollment_refused"
    ENROLLMENT_USED = "enrollment_used"
    ENROLLMENT_ELSEWHERE = "enrollment_elsewhere"
    """An enrollment link another browser session already claimed."""
    WRONG_ISSUER = "wrong_issuer"
    WRONG_AUDIENCE = "wrong_audience"
    MALFORMED_CREDENTIAL = "malformed_credential"
    UNKNOWN_PASSKEY = "unknown_passkey"
    PASSKEY_REFUSED = "passkey_refused"
    # the applicant token against its case's start (contracts.case_start)
    CASE_STARTED_IN_FUTURE = "case_started_in_future"
    CASE_WAITED_UNSERVED = "case_waited_unserved"
    ISSUED_AFTER_CASE_START = "issued_after_case_start"
    TOKEN_OLDER_THAN_PROPOSAL = "token_older_than_proposal"
    TOKEN_EXPIRED_AT_CASE_START = "token_expired_at_case_start"
    PROPOSAL_BEFORE_CASE_START = "proposal_before_case_start"


class CredentialRefused(AuthorizationError):
    """A credential that does not prove what it claims; ``code`` says which check failed (a
    :class:`CredentialCode` here; the keystore and the console add codes of their own)."""


class TimedClaims(BaseModel):
    """The claims every credential carries: when it was issued, until when it holds, and its id."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    iat: int
    exp: int
    jti: str = Field(min_length=8, max_length=100)

    @property
    def issued_at(self) -> datetime:
        return datetime.fromtimestamp(self.iat, UTC)

    @property
    def expires_at(self) -> datetime:
        return datetime.fromtimestamp(self.exp, UTC)


class ApprovalClaims(TimedClaims):
    sub: str
    """The reviewer: the key that signed must be one the directory lists for ``sub``."""
    tenant: str
    case_id: str
    digest: str = Field(min_length=64, max_length=64)
    decision: Literal["approve", "reject"]

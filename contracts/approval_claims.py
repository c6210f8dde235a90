"""What a verified approval proves, whatever signed it, and the refusal of one that proves nothing.

Both approval credentials, the Ed25519 approval token (:mod:`contracts.credentials`) and the passkey
approval (:mod:`contracts.passkey`), verify to the same :class:`ApprovalClaims`, so every rule after
the signature (:func:`contracts.credentials.check_approval`) and every use of the token id runs
unchanged. The claims live here, apart from both verifiers, so that each imports them without
importing the other.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.errors import AuthorizationError

__all__ = [
    "APPROVAL_AUDIENCE",
    "APPROVAL_TOKEN_TTL",
    "MAX_TOKEN_CHARS",
    "ApprovalClaims",
    "CredentialRefused",
    "TimedClaims",
]

APPROVAL_AUDIENCE = "refund-approval"
APPROVAL_TOKEN_TTL = timedelta(minutes=10)
MAX_TOKEN_CHARS = 4000


class CredentialRefused(AuthorizationError):
    """A credential that does not prove what it claims; ``code`` says which check failed."""


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

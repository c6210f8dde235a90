"""When a case started, and what that says about its applicant token. Pure: the caller tells the time.

An applicant token is short-lived (five minutes for the built-in issuer, an outside issuer's ID token
as long as that issuer says). It is judged as of the moment Temporal recorded the case's start, not the
moment a worker first ran it, so a case queued while no worker ran goes on when one returns: for up to
:data:`UNSERVED_LIMIT`, after which the case fails and the customer asks again.

The commerce server applies the same rule before it pays: the proposal names the case's recorded start
(``case_started_at``), the applicant token must have held at that moment, and the proposal must have
been made within :data:`PROPOSAL_AFTER_START_LIMIT` of it. A token copied from an earlier case's history
therefore cannot stand behind a proposal made long after it expired.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import jwt

from contracts.approval_claims import CredentialCode, CredentialRefused

__all__ = [
    "CLOCK_SKEW",
    "PROPOSAL_AFTER_START_LIMIT",
    "UNSERVED_LIMIT",
    "check_first_served",
    "check_held_at_start",
    "token_times",
]

CLOCK_SKEW = timedelta(seconds=60)
UNSERVED_LIMIT = timedelta(hours=24)
"""How long a case may wait for its first worker after Temporal recorded its start (an outage, a
rollout): within it the case goes on as if served at once; past it the case fails ``applicant_unverified``
(``case_waited_unserved``) and reads nothing."""
PROPOSAL_AFTER_START_LIMIT = UNSERVED_LIMIT + timedelta(hours=24)
"""The latest a refund proposal may be made after its case's recorded start: the unserved wait, then a
day of work (the slowest configured model takes at most 20 requests of 600 s each)."""


def check_first_served(started_at: datetime, now: datetime) -> None:
    """A case first served at ``now`` must have started no later than now and within :data:`UNSERVED_LIMIT`."""
    if started_at > now + CLOCK_SKEW:
        raise CredentialRefused(CredentialCode.CASE_STARTED_IN_FUTURE, "The case's recorded start is in the future.")
    if now - started_at > UNSERVED_LIMIT:
        hours = int(UNSERVED_LIMIT.total_seconds() // 3600)
        raise CredentialRefused(
            CredentialCode.CASE_WAITED_UNSERVED, f"The case waited more than {hours} hours for a worker; ask again."
        )


def check_held_at_start(
    issued_at: datetime | None,
    expires_at: datetime,
    *,
    started_at: datetime | None,
    proposal_created_at: datetime,
) -> None:
    """The applicant token held when the case started, and the proposal came after that start, in time.

    ``started_at`` None is a proposal made by a release that did not record the start: the token must
    then have been issued before the proposal and expired no more than :data:`PROPOSAL_AFTER_START_LIMIT`
    before it."""
    anchor = started_at if started_at is not None else proposal_created_at
    if issued_at is not None and issued_at > anchor + CLOCK_SKEW:
        raise CredentialRefused(
            CredentialCode.ISSUED_AFTER_CASE_START, "The applicant token was issued after the case started."
        )
    if started_at is None:
        if proposal_created_at - expires_at > PROPOSAL_AFTER_START_LIMIT:
            raise CredentialRefused(
                CredentialCode.TOKEN_OLDER_THAN_PROPOSAL, "The applicant token expired long before the proposal."
            )
        return
    if started_at >= expires_at:
        raise CredentialRefused(
            CredentialCode.TOKEN_EXPIRED_AT_CASE_START, "The applicant token had expired when the case started."
        )
    if proposal_created_at < started_at - CLOCK_SKEW:
        raise CredentialRefused(
            CredentialCode.PROPOSAL_BEFORE_CASE_START, "The proposal is dated before its case started."
        )
    if proposal_created_at - started_at > PROPOSAL_AFTER_START_LIMIT:
        raise CredentialRefused(
            CredentialCode.TOKEN_OLDER_THAN_PROPOSAL, "The proposal was made too long after its case started."
        )


def token_times(token: str) -> tuple[datetime | None, datetime]:
    """``iat`` (None when absent) and ``exp`` of a token whose signature the caller has already verified."""
    try:
        claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
        issued = claims.get("iat")
        return (
            datetime.fromtimestamp(int(issued), UTC) if issued is not None else None,
            datetime.fromtimestamp(int(claims["exp"]), UTC),
        )
    except Exception:  # a verified token without a readable expiry proves no time: refused
        raise CredentialRefused(CredentialCode.MALFORMED_CLAIMS, "The applicant token states no expiry.") from None

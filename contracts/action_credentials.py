"""The credentials of the action contract: the customer's confirmation and the signed action receipt.
Pure: no files, no clock (the verifier is told the time).

A confirmation is the customer's "yes" to one exact proposal: a token the customer's sign-in service
(the directory's ``issuer`` key) signs for the signed-in customer over the proposal's digest, audience
``action-confirmation``. It names the customer, their tenant, the case and the digest; a confirmation
of another proposal, case or customer proves nothing. Reviewers approve an action with the approval
token they approve a refund with (:func:`contracts.credentials.verify_approval_token`), over the
action's digest. The receipt is signed with the commerce key, audience ``action-receipt``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from contracts.approval_claims import CredentialCode, CredentialRefused, TimedClaims
from contracts.credentials import COMMERCE_KID, ISSUER_KID, PublicKeys, check_token_time, key_set, verified_claims
from contracts.directory import Directory
from contracts.identity import Identity

CONFIRMATION_AUDIENCE = "action-confirmation"
RECEIPT_AUDIENCE = "action-receipt"
CONFIRMATION_TTL = timedelta(minutes=30)
"""A confirmation holds as long as an approval may wait to be settled (the settle window): an execution
interrupted after a timely confirmation completes once with it."""
RECEIPT_VALIDITY = timedelta(days=100 * 365)


class ConfirmationClaims(TimedClaims):
    sub: str
    tenant: str
    case_id: str
    digest: str


class ActionReceiptClaims(TimedClaims):
    receipt_id: str
    proposal_id: str
    kind: str
    case_id: str
    order_id: str | None
    """None: the action changed the customer's account (``account_version_*``), not an order."""
    digest: str
    refund_cents: int
    currency: str
    order_version_before: int | None
    order_version_after: int | None
    account_version_before: int | None = None
    account_version_after: int | None = None
    confirmation_jti: str | None
    approval_jtis: list[str]
    agreed_by: list[str]


def confirmation_claims(
    customer: Identity, *, case_id: str, digest: str, now: datetime, jti: str, lifetime: timedelta = CONFIRMATION_TTL
) -> dict[str, Any]:
    return {
        "aud": CONFIRMATION_AUDIENCE,
        "sub": customer.subject,
        "tenant": customer.tenant,
        "case_id": case_id,
        "digest": digest,
        "iat": int(now.timestamp()),
        "exp": int((now + lifetime).timestamp()),
        "jti": jti,
    }


def verify_confirmation(
    token: str, directory: Directory, *, customer: Identity, case_id: str, digest: str, now: datetime
) -> ConfirmationClaims:
    """The claims of ``customer``'s confirmation of the proposal ``digest`` on ``case_id``, valid ``now``;
    a :class:`CredentialRefused` naming the first check that failed otherwise."""
    raw = verified_claims(token, key_set(directory), audience=CONFIRMATION_AUDIENCE, allowed_kids=(ISSUER_KID,))
    try:
        claims = ConfirmationClaims.model_validate(raw)
    except ValidationError:
        raise CredentialRefused(CredentialCode.MALFORMED_CLAIMS, "The confirmation lacks a required claim.") from None
    check_token_time(claims, now)
    if (claims.sub, claims.tenant) != (customer.subject, customer.tenant):
        raise CredentialRefused(CredentialCode.UNKNOWN_APPLICANT, "The confirmation names another customer.")
    if claims.case_id != case_id:
        raise CredentialRefused(CredentialCode.TOKEN_FOR_ANOTHER_CASE, "The confirmation is for another case.")
    if claims.digest != digest:
        raise CredentialRefused(CredentialCode.DIGEST_MISMATCH, "The confirmation is for another proposal.")
    return claims


def verify_action_receipt(token: str, keys: PublicKeys) -> ActionReceiptClaims:
    """The claims of an action receipt signed by the commerce server's published key."""
    raw = verified_claims(token, keys, audience=RECEIPT_AUDIENCE, allowed_kids=(COMMERCE_KID,))
    try:
        return ActionReceiptClaims.model_validate(raw)
    except ValidationError:
        raise CredentialRefused(CredentialCode.MALFORMED_CLAIMS, "The receipt lacks a required claim.") from None

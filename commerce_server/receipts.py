"""Signed receipts: what the commerce server states it paid, signed with its own key (kid ``commerce``).

A receipt's claims (:class:`contracts.credentials.ReceiptClaims`) bind the approval token that was
consumed, the proposal digest, the amount, the order version before and after and the refunded
balance after. They are built from the stored records only, so a replay signs exactly the same
claims, and Ed25519 signatures are deterministic: the same receipt, byte for byte. Anyone holding the
public key set checks one with :func:`contracts.credentials.verify_receipt`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from commerce_server.db import ApprovalUseRow, RefundRow
from contracts.commerce import RefundReceipt
from contracts.credentials import COMMERCE_KID, RECEIPT_AUDIENCE, ReceiptClaims, sign

RECEIPT_VALIDITY = timedelta(days=100 * 365)
"""A receipt is a record, not a session: its ``exp`` lies a century after it was issued."""


def receipt_claims(refund: RefundRow, use: ApprovalUseRow) -> dict[str, Any]:
    """The claims a receipt is signed over, from the refund record and the approval it consumed."""
    issued_at = int(refund.created_at.timestamp())
    claims = ReceiptClaims(
        receipt_id=refund.receipt_id,
        approval_id=refund.approval_id,
        approval_jti=use.jti,
        case_id=refund.case_id,
        order_id=refund.order_id,
        digest=refund.digest,
        amount_cents=refund.amount_cents,
        currency=refund.currency,
        order_version_before=use.order_version_before,
        order_version_after=refund.order_version_after,
        refunded_cents_after=use.refunded_cents_after,
        iat=issued_at,
        exp=issued_at + int(RECEIPT_VALIDITY.total_seconds()),
        jti=refund.receipt_id,
    )
    return {"aud": RECEIPT_AUDIENCE, **claims.model_dump()}


def signed_receipt(refund: RefundRow, use: ApprovalUseRow | None, signing_key: Ed25519PrivateKey) -> RefundReceipt:
    """The receipt of a stored refund, signed; a refund paid before approvals were signed (no consumed
    approval token) is returned as it was recorded, unsigned."""
    signature = None if use is None else sign(receipt_claims(refund, use), signing_key, kid=COMMERCE_KID)
    return RefundReceipt(
        receipt_id=refund.receipt_id,
        approval_id=refund.approval_id,
        order_id=refund.order_id,
        amount_cents=refund.amount_cents,
        currency=refund.currency,
        digest=refund.digest,
        order_version_after=refund.order_version_after,
        created_at=refund.created_at,
        signature=signature,
    )

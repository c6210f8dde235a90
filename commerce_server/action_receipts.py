"""Signed action receipts: what the commerce server states it executed, signed with its own key.

The claims (:class:`contracts.action_credentials.ActionReceiptClaims`) bind the proposal and its digest,
the effect (money and the versions of the order or account it changed), every agreeing token id and who
agreed. The receipt is stored with the execution, so a replay answers the very same receipt (marked ``replay``).
"""

from __future__ import annotations

from datetime import datetime

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from commerce_server.action_agreement import Agreed
from contracts.action_credentials import RECEIPT_AUDIENCE, RECEIPT_VALIDITY, ActionReceiptClaims
from contracts.actions import ActionProposal, ActionReceipt
from contracts.credentials import COMMERCE_KID, sign


def signed_action_receipt(
    proposal: ActionProposal, *, receipt_id: str, agreed: Agreed, executed_at: datetime, signing_key: Ed25519PrivateKey
) -> ActionReceipt:
    effect = proposal.effect
    order_after = None if effect.order_version is None else effect.order_version + 1
    account_after = None if effect.account_version is None else effect.account_version + 1
    agreed_by = agreed.agreed_by(proposal.customer)
    issued_at = int(executed_at.timestamp())
    claims = ActionReceiptClaims(
        receipt_id=receipt_id,
        proposal_id=proposal.proposal_id,
        kind=proposal.kind.value,
        case_id=proposal.case_id,
        order_id=effect.order_id,
        digest=proposal.digest,
        refund_cents=effect.refund_cents,
        currency=effect.currency,
        order_version_before=effect.order_version,
        order_version_after=order_after,
        account_version_before=effect.account_version,
        account_version_after=account_after,
        confirmation_jti=agreed.confirmation_jti,
        approval_jtis=[jti for jti, _ in agreed.approvals],
        agreed_by=list(agreed_by),
        iat=issued_at,
        exp=issued_at + int(RECEIPT_VALIDITY.total_seconds()),
        jti=receipt_id,
    )
    return ActionReceipt(
        receipt_id=receipt_id,
        proposal_id=proposal.proposal_id,
        kind=proposal.kind,
        case_id=proposal.case_id,
        order_id=effect.order_id,
        digest=proposal.digest,
        refund_cents=effect.refund_cents,
        currency=effect.currency,
        status_after=effect.status_after,
        order_version_after=order_after,
        account_version_after=account_after,
        agreed_by=agreed_by,
        executed_at=executed_at,
        signature=sign({"aud": RECEIPT_AUDIENCE, **claims.model_dump()}, signing_key, kid=COMMERCE_KID),
    )

"""Proposals and signed approvals the kit sends, valid ones and every attack on them.

A valid approval is what a worker sends after the tenant's reviewers approved: the proposal of the
rule's quote, the reviewers' approval tokens signed with their own keys (as many distinct reviewers
as the tenant's policy needs), and the issuer's applicant token for the case. Each attack changes one
thing an attacker controls, and names the code a conforming server refuses it with.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from commerce_contract.context import fresh_case_id
from commerce_contract.fixture import KitKeys
from contracts.commerce import Order, RefundApproval, RefundProposal, RefundQuote
from contracts.credentials import SETTLE_WINDOW, approval_claims, sign
from contracts.errors import CommerceErrorCode
from contracts.identity import Identity
from keystore import load_private_key, private_key_path

PROPOSAL_TTL = timedelta(minutes=15)


def proposal_of(order: Order, quote: RefundQuote, *, now: datetime, **changes: Any) -> RefundProposal:
    """The proposal of ``quote`` on a fresh case, expiring :data:`PROPOSAL_TTL` after ``now``."""
    fields: dict[str, Any] = {
        "case_id": fresh_case_id(),
        "applicant": order.customer,
        "tenant": order.tenant,
        "order_id": order.order_id,
        "order_version": order.version,
        "rule_version": quote.rule_version,
        "amount_cents": quote.amount_cents,
        "currency": quote.currency,
        "quote_id": quote.quote_id,
        "created_at": now,
        "expires_at": now + PROPOSAL_TTL,
        "ledger_id": quote.ledger_id,
    }
    return RefundProposal.model_validate(fields | changes)


class Approver:
    """Signs as the issuer and as the tenant's reviewers, with the keys the target server trusts."""

    def __init__(self, keys: KitKeys, customer: Identity) -> None:
        self._keys = keys
        self._customer = customer

    def token(
        self,
        reviewer: Identity,
        kid: str,
        proposal: RefundProposal,
        *,
        signed_at: datetime,
        key: Any = None,
        **changes: Any,
    ) -> str:
        """``reviewer``'s approval of ``proposal`` signed at ``signed_at`` with ``key`` (default their
        own) as ``kid``, with ``changes`` made to the claims before signing."""
        claims = approval_claims(
            reviewer,
            case_id=proposal.case_id,
            digest=proposal.digest(),
            decision="approve",
            now=signed_at,
            jti=uuid.uuid4().hex,
        )
        private = key if key is not None else load_private_key(private_key_path(self._keys.state_dir, kid))
        return sign(claims | changes, private, kid=kid)

    def approval(
        self, proposal: RefundProposal, *, signed_at: datetime | None = None, key: Any = None, **changes: Any
    ) -> RefundApproval:
        """The approval a worker sends for ``proposal``: valid unless ``key`` or ``changes`` (to the
        first reviewer's claims) make it an attack."""
        signed_at = signed_at or datetime.now(UTC)
        needed = self._keys.directory.approvals_required(proposal.tenant, proposal.amount_cents)
        (first, first_kid), *others = self._keys.reviewers(proposal.tenant, needed)
        return RefundApproval(
            approval_id=f"conformance-approval-{secrets.token_hex(8)}",
            proposal=proposal,
            digest=proposal.digest(),
            reviewer=first.subject,
            approved_at=signed_at,
            approval_token=self.token(first, first_kid, proposal, signed_at=signed_at, key=key, **changes),
            co_approval_tokens=[self.token(who, kid, proposal, signed_at=signed_at) for who, kid in others],
            applicant_token=self._keys.signer.applicant_token(self._customer, proposal.case_id),
        )


@dataclass(frozen=True)
class Attack:
    """One forged or misused approval of the rule's quote, and the code it must be refused with."""

    name: str
    build: Callable[[Approver, Order, RefundQuote], RefundApproval]
    code: str


def _unsigned(approver: Approver, order: Order, quote: RefundQuote) -> RefundApproval:
    approval = approver.approval(proposal_of(order, quote, now=datetime.now(UTC)))
    return approval.model_copy(update={"approval_token": None})


def _wrong_signer(approver: Approver, order: Order, quote: RefundQuote) -> RefundApproval:
    """Signed as the reviewer's kid with a key pair the attacker made."""
    return approver.approval(proposal_of(order, quote, now=datetime.now(UTC)), key=Ed25519PrivateKey.generate())


def _another_case(approver: Approver, order: Order, quote: RefundQuote) -> RefundApproval:
    return approver.approval(proposal_of(order, quote, now=datetime.now(UTC)), case_id=fresh_case_id())


def _another_digest(approver: Approver, order: Order, quote: RefundQuote) -> RefundApproval:
    """The reviewer's real signature over another proposal of the same case (one cent)."""
    proposal = proposal_of(order, quote, now=datetime.now(UTC))
    other = proposal.model_copy(update={"amount_cents": 1})
    return approver.approval(proposal, digest=other.digest())


def _expired(approver: Approver, order: Order, quote: RefundQuote) -> RefundApproval:
    """Signed five seconds after the proposal expired."""
    now = datetime.now(UTC)
    proposal = proposal_of(order, quote, now=now - PROPOSAL_TTL, expires_at=now - timedelta(seconds=5))
    return approver.approval(proposal, signed_at=now)


def _outside_settle_window(approver: Approver, order: Order, quote: RefundQuote) -> RefundApproval:
    """Signed in time, but longer ago than the settle window: a new approval is needed."""
    signed_at = datetime.now(UTC) - SETTLE_WINDOW - timedelta(minutes=1)
    proposal = proposal_of(
        order, quote, now=signed_at - timedelta(minutes=1), expires_at=signed_at + timedelta(minutes=5)
    )
    return approver.approval(proposal, signed_at=signed_at)


ATTACKS: tuple[Attack, ...] = (
    Attack("approval_unsigned", _unsigned, CommerceErrorCode.APPROVAL_SIGNATURE_REQUIRED),
    Attack("approval_wrong_signer", _wrong_signer, CommerceErrorCode.APPROVAL_SIGNATURE_INVALID),
    Attack("approval_another_case", _another_case, CommerceErrorCode.APPROVAL_INVALID),
    Attack("approval_another_digest", _another_digest, CommerceErrorCode.APPROVAL_INVALID),
    Attack("approval_expired", _expired, CommerceErrorCode.APPROVAL_EXPIRED),
    Attack("approval_outside_settle_window", _outside_settle_window, CommerceErrorCode.APPROVAL_EXPIRED),
)
"""The attacks that need no earlier payment (the reuse of a paid token is :func:`reused`)."""


def reused(approval: RefundApproval) -> RefundApproval:
    """A paid approval's token presented again under a new approval id."""
    return approval.model_copy(update={"approval_id": f"conformance-approval-{secrets.token_hex(8)}"})

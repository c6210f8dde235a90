"""Proposals and signed approvals the kit sends, valid ones and every attack on them.

A valid approval is what a worker sends after the tenant's reviewers approved: the proposal of the
rule's quote, the reviewers' approval tokens signed with their own keys (as many distinct reviewers
as the tenant's policy needs), and the issuer's applicant token for the case, issued when the case
started (the proposal's ``created_at``: a token that held then). Each attack changes one thing an
attacker controls, and names the code a conforming server refuses it with.

:data:`ATTACKS` misuse the reviewer's approval token; :data:`BACKSTOP_ATTACKS` are what the commerce
server alone must refuse even when every reviewer signature is real (docs/threat-model.md): an approval
with no applicant token, or with another customer's or another case's, or with one that had expired
when the case started, and one signed by a reviewer of another tenant.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from commerce_contract.context import CheckSkipped, fresh_case_id
from commerce_contract.fixture import Fixture, KitKeys
from contracts.commerce import Order, RefundApproval, RefundProposal, RefundQuote
from contracts.credentials import SETTLE_WINDOW, approval_claims, sign
from contracts.errors import CommerceErrorCode
from contracts.identity import Identity
from keystore import load_private_key, private_key_path

PROPOSAL_TTL = timedelta(minutes=15)
Signer = tuple[Identity, str]
"""A reviewer and the kid of the key the kit signs as them with."""


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

    def __init__(self, keys: KitKeys, customer: Identity, fixture: Fixture) -> None:
        self._keys = keys
        self._customer = customer
        self._fixture = fixture

    def applicant_token(
        self,
        proposal: RefundProposal,
        *,
        applicant: Identity | None = None,
        case_id: str | None = None,
        issued_at: datetime | None = None,
    ) -> str:
        """The issuer's applicant token for ``proposal``'s case and customer, issued when the case started
        (the proposal's ``created_at``); ``applicant``, ``case_id`` or ``issued_at`` change it."""
        return self._keys.signer.applicant_token(
            applicant or self._customer, case_id or proposal.case_id, now=issued_at or proposal.created_at
        )

    def reviewers(self, tenant: str, count: int) -> list[Signer]:
        """``count`` distinct reviewers of ``tenant`` whose keys the kit holds."""
        return self._keys.reviewers(tenant, count)

    def other_customer(self) -> Identity:
        """Another customer of the directory (the fixture's ``other_customer``, or one the directory lists)."""
        other = self._keys.other_customer(self._customer, self._fixture.other_customer)
        if other is None:
            raise CheckSkipped("the directory lists no other customer (the fixture may name other_customer)")
        return other

    def foreign_reviewer(self) -> Signer:
        """A reviewer of another tenant than the customer's whose key the kit holds."""
        foreign = self._keys.foreign_reviewer(self._customer.tenant, self._fixture.foreign_reviewer)
        if foreign is None:
            raise CheckSkipped(
                f"the kit holds the key of no reviewer of a tenant other than {self._customer.tenant!r} "
                f"(list one in the directory, put their key under {self._keys.state_dir}/keys, or name "
                "foreign_reviewer in the fixture)"
            )
        return foreign

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

    def needed(self, proposal: RefundProposal) -> int:
        """How many distinct reviewers the tenant's policy (the directory's) needs for ``proposal``."""
        return self._keys.directory.approvals_required(proposal.tenant, proposal.amount_cents)

    def approval(
        self,
        proposal: RefundProposal,
        *,
        signed_at: datetime | None = None,
        key: Any = None,
        signers: list[Signer] | None = None,
        applicant_token: str | None = None,
        **changes: Any,
    ) -> RefundApproval:
        """The approval a worker sends for ``proposal``: valid unless ``key`` or ``changes`` (to the
        first reviewer's claims), ``signers`` (who signs, the first named as the reviewer; default as
        many of the tenant's reviewers as its policy needs) or ``applicant_token`` (default the
        customer's, issued when the case started) make it an attack."""
        signed_at = signed_at or datetime.now(UTC)
        (first, first_kid), *others = signers or self.reviewers(proposal.tenant, self.needed(proposal))
        return RefundApproval(
            approval_id=f"conformance-approval-{secrets.token_hex(8)}",
            proposal=proposal,
            digest=proposal.digest(),
            reviewer=first.subject,
            approved_at=signed_at,
            approval_token=self.token(first, first_kid, proposal, signed_at=signed_at, key=key, **changes),
            co_approval_tokens=[self.token(who, kid, proposal, signed_at=signed_at) for who, kid in others],
            applicant_token=applicant_token or self.applicant_token(proposal),
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


def _applicant_missing(approver: Approver, order: Order, quote: RefundQuote) -> RefundApproval:
    """Every reviewer signature real, but no applicant token: no login stands behind the case."""
    approval = approver.approval(proposal_of(order, quote, now=datetime.now(UTC)))
    return approval.model_copy(update={"applicant_token": None})


def _applicant_another_customer(approver: Approver, order: Order, quote: RefundQuote) -> RefundApproval:
    """The issuer's real applicant token for this case, naming another customer of the directory."""
    proposal = proposal_of(order, quote, now=datetime.now(UTC))
    other = approver.other_customer()
    return approver.approval(proposal, applicant_token=approver.applicant_token(proposal, applicant=other))


def _applicant_another_case(approver: Approver, order: Order, quote: RefundQuote) -> RefundApproval:
    """The issuer's real applicant token for this customer, issued for another case."""
    proposal = proposal_of(order, quote, now=datetime.now(UTC))
    return approver.approval(proposal, applicant_token=approver.applicant_token(proposal, case_id=fresh_case_id()))


def _applicant_older_than_case(approver: Approver, order: Order, quote: RefundQuote) -> RefundApproval:
    """The customer's own token for this case, copied from an earlier run: it had expired when the case
    the proposal names (``case_started_at``) started, ten minutes after it was issued."""
    now = datetime.now(UTC)
    proposal = proposal_of(order, quote, now=now, case_started_at=now)
    stale = approver.applicant_token(proposal, issued_at=now - timedelta(minutes=10))
    return approver.approval(proposal, applicant_token=stale)


def _reviewer_of_another_tenant(approver: Approver, order: Order, quote: RefundQuote) -> RefundApproval:
    """A real signature of a reviewer of another tenant (with the tenant's own reviewers for any further
    approval its policy needs): every signature verifies, but the first signer may not approve here."""
    proposal = proposal_of(order, quote, now=datetime.now(UTC))
    foreign = approver.foreign_reviewer()
    own = approver.reviewers(proposal.tenant, approver.needed(proposal) - 1)
    return approver.approval(proposal, signers=[foreign, *own])


BACKSTOP_ATTACKS: tuple[Attack, ...] = (
    Attack("applicant_token_missing", _applicant_missing, CommerceErrorCode.APPLICANT_UNVERIFIED),
    Attack("applicant_token_of_another_customer", _applicant_another_customer, CommerceErrorCode.APPLICANT_UNVERIFIED),
    Attack("applicant_token_of_another_case", _applicant_another_case, CommerceErrorCode.APPLICANT_UNVERIFIED),
    Attack("applicant_token_older_than_case", _applicant_older_than_case, CommerceErrorCode.APPLICANT_UNVERIFIED),
    Attack("approval_reviewer_of_another_tenant", _reviewer_of_another_tenant, CommerceErrorCode.APPROVAL_INVALID),
)
"""What only the commerce server stands against when every reviewer signature is real: the applicant
token (none, another customer's, another case's, one that had expired when the case started) and the
reviewer's tenant. The tenant's approval
policy and a closed case are checks of their own (:mod:`commerce_contract.checks_refunds`)."""


def reused(approval: RefundApproval) -> RefundApproval:
    """A paid approval's token presented again under a new approval id."""
    return approval.model_copy(update={"approval_id": f"conformance-approval-{secrets.token_hex(8)}"})

"""The approved refund's money path: the checks, the idempotent record, the replay and the receipt.

A refund is paid (simulated) only on reviewers' signed approval tokens, verified here with the
commerce server's own copy of the directory (a name in the approval proves nothing; the tenant's
policy says how many distinct reviewers: :mod:`commerce_server.approval_policy`), at most once per
approval, and only while the proposal still equals today's quote on this very ledger. Every receipt is
signed with the commerce key. Every refund paid is logged once, when its transaction commits (never on
a replay), on :data:`PAID_LOGGER`: its case, order, amount and receipt id.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import CursorResult, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from commerce_server.approval_policy import co_approval_rows, co_approvals
from commerce_server.case_decisions import paid_decision, refuse_if_decided
from commerce_server.db import ApprovalUseRow, OrderRow, RefundRow
from commerce_server.keys import CommerceKeys
from commerce_server.metrics import count_refund_paid
from commerce_server.receipts import signed_receipt
from contracts.approval_claims import ApprovalClaims, CredentialCode
from contracts.approval_verification import (
    ApprovalRefused,
    ApprovalTerms,
    SignedApproval,
    VerifiedApproval,
    approval_meets,
    signed_approval,
)
from contracts.case import Decision
from contracts.case_start import check_held_at_start, token_times
from contracts.commerce import Order, RefundApproval, RefundQuote, RefundReceipt
from contracts.credentials import SETTLE_WINDOW, verify_applicant_of_proposal
from contracts.errors import AuthorizationError, CommerceErrorCode, error_from_code
from contracts.identity import Identity
from contracts.logs import log_fields
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.store import KnowledgeBase, default_knowledge_base

PAID_LOGGER = "commerce_server.refunds.paid"
"""Logs each refund paid, at INFO: the process keeps these lines whatever its level (a money record)."""
paid_log = logging.getLogger(PAID_LOGGER)

LATE = frozenset({CredentialCode.PROPOSAL_EXPIRED, CredentialCode.SETTLE_WINDOW_PASSED})
"""Credential refusals that mean "too late" (``approval_expired``, business); every other one is an
authorization refusal."""


def receipt_id_for(approval_id: str) -> str:
    """``SIM-`` and 16 hex characters derived from the approval id: the same approval, the same id."""
    return "SIM-" + hashlib.sha256(approval_id.encode("utf-8")).hexdigest()[:16]


class RefundSettlement:
    """One approved refund's checks and transaction, in the given session, for one bound identity.

    It pays at most once per approval id and once per approval token id: a repeat returns the original
    receipt, and only a proposal that still equals today's quote on this very ledger moves a balance.

    Time: the reviewer must have signed before the proposal expired, and the refund is paid within
    :data:`contracts.credentials.SETTLE_WINDOW` (30 minutes) of that signature. A worker that crashed
    after a timely approval therefore still pays once, even if the proposal expired meanwhile; an
    approval older than the window is refused and needs a new one. A replay of a paid approval is
    answered whatever the time: it pays nothing.
    """

    def __init__(
        self,
        session: Session,
        identity: Identity,
        *,
        ledger_id: Callable[[], str],
        read_order: Callable[[Session, str], Order],
        knowledge: KnowledgeBase | None,
        keys: CommerceKeys,
    ) -> None:
        """``ledger_id`` gives this database's ledger id (read on first use); ``read_order`` reads one
        of the identity's orders, scoped like every other read; ``knowledge`` holds the policy pages
        the re-quote checks (``None``: the packaged knowledge base); ``keys`` are the commerce
        server's public key set and receipt key (read on first use)."""
        self._session = session
        self._identity = identity
        self._ledger_id = ledger_id
        self._read_order = read_order
        self._knowledge = knowledge
        self._keys = keys
        self._co_approvals: list[ApprovalClaims] = []

    def execute(self, approval: RefundApproval) -> RefundReceipt:
        """Pay an approved refund (simulated) exactly once per approval id and approval token id.

        Order of checks: the approval token's signature first (no token, no answer), then the
        idempotency record (a repeat returns the original receipt), then that the token id was never
        consumed, the approval itself (case, digest, reviewer rules, time), that the case holds no
        decision yet (neither paid nor closed as rejected or expired: :mod:`commerce_server.case_decisions`),
        the ledger and a fresh quote that must equal the approved one; only then one transaction stores
        the record, consumes the token id, writes the case's ``paid`` decision and moves the balance,
        guarded by the approved order version.
        """
        signed = self._signed(approval)
        self._keys.signing_key()  # a server that could not sign the receipt pays nothing
        recorded = self._session.get(RefundRow, approval.approval_id) or self._paid_with_token(approval, signed.claims)
        if recorded is not None:
            return self._replay(recorded, approval, signed.claims)
        claims = self._check_approval(approval, signed).claims
        refuse_if_decided(self._session, approval.proposal.case_id, approval_id=approval.approval_id)
        self._check_ledger(approval)
        quote = self._fresh_quote(approval)
        if quote is None:
            # A concurrent twin may have executed this very approval since the lookup above.
            return self._replay_or_quote_changed(approval, claims)
        return self._record_refund(approval, claims, quote)

    def _signed(self, approval: RefundApproval) -> SignedApproval:
        """The approval token, signed by the reviewer it names (checked with this server's own
        directory: :func:`contracts.approval_verification.signed_approval`); a missing or forged token
        is refused. Its terms are checked later, after the idempotency record: a replay of a paid
        approval is answered whatever the time."""
        if not approval.approval_token:
            raise error_from_code(
                CommerceErrorCode.APPROVAL_SIGNATURE_REQUIRED,
                "A refund is paid only on a reviewer's signed approval token; this approval carries none.",
            )
        try:
            return signed_approval(approval.approval_token, self._keys.directory())
        except ApprovalRefused as refused:
            raise error_from_code(
                CommerceErrorCode.APPROVAL_SIGNATURE_INVALID, f"{refused.code}: {refused.message}"
            ) from None

    def _replay(self, recorded: RefundRow, approval: RefundApproval, claims: ApprovalClaims) -> RefundReceipt:
        if (recorded.tenant, recorded.customer) != (self._identity.tenant, self._identity.subject):
            raise error_from_code(CommerceErrorCode.APPROVAL_INVALID, "This approval does not belong to this customer.")
        if recorded.digest != approval.digest:
            raise error_from_code(
                CommerceErrorCode.IDEMPOTENCY_CONFLICT,
                "This approval id was already executed for a different proposal.",
            )
        use = self._session.exec(
            select(ApprovalUseRow).where(ApprovalUseRow.approval_id == recorded.approval_id)
        ).first()
        if use is not None and use.jti != claims.jti:
            raise error_from_code(
                CommerceErrorCode.IDEMPOTENCY_CONFLICT,
                "This approval id was already executed on another approval token.",
            )
        return signed_receipt(recorded, use, self._keys.signing_key())

    def _paid_with_token(self, approval: RefundApproval, claims: ApprovalClaims) -> RefundRow | None:
        """An approval token id pays once: the refund it paid if that was this very approval (a twin
        committed since the lookup by approval id); presented with another approval id, it is refused."""
        use = self._session.get(ApprovalUseRow, claims.jti)
        if use is None:
            return None
        if use.approval_id != approval.approval_id:
            raise error_from_code(
                CommerceErrorCode.APPROVAL_REUSED,
                "This approval token was already consumed by another refund; it pays once.",
            )
        return self._session.get(RefundRow, use.approval_id)

    def _check_approval(self, approval: RefundApproval, signed: SignedApproval) -> VerifiedApproval:
        """The signed approval must be this customer's, for exactly this proposal of a case the issuer
        vouched for, by a reviewer of the tenant who is not the applicant, signed before the proposal
        expired, within the settle window; with the further approvals the tenant's policy needs."""
        claims = signed.claims
        proposal = approval.proposal
        if approval.digest != proposal.digest():
            raise error_from_code(
                CommerceErrorCode.APPROVAL_INVALID, "The approval digest does not match the proposal."
            )
        if (proposal.applicant, proposal.tenant) != (self._identity.subject, self._identity.tenant):
            raise error_from_code(CommerceErrorCode.APPROVAL_INVALID, "The proposal was made for another customer.")
        self._check_applicant(approval)
        if approval.reviewer != claims.sub:
            raise error_from_code(
                CommerceErrorCode.APPROVAL_INVALID,
                "reviewer_mismatch: The approval names another reviewer than the one who signed.",
            )
        if claims.decision != Decision.APPROVE:
            raise error_from_code(
                CommerceErrorCode.APPROVAL_INVALID, "not_an_approval: The reviewer's signed decision is a rejection."
            )
        verified = self._meets(approval, signed)
        self._co_approvals = co_approvals(
            approval,
            verified,
            self._keys.directory(),
            self._session,
            meets=lambda co: self._meets(approval, co),
        )
        return verified

    def _meets(self, approval: RefundApproval, signed: SignedApproval) -> VerifiedApproval:
        """The terms every approval of this refund meets (:func:`contracts.approval_verification.approval_meets`),
        with this server's own directory and the settle window; a late one is ``approval_expired``."""
        proposal = approval.proposal
        terms = ApprovalTerms(
            case_id=proposal.case_id,
            digest=approval.digest,
            applicant=self._identity,
            proposal_expires_at=proposal.expires_at,
        )
        try:
            return approval_meets(
                signed, terms, self._keys.directory(), now=datetime.now(UTC), settle_window=SETTLE_WINDOW
            )
        except ApprovalRefused as refused:
            code = CommerceErrorCode.APPROVAL_EXPIRED if refused.code in LATE else CommerceErrorCode.APPROVAL_INVALID
            raise error_from_code(code, f"{refused.code}: {refused.message}") from None

    def _check_applicant(self, approval: RefundApproval) -> None:
        """The case must be one that the issuer's applicant token stands behind, for this customer, with a
        token that held when the case started (:mod:`contracts.case_start`): a run that skipped the
        applicant check (a hand-made start) never reaches a payment, and a token copied from an earlier
        case's history cannot stand behind a proposal made long after it expired."""
        if not approval.applicant_token:
            raise error_from_code(
                CommerceErrorCode.APPLICANT_UNVERIFIED,
                "A refund is paid only for a case an issuer-signed applicant token stands behind; none was sent.",
            )
        proposal = approval.proposal
        try:
            outside = self._keys.applicant_issuer()
            if outside is not None:
                applicant = outside.verify(
                    approval.applicant_token, self._keys.directory(), now=datetime.now(UTC), check_time=False
                )
                issued_at, expires_at = token_times(approval.applicant_token)
                check_held_at_start(
                    issued_at, expires_at, started_at=proposal.case_started_at, proposal_created_at=proposal.created_at
                )
            else:
                applicant = verify_applicant_of_proposal(
                    approval.applicant_token,
                    self._keys.directory(),
                    case_id=proposal.case_id,
                    started_at=proposal.case_started_at,
                    proposal_created_at=proposal.created_at,
                )
        except AuthorizationError as refused:
            raise error_from_code(
                CommerceErrorCode.APPLICANT_UNVERIFIED, f"{refused.code}: {refused.message}"
            ) from None
        if applicant != self._identity:
            raise error_from_code(CommerceErrorCode.APPLICANT_UNVERIFIED, "The applicant token names another customer.")

    def _check_ledger(self, approval: RefundApproval) -> None:
        """The proposal must have been quoted on this very database, never on another one."""
        if approval.proposal.ledger_id != self._ledger_id():
            raise error_from_code(
                CommerceErrorCode.LEDGER_MISMATCH,
                "This proposal was quoted on another commerce ledger (or on none); it cannot be paid here.",
            )

    def _fresh_quote(self, approval: RefundApproval) -> RefundQuote | None:
        """Re-read the order and re-quote it: today's quote if it is exactly the approved proposal."""
        proposal = approval.proposal
        knowledge = self._knowledge if self._knowledge is not None else default_knowledge_base()
        order = self._read_order(self._session, proposal.order_id)
        follows = self._keys.directory().policy_tenant(order.tenant)
        quote = calculate_refund_quote(
            order, page_versions=policy_page_versions(knowledge, tenant=follows), policy_tenant=follows
        )
        approved = (proposal.order_version, proposal.amount_cents, proposal.currency, proposal.rule_version)
        quoted = (quote.order_version, quote.amount_cents, quote.currency, quote.rule_version)
        holds = quote.eligible and quoted == approved and quote.quote_id == proposal.quote_id
        return quote if holds else None

    def _record_refund(self, approval: RefundApproval, claims: ApprovalClaims, quote: RefundQuote) -> RefundReceipt:
        """One transaction: the idempotency record, the consumed token id and the guarded balance
        update, or none of them."""
        session = self._session
        proposal = approval.proposal
        now = datetime.now(UTC)
        record = RefundRow(
            approval_id=approval.approval_id,
            digest=approval.digest,
            tenant=proposal.tenant,
            customer=proposal.applicant,
            order_id=proposal.order_id,
            case_id=proposal.case_id,
            reviewer=claims.sub,
            receipt_id=receipt_id_for(approval.approval_id),
            amount_cents=proposal.amount_cents,
            currency=proposal.currency,
            order_version_after=proposal.order_version + 1,
            created_at=now,
        )
        use = ApprovalUseRow(
            jti=claims.jti,
            approval_id=approval.approval_id,
            receipt_id=record.receipt_id,
            reviewer=claims.sub,
            order_version_before=proposal.order_version,
            # The update below is guarded by the quoted version, so the quoted balance is the balance it moves.
            refunded_cents_after=quote.refunded_cents + proposal.amount_cents,
            created_at=now,
        )
        decision = paid_decision(
            proposal.case_id,
            identity=self._identity,
            digest=approval.digest,
            approval_id=approval.approval_id,
            at=now,
        )
        try:
            # The insert comes first: on SQLite it takes the write lock, so concurrent twins queue
            # behind it; on PostgreSQL a twin's insert waits for this transaction and then fails.
            session.add(record)
            session.flush()
            session.add(use)
            session.add_all(co_approval_rows(approval.approval_id, self._co_approvals, at=now))
            session.flush()
            session.add(decision)  # a case closed (or paid) meanwhile fails here, and nothing is paid
            session.flush()
            guarded_update = (
                update(OrderRow)
                .where(
                    col(OrderRow.order_id) == proposal.order_id,
                    col(OrderRow.tenant) == proposal.tenant,
                    col(OrderRow.customer) == proposal.applicant,
                    col(OrderRow.version) == proposal.order_version,
                )
                .values(
                    refunded_cents=OrderRow.refunded_cents + proposal.amount_cents,
                    version=OrderRow.version + 1,
                )
            )
            # For an UPDATE, Session.execute returns a CursorResult (rowcount); its annotation says Result.
            moved = cast(CursorResult[Any], session.execute(guarded_update))
            if moved.rowcount != 1:
                session.rollback()
                return self._replay_or_quote_changed(approval, claims)
            session.commit()
            count_refund_paid(proposal.tenant, proposal.amount_cents)
            paid_log.info(
                "refund paid (simulated): case %s, order %s, %d %s, receipt %s",
                proposal.case_id,
                proposal.order_id,
                proposal.amount_cents,
                proposal.currency,
                record.receipt_id,
                extra=log_fields(
                    case_id=proposal.case_id,
                    tenant=proposal.tenant,
                    order_id=proposal.order_id,
                    amount_cents=proposal.amount_cents,
                    currency=proposal.currency,
                    approval_id=approval.approval_id,
                    receipt_id=record.receipt_id,
                ),
            )
        except IntegrityError:
            session.rollback()
            return self._replay_or_quote_changed(approval, claims)
        return signed_receipt(record, use, self._keys.signing_key())

    def _replay_or_quote_changed(self, approval: RefundApproval, claims: ApprovalClaims) -> RefundReceipt:
        """Nothing was paid now: if this approval was executed meanwhile, that record decides; if its
        token paid another approval meanwhile, it is reused; if the case was decided meanwhile, that
        decision stands; otherwise the quote changed."""
        self._session.expunge_all()
        recorded = self._session.get(RefundRow, approval.approval_id) or self._paid_with_token(approval, claims)
        if recorded is not None:
            return self._replay(recorded, approval, claims)
        refuse_if_decided(self._session, approval.proposal.case_id, approval_id=approval.approval_id)
        raise error_from_code(
            CommerceErrorCode.QUOTE_CHANGED, "The order or the refund rule changed since approval; quote again."
        )

"""The approved refund's money path: the checks, the idempotent record, the replay and the receipt.

A :class:`RefundSettlement` works inside one session on behalf of one bound identity. It pays a
refund (simulated) at most once per approval id: a repeat returns the original receipt, and only a
proposal that still equals today's quote on this very ledger moves a balance.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import CursorResult, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from commerce_server.db import OrderRow, RefundRow
from contracts.commerce import Order, RefundApproval, RefundReceipt
from contracts.errors import error_from_code
from contracts.identity import PROFILES, Identity, Role
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.store import KnowledgeBase, default_knowledge_base


def receipt_id_for(approval_id: str) -> str:
    """``SIM-`` and 16 hex characters derived from the approval id: the same approval, the same id."""
    return "SIM-" + hashlib.sha256(approval_id.encode("utf-8")).hexdigest()[:16]


class RefundSettlement:
    """One approved refund's checks and transaction, in the given session, for one bound identity."""

    def __init__(
        self,
        session: Session,
        identity: Identity,
        *,
        ledger_id: Callable[[], str],
        read_order: Callable[[Session, str], Order],
        knowledge: KnowledgeBase | None,
    ) -> None:
        """``ledger_id`` gives this database's ledger id (read on first use); ``read_order`` reads one
        of the identity's orders, scoped like every other read; ``knowledge`` holds the policy pages
        the re-quote checks (``None``: the packaged knowledge base)."""
        self._session = session
        self._identity = identity
        self._ledger_id = ledger_id
        self._read_order = read_order
        self._knowledge = knowledge

    def execute(self, approval: RefundApproval) -> RefundReceipt:
        """Pay an approved refund (simulated) exactly once per approval id.

        Order of checks: the idempotency record first (a repeat returns the original receipt), then
        the approval itself, then a fresh quote that must equal the approved one; only then one
        transaction stores the record and moves the balance, guarded by the approved order version.
        """
        recorded = self._session.get(RefundRow, approval.approval_id)
        if recorded is not None:
            return self._replay(recorded, approval)
        self._check_approval(approval)
        self._check_ledger(approval)
        if not self._quote_still_holds(approval):
            # A concurrent twin may have executed this very approval since the lookup above.
            return self._replay_or_quote_changed(approval)
        return self._record_refund(approval)

    def _replay(self, recorded: RefundRow, approval: RefundApproval) -> RefundReceipt:
        if (recorded.tenant, recorded.customer) != (self._identity.tenant, self._identity.subject):
            raise error_from_code("approval_invalid", "This approval does not belong to this customer.")
        if recorded.digest != approval.digest:
            raise error_from_code(
                "idempotency_conflict", "This approval id was already executed for a different proposal."
            )
        return _receipt(recorded)

    def _check_approval(self, approval: RefundApproval) -> None:
        proposal = approval.proposal
        if approval.digest != proposal.digest():
            raise error_from_code("approval_invalid", "The approval digest does not match the proposal.")
        if (proposal.applicant, proposal.tenant) != (self._identity.subject, self._identity.tenant):
            raise error_from_code("approval_invalid", "The proposal was made for another customer.")
        reviewer = PROFILES.get(approval.reviewer)
        if (
            reviewer is None
            or reviewer.role is not Role.REVIEWER
            or reviewer.tenant != proposal.tenant
            or reviewer.subject == proposal.applicant
        ):
            raise error_from_code("approval_invalid", "The approval must come from a reviewer of the same merchant.")
        if datetime.now(UTC) >= proposal.expires_at:
            raise error_from_code("approval_expired", "The refund proposal expired before execution.")

    def _check_ledger(self, approval: RefundApproval) -> None:
        """The proposal must have been quoted on this very database, never on another one."""
        if approval.proposal.ledger_id != self._ledger_id():
            raise error_from_code(
                "ledger_mismatch",
                "This proposal was quoted on another commerce ledger (or on none); it cannot be paid here.",
            )

    def _quote_still_holds(self, approval: RefundApproval) -> bool:
        """Re-read the order and re-quote it: the approved proposal must be exactly today's quote."""
        proposal = approval.proposal
        knowledge = self._knowledge if self._knowledge is not None else default_knowledge_base()
        quote = calculate_refund_quote(
            self._read_order(self._session, proposal.order_id),
            page_versions=policy_page_versions(knowledge),
        )
        approved = (proposal.order_version, proposal.amount_cents, proposal.currency, proposal.rule_version)
        quoted = (quote.order_version, quote.amount_cents, quote.currency, quote.rule_version)
        return quote.eligible and quoted == approved and quote.quote_id == proposal.quote_id

    def _record_refund(self, approval: RefundApproval) -> RefundReceipt:
        """One transaction: the idempotency record and the guarded balance update, or neither."""
        session = self._session
        proposal = approval.proposal
        record = RefundRow(
            approval_id=approval.approval_id,
            digest=approval.digest,
            tenant=proposal.tenant,
            customer=proposal.applicant,
            order_id=proposal.order_id,
            case_id=proposal.case_id,
            reviewer=approval.reviewer,
            receipt_id=receipt_id_for(approval.approval_id),
            amount_cents=proposal.amount_cents,
            currency=proposal.currency,
            order_version_after=proposal.order_version + 1,
            created_at=datetime.now(UTC),
        )
        try:
            # The insert comes first: on SQLite it takes the write lock, so concurrent twins queue
            # behind it; on PostgreSQL a twin's insert waits for this transaction and then fails.
            session.add(record)
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
                return self._replay_or_quote_changed(approval)
            session.commit()
        except IntegrityError:
            session.rollback()
            return self._replay_or_quote_changed(approval)
        return _receipt(record)

    def _replay_or_quote_changed(self, approval: RefundApproval) -> RefundReceipt:
        """The quote no longer holds: if this approval was executed meanwhile, that record decides."""
        self._session.expunge_all()
        recorded = self._session.get(RefundRow, approval.approval_id)
        if recorded is not None:
            return self._replay(recorded, approval)
        raise error_from_code("quote_changed", "The order or the refund rule changed since approval; quote again.")


def _receipt(row: RefundRow) -> RefundReceipt:
    return RefundReceipt(
        receipt_id=row.receipt_id,
        approval_id=row.approval_id,
        order_id=row.order_id,
        amount_cents=row.amount_cents,
        currency=row.currency,
        digest=row.digest,
        order_version_after=row.order_version_after,
        created_at=row.created_at,
    )

"""The commerce business layer: scoped reads, idempotent tickets and the approved refund.

A :class:`CommerceService` is bound to one identity. Every read filters by id AND tenant AND
owner, so another customer's record and a record that does not exist are indistinguishable: both
give the same code and the same message, and neither message repeats the requested id.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, CursorResult, Engine, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

from commerce_server.db import (
    LEDGER_ROW,
    InvoiceRow,
    LedgerRow,
    OrderRow,
    ProductRow,
    RefundRow,
    ShipmentEventRow,
    TicketRow,
)
from contracts.commerce import (
    ORDER_ID_FORMAT,
    Invoice,
    Order,
    OrderList,
    OrderStatus,
    OrderSummary,
    Product,
    RefundApproval,
    RefundReceipt,
    Shipment,
    ShipmentEvent,
    Ticket,
    canonical_digest,
)
from contracts.errors import SupportError, TransientError, error_from_code
from contracts.identity import PROFILES, Identity, Role
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.store import KnowledgeBase, default_knowledge_base

ORDER_ID = re.compile(ORDER_ID_FORMAT)
SKU = re.compile(r"^[A-Z]{2,8}-\d{2}$")
TICKET_ID = re.compile(r"^TCK-[0-9a-f]{16}$")
IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
MAX_TICKET_TEXT = 1500

_NOT_ACCESSIBLE = {
    "order": ("order_not_accessible", "No such order is available to this customer."),
    "shipment": ("shipment_not_accessible", "No such shipment is available to this customer."),
    "invoice": ("invoice_not_accessible", "No such invoice is available to this customer."),
    "ticket": ("ticket_not_accessible", "No such ticket is available to this customer."),
}


def not_accessible(record: str) -> SupportError:
    """The one error for a record that is missing or belongs to someone else."""
    return error_from_code(*_NOT_ACCESSIBLE[record])


def receipt_id_for(approval_id: str) -> str:
    """``SIM-`` and 16 hex characters derived from the approval id: the same approval, the same id."""
    return "SIM-" + hashlib.sha256(approval_id.encode("utf-8")).hexdigest()[:16]


def ticket_id_for(identity: Identity, idempotency_key: str) -> str:
    """Derived from the owner and the key, so a concurrent twin collides on the primary key."""
    material = "\x1f".join((identity.tenant, identity.subject, idempotency_key))
    return "TCK-" + hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def _invalid(message: str) -> SupportError:
    return error_from_code("invalid_argument", message)


def _require(pattern: re.Pattern[str], value: str, message: str) -> None:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise _invalid(message)


class CommerceService:
    """Commerce operations on behalf of one bound identity."""

    def __init__(
        self,
        engine: Engine,
        identity: Identity,
        *,
        ledger_id: str | None = None,
        knowledge: KnowledgeBase | None = None,
    ) -> None:
        """``ledger_id`` is the database's ledger when the caller already read it (the MCP server does so
        once per process); otherwise it is read on first use. ``knowledge`` holds the policy pages a
        refund's re-quote checks (default: the packaged knowledge base)."""
        self._engine = engine
        self.identity = identity
        self._ledger = ledger_id
        self._knowledge = knowledge

    @property
    def known_ledger_id(self) -> str | None:
        """The ledger id if this service was given it or has read it, without reading it now."""
        return self._ledger

    def ledger_id(self) -> str:
        """The id of this commerce database, created once by ``init``/seeding (it never changes)."""
        if self._ledger is None:
            with self._session() as session:
                row = session.get(LedgerRow, LEDGER_ROW)
            if row is None:
                raise TransientError("database_unavailable", "The commerce database has no ledger id; run init.")
            self._ledger = row.ledger_id
        return self._ledger

    # --- reads ---------------------------------------------------------------------------------

    def list_orders(self) -> OrderList:
        with self._session() as session:
            rows = session.exec(self._own_orders().order_by(col(OrderRow.order_id))).all()
        return OrderList(
            orders=[
                OrderSummary(
                    order_id=row.order_id,
                    sku=row.sku,
                    status=OrderStatus(row.status),
                    paid_items_cents=row.paid_items_cents,
                    refunded_cents=row.refunded_cents,
                )
                for row in rows
            ]
        )

    def get_order(self, order_id: str) -> Order:
        with self._session() as session:
            return self._read_order(session, order_id, record="order")

    def get_shipment(self, order_id: str) -> Shipment:
        with self._session() as session:
            order = self._own_order_row(session, order_id, record="shipment")
            events = session.exec(
                select(ShipmentEventRow)
                .where(ShipmentEventRow.order_id == order.order_id)
                .order_by(col(ShipmentEventRow.seq))
            ).all()
        return Shipment(
            order_id=order.order_id,
            carrier=order.carrier,
            tracking_number=order.tracking_number,
            status=OrderStatus(order.status),
            events=[
                ShipmentEvent(
                    at=event.at,
                    code=event.code,
                    description_en=event.description_en,
                    description_zh=event.description_zh,
                )
                for event in events
            ],
        )

    def get_invoice(self, order_id: str) -> Invoice:
        _require(ORDER_ID, order_id, "Order ids look like QH-1234.")
        with self._session() as session:
            invoice = session.exec(
                select(InvoiceRow)
                .join(OrderRow, col(OrderRow.order_id) == col(InvoiceRow.order_id))
                .where(*self._owned_by_identity(), OrderRow.order_id == order_id)
            ).first()
        if invoice is None:
            raise not_accessible("invoice")
        return Invoice.model_validate(invoice.model_dump())

    def get_product(self, sku: str) -> Product:
        _require(SKU, sku, "SKUs look like DESK-01.")
        with self._session() as session:
            product = session.get(ProductRow, sku)
        if product is None:
            raise error_from_code("product_not_found", "No product with this SKU exists.")
        return Product.model_validate(product.model_dump())

    def get_ticket(self, ticket_id: str) -> Ticket:
        _require(TICKET_ID, ticket_id, "Ticket ids look like TCK- followed by 16 hex characters.")
        with self._session() as session:
            ticket = session.exec(
                select(TicketRow).where(
                    TicketRow.ticket_id == ticket_id,
                    TicketRow.tenant == self.identity.tenant,
                    TicketRow.customer == self.identity.subject,
                )
            ).first()
        if ticket is None:
            raise not_accessible("ticket")
        return _ticket(ticket)

    # --- writes --------------------------------------------------------------------------------

    def create_ticket(self, order_id: str, text: str, idempotency_key: str) -> Ticket:
        """Open a ticket on one of the caller's orders, at most once per idempotency key.

        The same key with the same order and text returns the ticket created first; the same key
        with anything else is an ``idempotency_conflict``.
        """
        _require(IDEMPOTENCY_KEY, idempotency_key, "Idempotency keys are 1-128 of A-Z a-z 0-9 . _ : -.")
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TICKET_TEXT:
            raise _invalid(f"Ticket text must be 1 to {MAX_TICKET_TEXT} characters.")
        content_digest = canonical_digest({"order_id": order_id, "text": text})
        with self._session() as session:
            self._own_order_row(session, order_id, record="order")
            existing = self._ticket_by_key(session, idempotency_key)
            if existing is not None:
                return _same_ticket(existing, content_digest)
            row = TicketRow(
                ticket_id=ticket_id_for(self.identity, idempotency_key),
                tenant=self.identity.tenant,
                customer=self.identity.subject,
                order_id=order_id,
                idempotency_key=idempotency_key,
                text=text,
                content_digest=content_digest,
                created_at=datetime.now(UTC),
            )
            session.add(row)
            try:
                session.commit()
            except IntegrityError:
                session.rollback()
                twin = self._ticket_by_key(session, idempotency_key)
                if twin is None:
                    raise
                return _same_ticket(twin, content_digest)
            return _ticket(row)

    def execute_refund(self, approval: RefundApproval) -> RefundReceipt:
        """Pay an approved refund (simulated) exactly once per approval id.

        Order of checks: the idempotency record first (a repeat returns the original receipt), then
        the approval itself, then a fresh quote that must equal the approved one; only then one
        transaction stores the record and moves the balance, guarded by the approved order version.
        """
        with self._session() as session:
            recorded = session.get(RefundRow, approval.approval_id)
            if recorded is not None:
                return self._replay(recorded, approval)
            self._check_approval(approval)
            self._check_ledger(approval)
            if not self._quote_still_holds(session, approval):
                # A concurrent twin may have executed this very approval since the lookup above.
                return self._replay_or_quote_changed(session, approval)
            return self._record_refund(session, approval)

    # --- refund steps --------------------------------------------------------------------------

    def _replay(self, recorded: RefundRow, approval: RefundApproval) -> RefundReceipt:
        if (recorded.tenant, recorded.customer) != (self.identity.tenant, self.identity.subject):
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
        if (proposal.applicant, proposal.tenant) != (self.identity.subject, self.identity.tenant):
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
        if approval.proposal.ledger_id != self.ledger_id():
            raise error_from_code(
                "ledger_mismatch",
                "This proposal was quoted on another commerce ledger (or on none); it cannot be paid here.",
            )

    def _quote_still_holds(self, session: Session, approval: RefundApproval) -> bool:
        """Re-read the order and re-quote it: the approved proposal must be exactly today's quote."""
        proposal = approval.proposal
        knowledge = self._knowledge if self._knowledge is not None else default_knowledge_base()
        quote = calculate_refund_quote(
            self._read_order(session, proposal.order_id, record="order"),
            page_versions=policy_page_versions(knowledge),
        )
        approved = (proposal.order_version, proposal.amount_cents, proposal.currency, proposal.rule_version)
        quoted = (quote.order_version, quote.amount_cents, quote.currency, quote.rule_version)
        return quote.eligible and quoted == approved and quote.quote_id == proposal.quote_id

    def _record_refund(self, session: Session, approval: RefundApproval) -> RefundReceipt:
        """One transaction: the idempotency record and the guarded balance update, or neither."""
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
                return self._replay_or_quote_changed(session, approval)
            session.commit()
        except IntegrityError:
            session.rollback()
            return self._replay_or_quote_changed(session, approval)
        return _receipt(record)

    def _replay_or_quote_changed(self, session: Session, approval: RefundApproval) -> RefundReceipt:
        """The quote no longer holds: if this approval was executed meanwhile, that record decides."""
        session.expunge_all()
        recorded = session.get(RefundRow, approval.approval_id)
        if recorded is not None:
            return self._replay(recorded, approval)
        raise error_from_code("quote_changed", "The order or the refund rule changed since approval; quote again.")

    # --- helpers -------------------------------------------------------------------------------

    @contextmanager
    def _session(self) -> Iterator[Session]:
        """A session whose database failures surface as the transient ``database_unavailable``."""
        try:
            with Session(self._engine, expire_on_commit=False) as session:
                yield session
        except OperationalError as exc:
            raise TransientError("database_unavailable", "The commerce database is unavailable; try again.") from exc

    def _owned_by_identity(self) -> tuple[ColumnElement[bool], ...]:
        return (
            col(OrderRow.tenant) == self.identity.tenant,
            col(OrderRow.customer) == self.identity.subject,
        )

    def _own_orders(self) -> SelectOfScalar[OrderRow]:
        return select(OrderRow).where(*self._owned_by_identity())

    def _own_order_row(self, session: Session, order_id: str, *, record: str) -> OrderRow:
        _require(ORDER_ID, order_id, "Order ids look like QH-1234.")
        row = session.exec(self._own_orders().where(OrderRow.order_id == order_id)).first()
        if row is None:
            raise not_accessible(record)
        return row

    def _read_order(self, session: Session, order_id: str, *, record: str) -> Order:
        row = self._own_order_row(session, order_id, record=record)
        product = session.get(ProductRow, row.sku)
        if product is None:
            raise RuntimeError(f"order {row.order_id} names an unknown product")
        facts = {name: getattr(row, name) for name in Order.model_fields if name not in ("category", "ledger_id")}
        return Order.model_validate(facts | {"category": product.category, "ledger_id": self.ledger_id()})

    def _ticket_by_key(self, session: Session, idempotency_key: str) -> TicketRow | None:
        return session.exec(
            select(TicketRow).where(
                TicketRow.tenant == self.identity.tenant,
                TicketRow.customer == self.identity.subject,
                TicketRow.idempotency_key == idempotency_key,
            )
        ).first()


def _same_ticket(existing: TicketRow, content_digest: str) -> Ticket:
    if existing.content_digest != content_digest:
        raise error_from_code("idempotency_conflict", "This idempotency key was already used for a different ticket.")
    return _ticket(existing)


def _ticket(row: TicketRow) -> Ticket:
    return Ticket(
        ticket_id=row.ticket_id,
        order_id=row.order_id,
        text=row.text,
        idempotency_key=row.idempotency_key,
        created_at=row.created_at,
    )


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

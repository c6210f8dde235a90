"""The commerce business layer: scoped reads, idempotent tickets and the door to the approved refund.

A :class:`CommerceService` is bound to one identity. Every read filters by id AND tenant AND
owner, so another customer's record and a record that does not exist are indistinguishable: both
give the same code and the same message, and neither message repeats the requested id. The refund
itself (checks, idempotent record, replay, receipt) is paid by :mod:`commerce_server.refunds`; a case's
one decision (paid, or closed unpaid) is kept by :mod:`commerce_server.case_decisions`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from sqlalchemy import ColumnElement, Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

from commerce_server.action_closure import close_action_proposal
from commerce_server.action_execution import ActionExecutor
from commerce_server.action_preview import preview_action
from commerce_server.case_decisions import close_proposal
from commerce_server.db import (
    LEDGER_ROW,
    InvoiceRow,
    LedgerRow,
    OrderRow,
    ProductRow,
    ShipmentEventRow,
    TicketRow,
)
from commerce_server.keys import CommerceKeys
from commerce_server.metrics import count_action_executed, count_action_refused, count_refund_refused
from commerce_server.refunds import RefundSettlement
from contracts.actions import ActionClosure, ActionExecution, ActionProposal, ActionReceipt, ActionRequest
from contracts.commerce import (
    ORDER_ID_FORMAT,
    Invoice,
    Order,
    OrderList,
    OrderStatus,
    OrderSummary,
    Product,
    ProposalClosed,
    ProposalClosure,
    RefundApproval,
    RefundReceipt,
    Shipment,
    ShipmentEvent,
    Ticket,
    canonical_digest,
)
from contracts.errors import CommerceErrorCode, SupportError, TransientError, error_from_code
from contracts.identity import Identity
from contracts.tools import ToolName
from knowledge.store import KnowledgeBase

ORDER_ID = re.compile(ORDER_ID_FORMAT)
SKU = re.compile(r"^[A-Z]{2,8}-\d{2}$")
TICKET_ID = re.compile(r"^TCK-[0-9a-f]{16}$")
IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
MAX_TICKET_TEXT = 1500

_NOT_ACCESSIBLE = {
    "order": (CommerceErrorCode.ORDER_NOT_ACCESSIBLE, "No such order is available to this customer."),
    "shipment": (CommerceErrorCode.SHIPMENT_NOT_ACCESSIBLE, "No such shipment is available to this customer."),
    "invoice": (CommerceErrorCode.INVOICE_NOT_ACCESSIBLE, "No such invoice is available to this customer."),
    "ticket": (CommerceErrorCode.TICKET_NOT_ACCESSIBLE, "No such ticket is available to this customer."),
}


def not_accessible(record: str) -> SupportError:
    """The one error for a record that is missing or belongs to someone else."""
    return error_from_code(*_NOT_ACCESSIBLE[record])


def ticket_id_for(identity: Identity, idempotency_key: str) -> str:
    """Derived from the owner and the key, so a concurrent twin collides on the primary key."""
    material = "\x1f".join((identity.tenant, identity.subject, idempotency_key))
    return "TCK-" + hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def _invalid(message: str) -> SupportError:
    return error_from_code(CommerceErrorCode.INVALID_ARGUMENT, message)


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
        keys: CommerceKeys | None = None,
    ) -> None:
        """``ledger_id`` is the database's ledger when the caller already read it (the MCP server does so
        once per process); otherwise it is read on first use. ``knowledge`` holds the policy pages a
        refund's re-quote checks (default: the packaged knowledge base). ``keys`` are the public key
        set approvals are checked with and the receipt key (default: ``COMMERCE_PUBLIC_KEYS`` and
        ``COMMERCE_SIGNING_KEY``, else the demo keys under ``.state``), read on the first refund."""
        self._engine = engine
        self.identity = identity
        self._ledger = ledger_id
        self._knowledge = knowledge
        self._keys = keys if keys is not None else CommerceKeys.from_environment()

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
                raise TransientError(
                    CommerceErrorCode.DATABASE_UNAVAILABLE, "The commerce database has no ledger id; run init."
                )
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
            return self._read_order(session, order_id)

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
            raise error_from_code(CommerceErrorCode.PRODUCT_NOT_FOUND, "No product with this SKU exists.")
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
        """Pay a refund (simulated) on a reviewer's signed approval, exactly once per approval id and
        approval token id, in one session whose database failures surface as ``database_unavailable``;
        the steps are :meth:`commerce_server.refunds.RefundSettlement.execute`."""
        with self._session() as session:
            settlement = RefundSettlement(
                session,
                self.identity,
                ledger_id=self.ledger_id,
                read_order=self._read_order,
                knowledge=self._knowledge,
                keys=self._keys,
            )
            try:
                return settlement.execute(approval)
            except SupportError as refused:
                count_refund_refused(refused.code)
                raise

    def close_refund_proposal(self, closure: ProposalClosure) -> ProposalClosed:
        """Close a rejected or expired proposal: from now on no approval of its case is paid."""
        with self._session() as session:
            return close_proposal(session, self.identity, closure)

    def preview_action(self, request: ActionRequest) -> ActionProposal:
        """The exact effect of an action the tenant's policy allows, stored as a proposal
        (:mod:`commerce_server.action_preview`)."""
        try:
            with self._session() as session:
                return preview_action(
                    session,
                    self.identity,
                    request,
                    directory=self._keys.directory(),
                    ledger_id=self.ledger_id(),
                    read_order=self._read_order,
                    now=datetime.now(UTC),
                    knowledge=self._knowledge,
                )
        except SupportError as refused:
            count_action_refused(ToolName.PREVIEW_ACTION, refused.code)
            raise

    def execute_action(self, execution: ActionExecution, *, token_case: str | None = None) -> ActionReceipt:
        """Execute an agreed proposal once (:mod:`commerce_server.action_execution`); ``token_case``: the
        case an HTTP bearer token was issued for (its proposals only)."""
        with self._session() as session:
            executor = ActionExecutor(
                session,
                self.identity,
                keys=self._keys,
                ledger_id=self.ledger_id,
                read_order=self._read_order,
                now=datetime.now(UTC),
                knowledge=self._knowledge,
            )
            try:
                receipt = executor.execute(execution, token_case=token_case)
            except SupportError as refused:
                count_action_refused(ToolName.EXECUTE_ACTION, refused.code)
                raise
        if not receipt.replay:
            count_action_executed(self.identity.tenant, receipt.kind)
        return receipt

    def close_action_proposal(self, closure: ActionClosure, *, token_case: str | None = None) -> ProposalClosed:
        """Close a rejected, expired or withdrawn action proposal: from now on nothing of its case executes
        (:mod:`commerce_server.action_closure`)."""
        with self._session() as session:
            return close_action_proposal(session, self.identity, closure, token_case=token_case)

    # --- helpers -------------------------------------------------------------------------------

    @contextmanager
    def _session(self) -> Iterator[Session]:
        """A session whose database failures surface as the transient ``database_unavailable``."""
        try:
            with Session(self._engine, expire_on_commit=False) as session:
                yield session
        except OperationalError as exc:
            raise TransientError(
                CommerceErrorCode.DATABASE_UNAVAILABLE, "The commerce database is unavailable; try again."
            ) from exc

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

    def _read_order(self, session: Session, order_id: str) -> Order:
        row = self._own_order_row(session, order_id, record="order")
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
        raise error_from_code(
            CommerceErrorCode.IDEMPOTENCY_CONFLICT, "This idempotency key was already used for a different ticket."
        )
    return _ticket(existing)


def _ticket(row: TicketRow) -> Ticket:
    return Ticket(
        ticket_id=row.ticket_id,
        order_id=row.order_id,
        text=row.text,
        idempotency_key=row.idempotency_key,
        created_at=row.created_at,
    )

"""The commerce database: SQLModel tables, the database URL and the engine.

SQLite (one file under the state dir) is the default; any SQLAlchemy URL works, and production
uses PostgreSQL (``postgresql+psycopg://...``) through ``COMMERCE_DATABASE_URL``.
"""

from __future__ import annotations

import os
from datetime import date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, String, Table, TypeDecorator, UniqueConstraint, event
from sqlmodel import Field, Session, SQLModel, create_engine

from commerce_server.tokens import DATABASE_URL_ENV

SQLITE_BUSY_TIMEOUT_SECONDS = 30


class IsoDateTime(TypeDecorator[datetime]):
    """A timezone-aware timestamp stored as ISO 8601 text, offset included.

    SQLite has no timezone-aware type and PostgreSQL's ``timestamptz`` forgets the authored offset;
    text keeps ``2026-09-05T14:00:00+08:00`` exactly as written, on both.
    """

    impl = String(40)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> str | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("commerce timestamps must be timezone-aware")
        return value.isoformat()

    def process_result_value(self, value: str | None, dialect: Any) -> datetime | None:
        return None if value is None else datetime.fromisoformat(value)


class ProductRow(SQLModel, table=True):
    __tablename__ = "products"

    sku: str = Field(primary_key=True, max_length=32)
    name_en: str
    name_zh: str
    category: str = Field(max_length=16)
    warranty_months: int


class ProductVariantRow(SQLModel, table=True):
    """A product's place in its family of variants, its list price and whether it is on sale (what an
    exchange may swap an item for). A product without a row has no variants."""

    __tablename__ = "product_variants"

    sku: str = Field(primary_key=True, foreign_key="products.sku", max_length=32)
    family: str = Field(index=True, max_length=32)
    label_en: str = Field(max_length=40)
    label_zh: str = Field(max_length=40)
    list_cents: int
    available: bool


class OrderRow(SQLModel, table=True):
    """One order line with its balances; ``version`` goes up with every change to them."""

    __tablename__ = "orders"

    order_id: str = Field(primary_key=True, max_length=16)
    tenant: str = Field(index=True, max_length=32)
    customer: str = Field(index=True, max_length=32)
    sku: str = Field(foreign_key="products.sku", max_length=32)
    status: str = Field(max_length=16)
    quantity: int
    currency: str = Field(max_length=3)
    list_cents: int
    discount_cents: int
    paid_items_cents: int
    freight_cents: int
    refunded_cents: int
    ordered_on: date
    delivered_on: date | None = None
    return_received: bool
    carrier: str | None = None
    tracking_number: str | None = None
    version: int


class AddressColumns(SQLModel):
    """The columns of a delivery address (:class:`contracts.actions.Address`), in every table holding one."""

    recipient: str = Field(max_length=80)
    phone: str = Field(max_length=20)
    line1: str = Field(max_length=120)
    city: str = Field(max_length=60)
    postcode: str = Field(max_length=10)
    country: str = Field(max_length=2)


class ShippingAddressRow(AddressColumns, table=True):
    """Where an order is delivered. The ledger owns it once it is there: an address change moves it, and
    seeding or an import never overwrites it."""

    __tablename__ = "shipping_addresses"

    order_id: str = Field(primary_key=True, foreign_key="orders.order_id", max_length=16)


class CustomerAccountRow(AddressColumns, table=True):
    """A customer's account record at the merchant: the default delivery address new orders use.
    ``version`` goes up with every change; a ``change_default_address`` action needs it unchanged."""

    __tablename__ = "customer_accounts"

    tenant: str = Field(primary_key=True, max_length=32)
    customer: str = Field(primary_key=True, max_length=32)
    currency: str = Field(max_length=3)
    version: int


class ShipmentEventRow(SQLModel, table=True):
    __tablename__ = "shipment_events"
    __table_args__ = (UniqueConstraint("order_id", "seq"),)

    id: int | None = Field(default=None, primary_key=True)
    order_id: str = Field(foreign_key="orders.order_id", index=True, max_length=16)
    seq: int
    at: datetime = Field(sa_type=IsoDateTime)
    code: str = Field(max_length=32)
    description_en: str
    description_zh: str


class InvoiceRow(SQLModel, table=True):
    __tablename__ = "invoices"

    invoice_id: str = Field(primary_key=True, max_length=32)
    order_id: str = Field(foreign_key="orders.order_id", unique=True, max_length=16)
    state: str = Field(max_length=16)
    paid_items_cents: int
    freight_cents: int
    total_cents: int
    currency: str = Field(max_length=3)
    issued_on: date


class TicketRow(SQLModel, table=True):
    """A support ticket; one per (tenant, customer, idempotency key)."""

    __tablename__ = "tickets"
    __table_args__ = (UniqueConstraint("tenant", "customer", "idempotency_key"),)

    ticket_id: str = Field(primary_key=True, max_length=32)
    tenant: str = Field(max_length=32)
    customer: str = Field(max_length=32)
    order_id: str = Field(foreign_key="orders.order_id", max_length=16)
    idempotency_key: str = Field(max_length=128)
    text: str
    content_digest: str = Field(max_length=64)
    created_at: datetime = Field(sa_type=IsoDateTime)


class RefundRow(SQLModel, table=True):
    """The idempotency record of one executed refund: its primary key is the approval id."""

    __tablename__ = "refunds"

    approval_id: str = Field(primary_key=True, max_length=200)
    digest: str = Field(max_length=64)
    tenant: str = Field(max_length=32)
    customer: str = Field(max_length=32)
    order_id: str = Field(foreign_key="orders.order_id", index=True, max_length=16)
    case_id: str
    reviewer: str = Field(max_length=32)
    receipt_id: str = Field(unique=True, max_length=32)
    amount_cents: int
    currency: str = Field(max_length=3)
    order_version_after: int
    created_at: datetime = Field(sa_type=IsoDateTime)


class ApprovalUseRow(SQLModel, table=True):
    """One approval token id, consumed by the refund it paid: written in the refund's transaction and
    never pruned, so a signed approval pays once, whatever approval id it is presented with. It also
    keeps what the signed receipt states beyond the refund row (a table of its own, so existing
    databases pick it up through ``create_all``)."""

    __tablename__ = "approval_uses"

    jti: str = Field(primary_key=True, max_length=100)
    approval_id: str = Field(foreign_key="refunds.approval_id", unique=True, max_length=200)
    receipt_id: str = Field(unique=True, max_length=32)
    reviewer: str = Field(max_length=32)
    order_version_before: int
    refunded_cents_after: int
    created_at: datetime = Field(sa_type=IsoDateTime)


class CoApprovalUseRow(SQLModel, table=True):
    """A further reviewer's approval token id, consumed with the refund it co-approved (four-eyes):
    written in the refund's transaction and never pruned, so it too pays once."""

    __tablename__ = "co_approval_uses"

    jti: str = Field(primary_key=True, max_length=100)
    approval_id: str = Field(foreign_key="refunds.approval_id", max_length=200)
    reviewer: str = Field(max_length=32)
    created_at: datetime = Field(sa_type=IsoDateTime)


class CaseDecisionRow(SQLModel, table=True):
    """The one decision this ledger holds for a case's refund: paid (written in the refund's
    transaction), or closed as rejected or expired by the case's workflow. Keyed by case id, so a
    case is paid at most once and a closed case never: every approval presented for it afterwards,
    by whatever run and with whatever token, is refused."""

    __tablename__ = "case_decisions"

    case_id: str = Field(primary_key=True, max_length=80)
    tenant: str = Field(max_length=32)
    customer: str = Field(max_length=32)
    outcome: str = Field(max_length=16)
    """``paid``, ``rejected`` or ``expired``."""
    digest: str = Field(max_length=64)
    approval_id: str | None = Field(default=None, max_length=200)
    """The approval that paid (``paid`` only)."""
    decided_at: datetime = Field(sa_type=IsoDateTime)


class ActionProposalRow(SQLModel, table=True):
    """An action proposal as ``preview_action`` computed it (``body``: the proposal's JSON, digest included)."""

    __tablename__ = "action_proposals"

    proposal_id: str = Field(primary_key=True, max_length=32)
    tenant: str = Field(max_length=32)
    customer: str = Field(max_length=32)
    case_id: str = Field(max_length=80)
    kind: str = Field(max_length=32)
    order_id: str | None = Field(default=None, foreign_key="orders.order_id", max_length=16)
    """None for an action on the customer's account (:mod:`commerce_server.schema_upgrade` relaxes a
    database created when every proposal named an order)."""
    digest: str = Field(max_length=64)
    body: str
    created_at: datetime = Field(sa_type=IsoDateTime)


class ActionExecutionRow(SQLModel, table=True):
    """The one execution of a proposal and its idempotency record: claimed (``in_flight``) before the
    checks, completed (``done``, with its receipt) in the action's own transaction, deleted when the
    request is refused (a refusal is never cached)."""

    __tablename__ = "action_executions"
    __table_args__ = (UniqueConstraint("tenant", "customer", "idempotency_key"),)

    proposal_id: str = Field(primary_key=True, foreign_key="action_proposals.proposal_id", max_length=32)
    tenant: str = Field(max_length=32)
    customer: str = Field(max_length=32)
    kind: str = Field(max_length=32)
    idempotency_key: str = Field(max_length=128)
    body_digest: str = Field(max_length=64)
    state: str = Field(max_length=16)
    """``in_flight`` or ``done``."""
    claimed_at: datetime = Field(sa_type=IsoDateTime)
    executed_at: datetime | None = Field(default=None, sa_type=IsoDateTime)
    refund_cents: int = 0
    receipt: str | None = None
    """The signed receipt's JSON (``done`` only): a replay answers it again."""


class ReturnRow(SQLModel, table=True):
    """A return opened by a ``return_items`` action: the units on their way back and the refund due once the
    warehouse checks them in. One per order (written in the action's transaction)."""

    __tablename__ = "returns"

    order_id: str = Field(primary_key=True, foreign_key="orders.order_id", max_length=16)
    proposal_id: str = Field(foreign_key="action_proposals.proposal_id", unique=True, max_length=32)
    units: int
    refund_due_cents: int
    currency: str = Field(max_length=3)
    opened_at: datetime = Field(sa_type=IsoDateTime)


class ExchangeRow(SQLModel, table=True):
    """An exchange opened by an ``exchange_items`` action: the variant going back, the one coming out and
    the price difference settled on check-in (above 0 charged, below 0 refunded). One per order."""

    __tablename__ = "exchanges"

    order_id: str = Field(primary_key=True, foreign_key="orders.order_id", max_length=16)
    proposal_id: str = Field(foreign_key="action_proposals.proposal_id", unique=True, max_length=32)
    sku_before: str = Field(foreign_key="products.sku", max_length=32)
    sku_after: str = Field(foreign_key="products.sku", max_length=32)
    units: int
    difference_cents: int
    currency: str = Field(max_length=3)
    opened_at: datetime = Field(sa_type=IsoDateTime)


class ActionCredentialUseRow(SQLModel, table=True):
    """A confirmation or approval token id consumed by the action it agreed to: written in the action's
    transaction and never pruned, so a token agrees once."""

    __tablename__ = "action_credential_uses"

    jti: str = Field(primary_key=True, max_length=100)
    proposal_id: str = Field(foreign_key="action_proposals.proposal_id", max_length=32)
    subject: str = Field(max_length=32)
    used_at: datetime = Field(sa_type=IsoDateTime)


class LedgerRow(SQLModel, table=True):
    """The one row that names this commerce database: created once, never changed."""

    __tablename__ = "ledger"

    name: str = Field(primary_key=True, max_length=16)
    ledger_id: str = Field(max_length=64)
    created_at: datetime = Field(sa_type=IsoDateTime)


LEDGER_ROW = "commerce"

_TABLE_MODELS: tuple[type[SQLModel], ...] = (
    ProductRow,
    ProductVariantRow,
    OrderRow,
    ShippingAddressRow,
    CustomerAccountRow,
    ShipmentEventRow,
    InvoiceRow,
    TicketRow,
    RefundRow,
    ApprovalUseRow,
    CoApprovalUseRow,
    CaseDecisionRow,
    ActionProposalRow,
    ActionExecutionRow,
    ActionCredentialUseRow,
    ReturnRow,
    ExchangeRow,
    LedgerRow,
)

COMMERCE_TABLES: tuple[Table, ...] = tuple(
    # sqlmodel's SQLModel declares __tablename__ but not the __table__ every table=True model has at runtime.
    model.__table__  # type: ignore[attr-defined]
    for model in _TABLE_MODELS
)


def database_url(state_dir: str | Path) -> str:
    """``COMMERCE_DATABASE_URL`` when set, else a SQLite file in the state dir."""
    configured = os.environ.get(DATABASE_URL_ENV, "").strip()
    if configured:
        return configured
    return f"sqlite:///{Path(state_dir).resolve() / 'commerce.db'}"


def make_engine(url: str, **engine_options: Any) -> Engine:
    """An engine for ``url``; SQLite gets WAL and a busy timeout so concurrent writers wait."""
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True, **engine_options)

    engine = create_engine(
        url,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
        **engine_options,
    )

    @event.listens_for(engine, "connect")
    def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_SECONDS * 1000}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def create_schema(engine: Engine) -> None:
    """Create the commerce tables that do not exist yet (never alters or drops anything)."""
    SQLModel.metadata.create_all(engine, tables=list(COMMERCE_TABLES))


def read_ledger_id(engine: Engine) -> str | None:
    """This database's ledger id, or None before ``init`` (seeding) created it."""
    with Session(engine) as session:
        row = session.get(LedgerRow, LEDGER_ROW)
        return row.ledger_id if row else None

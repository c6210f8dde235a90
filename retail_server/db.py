"""The retail server's database: the τ²-bench retail domain's catalogue, customers and orders, and the
proposals made on them, as SQLModel tables.

Money is integer cents. Every list of the domain keeps its order (a ``position`` column), because the
domain's own hash reads lists in order. SQLite (``retail.db`` under the state dir) is the default;
``RETAIL_DATABASE_URL`` names any SQLAlchemy URL (PostgreSQL: ``postgresql+psycopg://...``).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from sqlalchemy import Engine, Table, Text
from sqlmodel import Field, SQLModel

from commerce_server.db import IsoDateTime

DATABASE_URL_ENV = "RETAIL_DATABASE_URL"


class RetailProductRow(SQLModel, table=True):
    __tablename__ = "retail_products"

    product_id: str = Field(primary_key=True, max_length=16)
    name: str = Field(max_length=100)
    position: int


class RetailVariantRow(SQLModel, table=True):
    __tablename__ = "retail_variants"

    item_id: str = Field(primary_key=True, max_length=16)
    product_id: str = Field(foreign_key="retail_products.product_id", index=True, max_length=16)
    options_json: str = Field(sa_type=Text)
    available: bool
    price_cents: int
    position: int


class RetailUserRow(SQLModel, table=True):
    """A customer of the retail tenant; ``version`` goes up with every change to them or their cards."""

    __tablename__ = "retail_users"

    user_id: str = Field(primary_key=True, max_length=32)
    first_name: str = Field(max_length=60)
    last_name: str = Field(max_length=60)
    email: str = Field(index=True, max_length=120)
    address1: str = Field(max_length=200)
    address2: str = Field(max_length=200)
    city: str = Field(max_length=100)
    country: str = Field(max_length=100)
    state: str = Field(max_length=100)
    zip: str = Field(index=True, max_length=20)
    position: int
    version: int = 1


class RetailPaymentMethodRow(SQLModel, table=True):
    __tablename__ = "retail_payment_methods"

    user_id: str = Field(primary_key=True, foreign_key="retail_users.user_id", max_length=32)
    payment_method_id: str = Field(primary_key=True, max_length=40)
    source: str = Field(max_length=16)
    brand: str | None = Field(default=None, max_length=20)
    last_four: str | None = Field(default=None, max_length=4)
    balance_cents: int | None = None
    """A gift card's balance (None for a card or a PayPal account)."""
    position: int


class RetailOrderRow(SQLModel, table=True):
    """One order; ``version`` goes up with every change to it, its lines or its payments."""

    __tablename__ = "retail_orders"

    order_id: str = Field(primary_key=True, max_length=16)
    user_id: str = Field(foreign_key="retail_users.user_id", index=True, max_length=32)
    user_position: int
    """The order's place in its customer's list of orders."""
    address1: str = Field(max_length=200)
    address2: str = Field(max_length=200)
    city: str = Field(max_length=100)
    country: str = Field(max_length=100)
    state: str = Field(max_length=100)
    zip: str = Field(max_length=20)
    status: str = Field(max_length=32)
    cancel_reason: str | None = Field(default=None, max_length=40)
    exchange_items_json: str | None = Field(default=None, sa_type=Text)
    exchange_new_items_json: str | None = Field(default=None, sa_type=Text)
    exchange_payment_method_id: str | None = Field(default=None, max_length=40)
    exchange_price_difference_cents: int | None = None
    return_items_json: str | None = Field(default=None, sa_type=Text)
    return_payment_method_id: str | None = Field(default=None, max_length=40)
    position: int
    version: int = 1


class RetailOrderItemRow(SQLModel, table=True):
    __tablename__ = "retail_order_items"

    order_id: str = Field(primary_key=True, foreign_key="retail_orders.order_id", max_length=16)
    position: int = Field(primary_key=True)
    name: str = Field(max_length=100)
    product_id: str = Field(max_length=16)
    item_id: str = Field(max_length=16)
    price_cents: int
    options_json: str = Field(sa_type=Text)


class RetailFulfillmentRow(SQLModel, table=True):
    __tablename__ = "retail_fulfillments"

    order_id: str = Field(primary_key=True, foreign_key="retail_orders.order_id", max_length=16)
    position: int = Field(primary_key=True)
    tracking_ids_json: str = Field(sa_type=Text)
    item_ids_json: str = Field(sa_type=Text)


class RetailPaymentRow(SQLModel, table=True):
    """One entry of an order's payment history."""

    __tablename__ = "retail_payments"

    order_id: str = Field(primary_key=True, foreign_key="retail_orders.order_id", max_length=16)
    position: int = Field(primary_key=True)
    transaction_type: str = Field(max_length=8)
    amount_cents: int
    payment_method_id: str = Field(max_length=40)


class RetailProposalRow(SQLModel, table=True):
    """A proposed write: its whole proposal as JSON; once executed, the request that executed it and the
    receipt, so a repeated request answers the same receipt and another body is a conflict."""

    __tablename__ = "retail_proposals"

    proposal_id: str = Field(primary_key=True, max_length=32)
    case_id: str = Field(index=True, max_length=80)
    customer: str = Field(max_length=32)
    kind: str = Field(max_length=40)
    digest: str = Field(max_length=64)
    proposal_json: str = Field(sa_type=Text)
    created_at: datetime = Field(sa_type=IsoDateTime)
    idempotency_key: str | None = Field(default=None, unique=True, max_length=128)
    execution_digest: str | None = Field(default=None, max_length=64)
    receipt_json: str | None = Field(default=None, sa_type=Text)
    executed_at: datetime | None = Field(default=None, sa_type=IsoDateTime, index=True)
    moved_cents: int = 0
    """The money the executed write moved (refunded and charged): what a rule's 30-day cap counts."""


class RetailCredentialUseRow(SQLModel, table=True):
    """A confirmation or approval token id consumed by the write it agreed to: a token agrees once."""

    __tablename__ = "retail_credential_uses"

    jti: str = Field(primary_key=True, max_length=100)
    proposal_id: str = Field(foreign_key="retail_proposals.proposal_id", max_length=32)
    used_at: datetime = Field(sa_type=IsoDateTime)


_TABLE_MODELS: tuple[type[SQLModel], ...] = (
    RetailProductRow,
    RetailVariantRow,
    RetailUserRow,
    RetailPaymentMethodRow,
    RetailOrderRow,
    RetailOrderItemRow,
    RetailFulfillmentRow,
    RetailPaymentRow,
    RetailProposalRow,
    RetailCredentialUseRow,
)
RETAIL_TABLES: tuple[Table, ...] = tuple(
    model.__table__  # type: ignore[attr-defined]
    for model in _TABLE_MODELS
)
DOMAIN_MODELS: tuple[type[SQLModel], ...] = _TABLE_MODELS[:8]
"""The domain's own records (what τ²-bench's hash covers), parents first, without the proposals made on them."""


def retail_database_url(state_dir: str | Path) -> str:
    """``RETAIL_DATABASE_URL`` when set, else a SQLite file in the state dir."""
    configured = os.environ.get(DATABASE_URL_ENV, "").strip()
    if configured:
        return configured
    return f"sqlite:///{Path(state_dir).resolve() / 'retail.db'}"


def create_retail_schema(engine: Engine) -> None:
    """Create the retail tables that do not exist yet (never alters or drops anything)."""
    SQLModel.metadata.create_all(engine, tables=list(RETAIL_TABLES))

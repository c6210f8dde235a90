"""Load the fictional fixture into the commerce database, inserting missing rows only.

Seeding is safe to repeat and safe on a live database: a row that exists is never touched, so
refunded balances, versions, receipts and tickets survive every ``init``.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel

from commerce_server.db import (
    LEDGER_ROW,
    CustomerAccountRow,
    InvoiceRow,
    LedgerRow,
    OrderRow,
    ProductRow,
    ProductVariantRow,
    ShipmentEventRow,
    ShippingAddressRow,
    create_schema,
    read_ledger_id,
)
from commerce_server.schema_upgrade import upgrade_schema

FIXTURE_PATH = Path(__file__).with_name("fixtures") / "commerce.json"
_SEED_ATTEMPTS = 3

# Each fixture table with the columns that identify a row, parents before children.
_TABLE_KEYS: tuple[tuple[str, type[SQLModel], tuple[str, ...]], ...] = (
    ("products", ProductRow, ("sku",)),
    ("product_variants", ProductVariantRow, ("sku",)),
    ("orders", OrderRow, ("order_id",)),
    ("shipping_addresses", ShippingAddressRow, ("order_id",)),
    ("customer_accounts", CustomerAccountRow, ("tenant", "customer")),
    ("invoices", InvoiceRow, ("invoice_id",)),
    ("shipment_events", ShipmentEventRow, ("order_id", "seq")),
)


@dataclass(frozen=True)
class SeedReport:
    """How many fixture rows were inserted, and how many were already there, per table."""

    inserted: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)

    def sentence(self) -> str:
        """One line for a person: what was added, what was already there (``init`` never resets)."""
        added = sum(self.inserted.values())
        kept = sum(self.present.values())
        if not added:
            return f"all {kept} fixture rows were already there (nothing reset)"
        tables = ", ".join(f"{count} {table}" for table, count in self.inserted.items() if count)
        kept_text = f"; {kept} already there, kept as they were" if kept else ""
        return f"added {added} fixture rows ({tables}){kept_text}"


@lru_cache(maxsize=1)
def load_fixture() -> dict[str, Any]:
    fixture = json.loads(FIXTURE_PATH.read_text(encoding="utf-8"))
    if fixture.get("fictional") is not True:
        raise ValueError(f"{FIXTURE_PATH} is not marked fictional; refusing to load it")
    return fixture


def fixture_rows(fixture: dict[str, Any]) -> dict[str, list[SQLModel]]:
    """The fixture as table rows, keyed by table name."""
    rows: dict[str, list[SQLModel]] = {
        "products": [ProductRow.model_validate(product) for product in fixture["products"]],
        "product_variants": [ProductVariantRow.model_validate(variant) for variant in fixture.get("variants", [])],
        "orders": [],
        "shipping_addresses": [],
        "customer_accounts": [
            CustomerAccountRow.model_validate(account.pop("default_address") | account | {"version": 1})
            for account in (dict(account) for account in fixture.get("accounts", []))
        ],
        "invoices": [],
        "shipment_events": [],
    }
    for order in fixture["orders"]:
        shipment = order["shipment"]
        rows["orders"].append(
            OrderRow.model_validate(
                {key: value for key, value in order.items() if key not in ("shipment", "invoice", "shipping_address")}
                | {"carrier": shipment["carrier"], "tracking_number": shipment["tracking_number"]}
            )
        )
        if order.get("shipping_address") is not None:
            rows["shipping_addresses"].append(
                ShippingAddressRow.model_validate(order["shipping_address"] | {"order_id": order["order_id"]})
            )
        rows["invoices"].append(
            InvoiceRow.model_validate(order["invoice"] | {"order_id": order["order_id"], "currency": order["currency"]})
        )
        rows["shipment_events"].extend(
            ShipmentEventRow.model_validate(event | {"order_id": order["order_id"], "seq": seq})
            for seq, event in enumerate(shipment["events"])
        )
    return rows


def seed_fixture(engine: Engine) -> SeedReport:
    """Create missing tables, upgrade what an earlier release declared differently
    (:mod:`commerce_server.schema_upgrade`) and insert the fixture rows that are missing; touch nothing else.

    Two processes seeding at once may collide on a primary key; the loser retries and then finds
    every row present.
    """
    create_schema(engine)
    upgrade_schema(engine)
    ensure_ledger(engine)
    for attempt in range(1, _SEED_ATTEMPTS + 1):
        try:
            return _insert_missing(engine, fixture_rows(load_fixture()))
        except IntegrityError:
            if attempt == _SEED_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def ensure_ledger(engine: Engine) -> str:
    """This database's ledger id: created once (``L-`` and 16 random hex characters), then only read.

    Two processes creating it at once collide on the row's fixed key; the loser reads the winner's id.
    """
    existing = read_ledger_id(engine)
    if existing is not None:
        return existing
    with Session(engine) as session:
        row = LedgerRow(name=LEDGER_ROW, ledger_id=f"L-{secrets.token_hex(8)}", created_at=datetime.now(UTC))
        session.add(row)
        try:
            session.commit()
            return row.ledger_id
        except IntegrityError:
            session.rollback()
    winner = read_ledger_id(engine)
    if winner is None:
        raise RuntimeError("the commerce ledger row vanished while it was being created")
    return winner


def _insert_missing(engine: Engine, rows: dict[str, list[SQLModel]]) -> SeedReport:
    with Session(engine) as session:
        report = insert_missing_rows(session, rows)
        session.commit()
    return report


def insert_missing_rows(session: Session, rows: dict[str, list[SQLModel]]) -> SeedReport:
    """Add the rows (as :func:`fixture_rows` builds them) whose keys are not in the database yet, parents
    before children, without committing: the caller's transaction decides (seeding, and the tenant
    import of :mod:`commerce_server.importer`)."""
    inserted: dict[str, int] = {}
    present: dict[str, int] = {}
    for table, model, key_columns in _TABLE_KEYS:
        columns = [getattr(model, name) for name in key_columns]
        existing = {tuple(key) for key in session.execute(select(*columns))}
        table_rows = rows[table]
        missing = [row for row in table_rows if tuple(getattr(row, name) for name in key_columns) not in existing]
        session.add_all(missing)
        session.flush()
        inserted[table] = len(missing)
        present[table] = len(table_rows) - len(missing)
    return SeedReport(inserted=inserted, present=present)

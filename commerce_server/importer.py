"""Import one tenant's catalogue, orders and customer accounts from a JSON file into the commerce database.

The file mirrors the fixture (``commerce_server/fixtures/commerce.json``): products, orders that each
carry their shipment (with its events) and their invoice, and optionally the customers' accounts with
their default delivery address; a top-level ``tenant`` names the one tenant every order and account
belongs to. :func:`load_import_file` refuses a file with a typed error naming its first problem;
:func:`import_tenant_data` inserts what is missing in one transaction and refuses, before writing
anything, a row that exists with other content or an order id another tenant owns.
What the ledger itself changes after an import (an order's ``refunded_cents`` and ``version``, moved by
a paid refund; an order's delivery address and an account's default one, moved by an action) is not
compared, so importing the same file again stays a no-op after them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StrictBool, ValidationError
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel, col, select

from commerce_server.db import InvoiceRow, OrderRow, ProductRow, ShipmentEventRow
from commerce_server.seed import fixture_rows, insert_missing_rows, seed_fixture
from commerce_server.service import SKU
from contracts.actions import Address
from contracts.commerce import ORDER_ID_FORMAT, InvoiceState, OrderStatus, ProductCategory
from contracts.directory import NAME_PATTERN
from contracts.errors import BusinessError, ContractError

MAX_FILE_BYTES = 32 * 1024 * 1024
_IMPORT_ATTEMPTS = 3
_LEDGER_OWNED = frozenset({"refunded_cents", "version"})
"""Order columns a paid refund moves after the import: never compared with the file."""

Cents = Annotated[int, Field(strict=True, ge=0)]
"""Money: a whole number of cents (``12900`` is CNY 129.00); ``129.0`` and ``"12900"`` are refused."""
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
"""A tenant or a customer (a directory subject): ``east``, ``ana``."""
Text = Annotated[str, Field(min_length=1, max_length=500)]


class ImportErrorCode(StrEnum):
    IMPORT_FILE_INVALID = "import_file_invalid"
    IMPORT_CONFLICT = "import_conflict"


class ImportFileError(ContractError):
    """The import file cannot be read or is not a valid import of one tenant (nothing was written)."""

    def __init__(self, message: str) -> None:
        super().__init__(ImportErrorCode.IMPORT_FILE_INVALID, message)


class ImportConflict(BusinessError):
    """A row of the file exists with other content, or belongs to another tenant (nothing was written)."""

    def __init__(self, message: str) -> None:
        super().__init__(ImportErrorCode.IMPORT_CONFLICT, message)


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ImportProduct(_Strict):
    sku: str = Field(pattern=SKU.pattern)
    name_en: Text
    name_zh: Text
    category: ProductCategory
    warranty_months: int = Field(strict=True, ge=0, le=240)


class ImportShipmentEvent(_Strict):
    at: AwareDatetime
    code: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")
    description_en: Text
    description_zh: Text


class ImportShipment(_Strict):
    carrier: str | None = Field(default=None, min_length=1, max_length=64)
    tracking_number: str | None = Field(default=None, min_length=1, max_length=64)
    events: list[ImportShipmentEvent] = Field(default_factory=list, max_length=50)


class ImportInvoice(_Strict):
    invoice_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$")
    state: InvoiceState
    paid_items_cents: Cents
    freight_cents: Cents
    total_cents: Cents
    issued_on: date


class ImportOrder(_Strict):
    order_id: str = Field(pattern=ORDER_ID_FORMAT)
    tenant: Name
    customer: Name
    sku: str
    status: OrderStatus
    quantity: int = Field(strict=True, ge=1)
    currency: Literal["CNY"]
    list_cents: Cents
    discount_cents: Cents
    paid_items_cents: Cents
    freight_cents: Cents
    refunded_cents: Cents = 0
    ordered_on: date
    delivered_on: date | None = None
    return_received: StrictBool = False
    shipment: ImportShipment
    invoice: ImportInvoice
    shipping_address: Address | None = None
    """Where the order is delivered (an address change needs one). Once imported the ledger owns it: a
    later import never changes it, and does not compare it."""


class ImportAccount(_Strict):
    customer: Name
    default_address: Address
    """Where the customer's new orders go (``change_default_address`` changes it). Once imported the ledger
    owns it: a later import never changes it, and does not compare it."""


class ImportFile(_Strict):
    """One tenant's products, orders and customer accounts, as an import file states them."""

    tenant: Name
    currency: Literal["CNY"]
    """The one currency of the service today (every amount and message is CNY)."""
    fictional: StrictBool = False
    notice: str = Field(default="", max_length=500)
    products: list[ImportProduct] = Field(min_length=1)
    orders: list[ImportOrder] = Field(min_length=1)
    accounts: list[ImportAccount] = Field(default_factory=list)

    def table_rows(self) -> dict[str, list[SQLModel]]:
        """The file as database rows, built exactly as the fixture's are (every order at version 1)."""
        document = self.model_dump(mode="json")
        document["orders"] = [order | {"version": 1} for order in document["orders"]]
        owner = {"tenant": self.tenant, "currency": self.currency}
        document["accounts"] = [account | owner for account in document["accounts"]]
        return fixture_rows(document)


@dataclass(frozen=True)
class ImportReport:
    """How many rows of one tenant's file were inserted, and how many were already there, per table."""

    tenant: str
    inserted: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)

    def sentence(self) -> str:
        """One line for a person: what was added for the tenant, what was already there."""
        added = sum(self.inserted.values())
        kept = sum(self.present.values())
        if not added:
            return f"tenant {self.tenant}: all {kept} rows of the file were already there (nothing changed)"
        tables = ", ".join(f"{count} {table}" for table, count in self.inserted.items() if count)
        kept_text = f"; {kept} already there, kept as they were" if kept else ""
        return f"tenant {self.tenant}: added {added} rows ({tables}){kept_text}"


def load_import_file(path: str | Path) -> ImportFile:
    """The file at ``path``, validated; :class:`ImportFileError` names the first problem."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ImportFileError(f"{path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ImportFileError(f"cannot read {path}: {error.strerror or type(error).__name__}") from None
    except UnicodeDecodeError:
        raise ImportFileError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise ImportFileError(f"{path}: not JSON: {error.msg} (line {error.lineno}, column {error.colno})") from None
    return parse_import(document, source=str(path))


def parse_import(document: Any, *, source: str = "import") -> ImportFile:
    """``document`` (parsed JSON) validated as an import file; ``source`` prefixes every message."""
    try:
        data = ImportFile.model_validate(document)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        raise ImportFileError(f"{source}: {_location(first['loc'])}: {first['msg']}") from None
    problem = _first_inconsistency(data)
    if problem is not None:
        raise ImportFileError(f"{source}: {problem}")
    return data


def import_tenant_data(engine: Engine, data: ImportFile) -> ImportReport:
    """Insert the file's missing rows in one transaction; refuse any conflict before writing.

    The fixture is seeded first (as every server start does), so an order id or SKU of the fixture is
    recognised as taken rather than taken over later. Two imports at once may collide on a primary
    key; the loser checks again and then finds the winner's rows.
    """
    seed_fixture(engine)
    rows = data.table_rows()
    for attempt in range(1, _IMPORT_ATTEMPTS + 1):
        try:
            with Session(engine) as session:
                conflict = _first_conflict(session, data.tenant, rows)
                if conflict is not None:
                    raise ImportConflict(f"{conflict}; nothing was imported")
                report = insert_missing_rows(session, rows)
                session.commit()
            return ImportReport(tenant=data.tenant, inserted=report.inserted, present=report.present)
        except IntegrityError:
            if attempt == _IMPORT_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _location(loc: Sequence[int | str]) -> str:
    """``('orders', 2, 'invoice', 'total_cents')`` as ``orders[2].invoice.total_cents``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "file"


def _duplicate(values: Iterable[str]) -> str | None:
    return next((value for value, count in Counter(values).items() if count > 1), None)


def _first_inconsistency(data: ImportFile) -> str | None:
    """The first rule the validated file breaks across fields and rows, or None."""
    skus = [product.sku for product in data.products]
    duplicates = (
        ("products", "sku", _duplicate(skus)),
        ("orders", "order id", _duplicate(order.order_id for order in data.orders)),
        ("invoices", "invoice id", _duplicate(order.invoice.invoice_id for order in data.orders)),
        ("accounts", "customer", _duplicate(account.customer for account in data.accounts)),
    )
    for table, what, duplicate in duplicates:
        if duplicate is not None:
            return f"{table}: {what} {duplicate} is listed twice"
    for index, order in enumerate(data.orders):
        problem = _order_inconsistency(order, data.tenant, set(skus))
        if problem is not None:
            return f"orders[{index}].{problem}"
    return None


def _order_inconsistency(order: ImportOrder, tenant: str, skus: set[str]) -> str | None:
    invoice = order.invoice
    checks = (
        (order.tenant != tenant, f"tenant: {order.tenant!r} is not the file's tenant {tenant!r}"),
        (order.sku not in skus, f"sku: {order.sku!r} is not among the file's products"),
        (order.discount_cents > order.list_cents, "discount_cents: larger than list_cents"),
        (
            order.paid_items_cents != order.list_cents - order.discount_cents,
            "paid_items_cents: not list minus discount",
        ),
        (order.refunded_cents > order.paid_items_cents, "refunded_cents: larger than paid_items_cents"),
        (
            (order.status is OrderStatus.DELIVERED) != (order.delivered_on is not None),
            "delivered_on: set exactly when the status is delivered",
        ),
        (order.delivered_on is not None and order.delivered_on < order.ordered_on, "delivered_on: before ordered_on"),
        (invoice.paid_items_cents != order.paid_items_cents, "invoice.paid_items_cents: not the order's"),
        (invoice.freight_cents != order.freight_cents, "invoice.freight_cents: not the order's"),
        (
            invoice.total_cents != invoice.paid_items_cents + invoice.freight_cents,
            "invoice.total_cents: not items plus freight",
        ),
    )
    return next((message for failed, message in checks if failed), None)


def _first_conflict(session: Session, tenant: str, rows: dict[str, list[SQLModel]]) -> str | None:
    """The first row of the file the database holds with other content, described, or None."""
    for product in rows["products"]:
        assert isinstance(product, ProductRow)
        difference = _difference(session.get(ProductRow, product.sku), product)
        if difference:
            return f"product {product.sku} already exists with a different {difference}"
    for order in rows["orders"]:
        assert isinstance(order, OrderRow)
        existing = session.get(OrderRow, order.order_id)
        if existing is not None and existing.tenant != tenant:
            return f"order {order.order_id} belongs to another tenant"
        difference = _difference(existing, order, ignore=_LEDGER_OWNED)
        if difference:
            return f"order {order.order_id} already exists with a different {difference}"
    for invoice in rows["invoices"]:
        assert isinstance(invoice, InvoiceRow)
        difference = _difference(session.get(InvoiceRow, invoice.invoice_id), invoice)
        if difference:
            return f"invoice {invoice.invoice_id} already exists with a different {difference}"
        other = session.exec(select(InvoiceRow).where(InvoiceRow.order_id == invoice.order_id)).first()
        if other is not None and other.invoice_id != invoice.invoice_id:
            return f"order {invoice.order_id} already has invoice {other.invoice_id}"
    order_ids = [order.order_id for order in rows["orders"] if isinstance(order, OrderRow)]
    return _events_conflict(session, order_ids, rows["shipment_events"])


def _events_conflict(session: Session, order_ids: list[str], events: list[SQLModel]) -> str | None:
    """An order already in the database keeps its shipment history: the file must repeat it exactly."""
    by_order: dict[str, list[ShipmentEventRow]] = {order_id: [] for order_id in order_ids}
    for event in events:
        assert isinstance(event, ShipmentEventRow)
        by_order[event.order_id].append(event)
    for order_id, incoming in by_order.items():
        if session.get(OrderRow, order_id) is None:
            continue
        stored = session.exec(
            select(ShipmentEventRow).where(ShipmentEventRow.order_id == order_id).order_by(col(ShipmentEventRow.seq))
        ).all()
        if len(stored) != len(incoming) or any(
            _difference(a, b, ignore={"id"}) for a, b in zip(stored, incoming, strict=True)
        ):
            return f"the shipment events of order {order_id} differ from those already recorded"
    return None


def _difference(existing: SQLModel | None, incoming: SQLModel, *, ignore: Iterable[str] = ()) -> str | None:
    """The first column (``name_en``) in which an existing row differs from the file's, or None."""
    if existing is None:
        return None
    skipped = set(ignore)
    stored, wanted = existing.model_dump(), incoming.model_dump()
    return next((name for name in wanted if name not in skipped and stored.get(name) != wanted[name]), None)

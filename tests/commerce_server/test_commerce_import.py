"""``python -m commerce_server import FILE``: one tenant's data in, read back through the MCP tools' read
path, idempotent, all or nothing, and one line for a bad file."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, update
from sqlmodel import Session, SQLModel, col, select

from commerce_server.db import CustomerAccountRow, InvoiceRow, OrderRow, ProductRow, ShipmentEventRow, make_engine
from commerce_server.importer import (
    ImportConflict,
    ImportFileError,
    import_tenant_data,
    load_import_file,
    parse_import,
)
from commerce_server.service import CommerceService
from contracts.commerce import OrderStatus
from contracts.errors import ErrorClass, SupportError
from contracts.identity import Identity, Role
from knowledge.refund_quote import calculate_refund_quote, load_refund_rules, policy_page_versions
from knowledge.store import default_knowledge_base

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "docs" / "examples" / "east-orders.json"
ANA = Identity(subject="ana", tenant="east", role=Role.CUSTOMER, display_name="Ana")
SAMPLE_ROWS = {
    "products": 2,
    "product_variants": 0,
    "orders": 2,
    "shipping_addresses": 0,
    "customer_accounts": 1,
    "invoices": 2,
    "shipment_events": 6,
}
TABLES: tuple[type[SQLModel], ...] = (ProductRow, OrderRow, InvoiceRow, ShipmentEventRow)


def sample() -> dict[str, Any]:
    return json.loads(SAMPLE.read_text(encoding="utf-8"))


def row_counts(engine: Engine) -> dict[str, int]:
    with Session(engine) as session:
        return {model.__name__: session.exec(select(func.count()).select_from(model)).one() for model in TABLES}


def test_the_sample_imports_and_ana_reads_it_through_the_service(commerce_engine: Engine) -> None:
    report = import_tenant_data(commerce_engine, load_import_file(SAMPLE))

    assert report.inserted == SAMPLE_ROWS
    assert set(report.present.values()) == {0}
    assert report.sentence().startswith("tenant east: added 13 rows (2 products, 2 orders")
    ana = CommerceService(commerce_engine, ANA)
    assert [summary.order_id for summary in ana.list_orders().orders] == ["QH-4001", "QH-4002"]
    order = ana.get_order("QH-4001")
    assert (order.tenant, order.customer, order.status, order.version) == ("east", "ana", OrderStatus.DELIVERED, 1)
    assert (order.paid_items_cents, order.freight_cents, order.refunded_cents) == (18900, 800, 0)
    assert order.ledger_id is not None
    assert [event.code for event in ana.get_shipment("QH-4001").events] == [
        "placed",
        "shipped",
        "delivered",
        "return_received",
    ]
    assert ana.get_invoice("QH-4001").total_cents == 19700
    assert ana.get_product("KETTLE-01").name_en == "Electric kettle"


@pytest.mark.parametrize(
    "stranger",
    [
        Identity(subject="alice", tenant="qinghe", role=Role.CUSTOMER, display_name="Alice"),
        Identity(subject="ana", tenant="qinghe", role=Role.CUSTOMER, display_name="Ana"),
    ],
)
def test_an_imported_order_is_invisible_outside_its_tenant_and_customer(
    commerce_engine: Engine, stranger: Identity
) -> None:
    import_tenant_data(commerce_engine, load_import_file(SAMPLE))

    with pytest.raises(SupportError) as refused:
        CommerceService(commerce_engine, stranger).get_order("QH-4001")

    assert refused.value.code == "order_not_accessible"


def test_the_delivered_order_passes_every_fact_check_of_the_refund_rule(commerce_engine: Engine) -> None:
    """QH-4001 mirrors QH-1001 (delivered in the window, return received, standard item, balance left).
    The rule file is written for one tenant (``refund_rules.json``: qinghe), so for east itself it
    answers ``merchant_requires_manual_review`` until the rule is configured per tenant."""
    import_tenant_data(commerce_engine, load_import_file(SAMPLE))
    order = CommerceService(commerce_engine, ANA).get_order("QH-4001")
    rules = load_refund_rules()
    versions = policy_page_versions(default_knowledge_base())

    as_rule_tenant = calculate_refund_quote(order.model_copy(update={"tenant": rules.tenant}), page_versions=versions)
    as_east = calculate_refund_quote(order, page_versions=versions)

    assert (as_rule_tenant.eligible, as_rule_tenant.amount_cents, as_rule_tenant.days_since_delivery) == (
        True,
        18900,
        6,
    )
    assert (as_east.eligible, as_east.reason) == (False, "merchant_requires_manual_review")


def test_importing_again_inserts_nothing_and_keeps_a_paid_refund(commerce_engine: Engine) -> None:
    import_tenant_data(commerce_engine, load_import_file(SAMPLE))
    with Session(commerce_engine) as session:  # what a paid refund does to the order's balances
        session.execute(
            update(OrderRow).where(col(OrderRow.order_id) == "QH-4001").values(refunded_cents=18900, version=2)
        )
        session.commit()
    before = row_counts(commerce_engine)

    again = import_tenant_data(commerce_engine, load_import_file(SAMPLE))

    assert set(again.inserted.values()) == {0}
    assert again.present == SAMPLE_ROWS
    assert "already there (nothing changed)" in again.sentence()
    assert row_counts(commerce_engine) == before
    order = CommerceService(commerce_engine, ANA).get_order("QH-4001")
    assert (order.refunded_cents, order.version) == (18900, 2)


def test_an_imported_account_is_the_ledgers_after_the_import(commerce_engine: Engine) -> None:
    import_tenant_data(commerce_engine, load_import_file(SAMPLE))
    document = sample()
    document["accounts"][0]["default_address"]["line1"] = "99 Elsewhere Road"  # the file changed since

    again = import_tenant_data(commerce_engine, parse_import(document))

    assert again.present["customer_accounts"] == 1 and set(again.inserted.values()) == {0}
    with Session(commerce_engine) as session:
        account = session.get(CustomerAccountRow, ("east", "ana"))
        assert account is not None
        assert (account.line1, account.currency, account.version) == ("3 East Lake Road", "CNY", 1)


def _with_new_order(document: dict[str, Any], order_id: str) -> dict[str, Any]:
    """``document`` with one more order, a copy of its first under ``order_id``."""
    extra = copy.deepcopy(document["orders"][0])
    extra["order_id"] = order_id
    extra["invoice"]["invoice_id"] = f"INV-{order_id}"
    return document | {"orders": [*document["orders"], extra]}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda doc: doc["orders"][0].update(order_id="QH-1001"), "order QH-1001 belongs to another tenant"),
        (
            lambda doc: doc["products"][0].update(name_en="Kettle"),
            "product KETTLE-01 already exists with a different name_en",
        ),
        (lambda doc: doc["orders"][0].update(customer="bo"), "order QH-4001 already exists with a different customer"),
        (
            lambda doc: doc["orders"][0]["invoice"].update(invoice_id="INV-OTHER"),
            "order QH-4001 already has invoice INV-QH-4001",
        ),
        (
            lambda doc: doc["orders"][0]["shipment"]["events"].pop(),
            "the shipment events of order QH-4001 differ from those already recorded",
        ),
    ],
)
def test_a_conflict_is_refused_before_anything_is_written(commerce_engine: Engine, change: Any, problem: str) -> None:
    import_tenant_data(commerce_engine, load_import_file(SAMPLE))
    document = _with_new_order(sample(), "QH-4009")  # a new order that must not be written either
    change(document)
    before = row_counts(commerce_engine)

    with pytest.raises(ImportConflict) as refused:
        import_tenant_data(commerce_engine, parse_import(document))

    assert refused.value.message == f"{problem}; nothing was imported"
    assert refused.value.error_class is ErrorClass.BUSINESS
    assert row_counts(commerce_engine) == before
    with pytest.raises(SupportError):
        CommerceService(commerce_engine, ANA).get_order("QH-4009")


def test_a_first_import_with_a_taken_order_id_writes_none_of_its_rows(commerce_engine: Engine) -> None:
    document = _with_new_order(sample(), "QH-2001")  # QH-2001 is bob's, of tenant qinghe
    before = row_counts(commerce_engine)

    with pytest.raises(ImportConflict, match="order QH-2001 belongs to another tenant"):
        import_tenant_data(commerce_engine, parse_import(document))

    assert row_counts(commerce_engine) == before
    assert CommerceService(commerce_engine, ANA).list_orders().orders == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            lambda doc: doc["orders"][1]["invoice"].update(total_cents="9800"),
            "orders[1].invoice.total_cents: Input should be a valid integer",
        ),
        (
            lambda doc: doc["orders"][0].update(list_cents=199.5),
            "orders[0].list_cents: Input should be a valid integer",
        ),
        (
            lambda doc: doc["orders"][1].update(sku="LAMP-02"),
            "orders[1].sku: 'LAMP-02' is not among the file's products",
        ),
        (
            lambda doc: doc["orders"][1].update(tenant="qinghe"),
            "orders[1].tenant: 'qinghe' is not the file's tenant 'east'",
        ),
        (lambda doc: doc["orders"][1].update(order_id="QH-4001"), "orders: order id QH-4001 is listed twice"),
        (lambda doc: doc["accounts"].append(doc["accounts"][0]), "accounts: customer ana is listed twice"),
        (
            lambda doc: doc["accounts"][0]["default_address"].update(country="China"),
            "accounts[0].default_address.country: String should match pattern",
        ),
        (lambda doc: doc["orders"][0].update(order_id="EA-2001"), "orders[0].order_id: String should match pattern"),
        (lambda doc: doc["orders"][0].update(gift_wrap=True), "orders[0].gift_wrap: Extra inputs are not permitted"),
        (lambda doc: doc["orders"][0].pop("customer"), "orders[0].customer: Field required"),
        (lambda doc: doc.update(currency="USD"), "currency: Input should be 'CNY'"),
        (
            lambda doc: doc["orders"][0]["shipment"]["events"][0].update(at="2026-09-03T09:30:00"),
            "orders[0].shipment.events[0].at: Input should have timezone info",
        ),
        (
            lambda doc: doc["orders"][0]["invoice"].update(total_cents=1),
            "orders[0].invoice.total_cents: not items plus freight",
        ),
        (lambda doc: doc["orders"][1].update(delivered_on="2026-09-11"), "orders[1].delivered_on: set exactly when"),
    ],
)
def test_a_bad_file_is_refused_naming_its_first_problem(change: Any, problem: str) -> None:
    document = sample()
    change(document)

    with pytest.raises(ImportFileError) as refused:
        parse_import(document, source="east.json")

    assert refused.value.message.startswith(f"east.json: {problem}")
    assert refused.value.error_class is ErrorClass.CONTRACT


def test_a_file_that_is_not_json_is_refused_with_its_position(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"tenant": "east",\n  "orders": [}', encoding="utf-8")

    with pytest.raises(ImportFileError, match=r"broken.json: not JSON: .* \(line 2, column 14\)"):
        load_import_file(path)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    environment = {name: value for name, value in os.environ.items() if name != "COMMERCE_DATABASE_URL"}
    return subprocess.run(
        [sys.executable, "-m", "commerce_server", "import", *args],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_cli_imports_once_then_finds_everything_there(tmp_path: Path) -> None:
    first = _cli(str(SAMPLE), "--state-dir", str(tmp_path))
    second = _cli(str(SAMPLE), "--state-dir", str(tmp_path))

    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    assert first.stdout.splitlines() == [
        "tenant east: added 13 rows (2 products, 2 orders, 1 customer_accounts, 2 invoices, 6 shipment_events)"
    ]
    assert second.stdout.splitlines() == ["tenant east: all 13 rows of the file were already there (nothing changed)"]
    engine = make_engine(f"sqlite:///{tmp_path / 'commerce.db'}")
    try:
        assert CommerceService(engine, ANA).get_order("QH-4001").paid_items_cents == 18900
    finally:
        engine.dispose()


def test_the_cli_refuses_a_bad_file_with_one_line_and_exit_2(tmp_path: Path) -> None:
    document = sample()
    document["orders"][1]["invoice"]["total_cents"] = "9800"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    result = _cli(str(path), "--state-dir", str(tmp_path / "state"))

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"commerce_server: {path}: orders[1].invoice.total_cents: Input should be a valid integer"
    ]
    assert not (tmp_path / "state").exists()

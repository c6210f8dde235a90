"""Seeding inserts missing fixture rows only: balances, versions, receipts and tickets survive it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine

from commerce_server.db import make_engine
from commerce_server.seed import seed_fixture
from commerce_server.service import CommerceService
from contracts.commerce import RefundApproval
from keystore import demo_identity

FIXTURE_ROWS = {
    "products": 9,
    "product_variants": 5,
    "orders": 24,
    "shipping_addresses": 24,
    "customer_accounts": 3,
    "invoices": 24,
    "shipment_events": 80,
}


def test_seeding_again_keeps_a_recorded_refund_and_tickets(
    commerce_engine: Engine, refund_approval: Callable[..., RefundApproval]
) -> None:
    alice = CommerceService(commerce_engine, demo_identity("alice"))
    approval = refund_approval(alice.get_order("QH-1001"))
    receipt = alice.execute_refund(approval)
    ticket = alice.create_ticket("QH-1005", "Parcel late", "seed-key")

    report = seed_fixture(commerce_engine)

    assert set(report.inserted.values()) == {0}
    assert report.present == {
        "products": 9,
        "product_variants": 5,
        "orders": 24,
        "shipping_addresses": 24,
        "customer_accounts": 3,
        "invoices": 24,
        "shipment_events": 80,
    }
    order = alice.get_order("QH-1001")
    assert (order.refunded_cents, order.version) == (12900, 2)
    assert alice.execute_refund(approval) == receipt
    assert alice.get_ticket(ticket.ticket_id) == ticket


def test_first_seed_inserts_the_whole_fixture(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    try:
        report = seed_fixture(engine)
    finally:
        engine.dispose()

    assert report.inserted == {
        "products": 9,
        "product_variants": 5,
        "orders": 24,
        "shipping_addresses": 24,
        "customer_accounts": 3,
        "invoices": 24,
        "shipment_events": 80,
    }
    assert set(report.present.values()) == {0}

"""Every commerce read is scoped to the bound identity: foreign and missing records look the same."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from commerce_server.service import CommerceService
from contracts.errors import AuthorizationError, BusinessError, ContractError, SupportError
from keystore import demo_identity


def service(engine: Engine, profile: str) -> CommerceService:
    return CommerceService(engine, demo_identity(profile))


def refusal(call) -> SupportError:
    with pytest.raises(SupportError) as caught:
        call()
    return caught.value


def test_alice_lists_exactly_her_twelve_orders(commerce_engine: Engine) -> None:
    orders = service(commerce_engine, "alice").list_orders().orders

    assert [order.order_id for order in orders] == [f"QH-10{n:02d}" for n in range(1, 13)]


def test_lin_sees_only_south_orders(commerce_engine: Engine) -> None:
    lin = service(commerce_engine, "lin")

    assert [order.order_id for order in lin.list_orders().orders] == [f"QH-300{n}" for n in range(1, 7)]
    assert lin.get_order("QH-3001").tenant == "south"
    assert refusal(lambda: lin.get_order("QH-1001")).code == "order_not_accessible"


@pytest.mark.parametrize(
    ("read", "code"),
    [
        ("get_order", "order_not_accessible"),
        ("get_shipment", "shipment_not_accessible"),
        ("get_invoice", "invoice_not_accessible"),
    ],
)
def test_foreign_and_missing_records_give_identical_errors(commerce_engine: Engine, read: str, code: str) -> None:
    alice = service(commerce_engine, "alice")
    errors = {
        order_id: refusal(lambda order_id=order_id: getattr(alice, read)(order_id))
        for order_id in ("QH-2001", "QH-3001", "QH-9999")
    }

    assert {(type(e), e.code, e.message) for e in errors.values()} == {
        (AuthorizationError, code, errors["QH-9999"].message)
    }
    for order_id, error in errors.items():
        assert order_id not in error.message


def test_owner_reads_shipment_and_invoice(commerce_engine: Engine) -> None:
    alice = service(commerce_engine, "alice")

    shipment = alice.get_shipment("QH-1001")
    invoice = alice.get_invoice("QH-1001")

    assert [event.code for event in shipment.events] == ["placed", "shipped", "delivered", "return_received"]
    assert shipment.events[0].at.isoformat() == "2026-09-01T10:00:00+08:00"
    assert (invoice.total_cents, invoice.paid_items_cents, invoice.freight_cents) == (14100, 12900, 1200)


def test_bob_cannot_read_alices_ticket(commerce_engine: Engine) -> None:
    ticket = service(commerce_engine, "alice").create_ticket("QH-1005", "Where is my parcel?", "alice-t1")
    bob = service(commerce_engine, "bob")

    foreign = refusal(lambda: bob.get_ticket(ticket.ticket_id))
    missing = refusal(lambda: bob.get_ticket("TCK-0000000000000000"))

    assert (foreign.code, foreign.message) == (missing.code, missing.message)
    assert foreign.code == "ticket_not_accessible"
    assert ticket.ticket_id not in foreign.message


@pytest.mark.parametrize("order_id", ["qh-1001", "QH-10011", "QH-1001' OR '1'='1", ""])
def test_malformed_order_ids_are_invalid_arguments(commerce_engine: Engine, order_id: str) -> None:
    error = refusal(lambda: service(commerce_engine, "alice").get_order(order_id))

    assert isinstance(error, ContractError)
    assert error.code == "invalid_argument"


def test_products_are_a_shared_catalogue(commerce_engine: Engine) -> None:
    assert service(commerce_engine, "lin").get_product("MUG-04").category == "custom"
    error = refusal(lambda: service(commerce_engine, "alice").get_product("SOFA-99"))
    assert isinstance(error, BusinessError)
    assert error.code == "product_not_found"

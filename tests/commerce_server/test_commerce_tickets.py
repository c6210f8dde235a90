"""create_ticket is idempotent by the caller's key; a reused key with other content is a conflict."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import Engine, func, select

from commerce_server.db import TicketRow
from commerce_server.service import MAX_TICKET_TEXT, CommerceService
from contracts.errors import SupportError
from keystore import demo_identity


@pytest.fixture
def alice(commerce_engine: Engine) -> CommerceService:
    return CommerceService(commerce_engine, demo_identity("alice"))


def test_same_key_same_content_returns_the_same_ticket(alice: CommerceService) -> None:
    first = alice.create_ticket("QH-1005", "Parcel late", "key-1")
    again = alice.create_ticket("QH-1005", "Parcel late", "key-1")

    assert again == first
    assert alice.get_ticket(first.ticket_id) == first


@pytest.mark.parametrize(("order_id", "text"), [("QH-1005", "Another text"), ("QH-1006", "Parcel late")])
def test_same_key_other_content_is_a_conflict(alice: CommerceService, order_id: str, text: str) -> None:
    alice.create_ticket("QH-1005", "Parcel late", "key-1")

    with pytest.raises(SupportError) as caught:
        alice.create_ticket(order_id, text, "key-1")

    assert caught.value.code == "idempotency_conflict"


def test_keys_belong_to_their_owner(commerce_engine: Engine, alice: CommerceService) -> None:
    bob = CommerceService(commerce_engine, demo_identity("bob"))

    mine = alice.create_ticket("QH-1005", "Parcel late", "shared-key")
    theirs = bob.create_ticket("QH-2005", "Parcel late", "shared-key")

    assert mine.ticket_id != theirs.ticket_id


def test_concurrent_twins_create_one_ticket(commerce_engine: Engine) -> None:
    def create(_: int):
        return CommerceService(commerce_engine, demo_identity("alice")).create_ticket("QH-1005", "Late", "twin")

    with ThreadPoolExecutor(max_workers=6) as pool:
        tickets = list(pool.map(create, range(6)))

    assert len(set(tickets)) == 1
    with commerce_engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(TicketRow)).scalar_one() == 1


@pytest.mark.parametrize(
    ("order_id", "text", "key", "code"),
    [
        ("QH-2001", "Not mine", "k", "order_not_accessible"),
        ("QH-1005", "", "k", "invalid_argument"),
        ("QH-1005", "   ", "k", "invalid_argument"),
        ("QH-1005", "x" * (MAX_TICKET_TEXT + 1), "k", "invalid_argument"),
        ("QH-1005", "Fine", "", "invalid_argument"),
        ("QH-1005", "Fine", "spaces are not allowed", "invalid_argument"),
    ],
)
def test_bad_tickets_are_refused(alice: CommerceService, order_id: str, text: str, key: str, code: str) -> None:
    with pytest.raises(SupportError) as caught:
        alice.create_ticket(order_id, text, key)

    assert caught.value.code == code


def test_longest_allowed_text_is_accepted(alice: CommerceService) -> None:
    assert len(alice.create_ticket("QH-1005", "x" * MAX_TICKET_TEXT, "long").text) == MAX_TICKET_TEXT

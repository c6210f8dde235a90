"""The exchange rule (``exchange_items``) computed from the order's records and the catalogue's variants: the
list-price difference per unit, charged or refunded; another available variant of the same product only."""

from __future__ import annotations

from datetime import date

import pytest

from contracts.action_policy import ActionKind
from contracts.actions import ActionEffect, ActionRequest, ExchangeTerms, sku_in
from contracts.commerce import FIXTURE_AS_OF, ProductVariant
from contracts.errors import BusinessError, ContractError
from knowledge.action_rules import OrderRecords, action_effect
from tests.case_data import ORDERS

LAMPS = (
    ProductVariant(sku="LAMP-02", family="lamp", label_en="black", label_zh="黑", list_cents=17900, available=True),
    ProductVariant(sku="LAMP-07", family="lamp", label_en="white", label_zh="白", list_cents=18900, available=True),
    ProductVariant(sku="LAMP-08", family="lamp", label_en="green", label_zh="绿", list_cents=17900, available=False),
)
DESKS = (
    ProductVariant(sku="DESK-01", family="desk", label_en="std", label_zh="标准", list_cents=14900, available=True),
    ProductVariant(sku="DESK-09", family="desk", label_en="large", label_zh="大", list_cents=16900, available=True),
)
DESK_ORDER = ORDERS["QH-1004"]  # a desk stand delivered 2026-09-08, not back yet
LAMP_ORDER = ORDERS["QH-1002"].model_copy(update={"return_received": False, "delivered_on": DESK_ORDER.delivered_on})


def exchanged(
    order_sku: str,
    sku_after: str | None,
    variants: tuple[ProductVariant, ...],
    *,
    return_open: bool = False,
    as_of: date = FIXTURE_AS_OF,
) -> ActionEffect:
    order = LAMP_ORDER if order_sku.startswith("LAMP") else DESK_ORDER
    request = ActionRequest(
        kind=ActionKind.EXCHANGE_ITEMS, case_id="case-1", order_id=order.order_id, sku_after=sku_after
    )
    return action_effect(request, OrderRecords(order=order, variants=variants, return_open=return_open, as_of=as_of))


def test_a_dearer_variant_charges_the_difference_and_a_cheaper_one_refunds_it() -> None:
    up = exchanged("DESK-01", "DESK-09", DESKS)

    assert up.exchange_opened == ExchangeTerms(
        sku_before="DESK-01", sku_after="DESK-09", units=1, difference_cents=2000
    )
    assert (up.refund_cents, up.status_before, up.status_after) == (0, "delivered", "delivered")
    assert up.policy_pages == ("EXCHANGES:p01", "EXCHANGES:p02")
    cheaper = tuple(v.model_copy(update={"list_cents": 12900}) if v.sku == "DESK-09" else v for v in DESKS)
    down = exchanged("DESK-01", "DESK-09", cheaper)
    assert down.exchange_opened is not None and down.exchange_opened.difference_cents == -2000
    same = exchanged("LAMP-02", "LAMP-07", LAMPS)
    assert same.exchange_opened is not None and same.exchange_opened.difference_cents == 1000


@pytest.mark.parametrize(
    ("sku_after", "reason"),
    [
        ("LAMP-08", "LAMP-08 \\(green\\) is sold out"),
        ("DESK-09", "DESK-09 is not another variant of the product on this order"),
        ("LAMP-02", "The order already holds LAMP-02."),
        ("CASE-06", "CASE-06 is not another variant"),
    ],
)
def test_only_another_available_variant_of_the_same_product_is_offered(sku_after: str, reason: str) -> None:
    with pytest.raises(BusinessError, match=reason) as refused:
        exchanged("LAMP-02", sku_after, LAMPS + DESKS)

    assert refused.value.code == "action_not_eligible"


def test_an_exchange_is_returnable_first_and_names_its_variant() -> None:
    with pytest.raises(BusinessError, match="A return or an exchange of this order is open already"):
        exchanged("DESK-01", "DESK-09", DESKS, return_open=True)
    with pytest.raises(BusinessError, match="outside the 30-day returns window \\(EXCHANGES:p01\\)"):
        exchanged("DESK-01", "DESK-09", DESKS, as_of=date(2026, 10, 9))
    with pytest.raises(ContractError, match="names the variant wanted") as unnamed:
        exchanged("DESK-01", None, DESKS)
    assert unnamed.value.code == "invalid_argument"


@pytest.mark.parametrize(
    ("text", "sku"),
    [
        ("Please exchange QH-1004 for DESK-09", "DESK-09"),
        ("换成 LAMP-07 吧", "LAMP-07"),
        ("exchange QH-1004 for DESK-09 or LAMP-07", None),
        ("exchange QH-1004 for the large one", None),
        ("DESK-09X", None),
    ],
)
def test_the_variant_is_read_from_the_customers_words_by_code(text: str, sku: str | None) -> None:
    assert sku_in(text) == sku


@pytest.mark.parametrize("kind", [ActionKind.MODIFY_ORDER_ITEMS, ActionKind.CHANGE_ORDER_PAYMENT])
def test_the_retail_servers_kinds_are_not_offered_here(kind: ActionKind) -> None:
    request = ActionRequest(kind=kind, case_id="case-1", order_id=DESK_ORDER.order_id)
    with pytest.raises(ContractError) as refused:
        action_effect(request, OrderRecords(order=DESK_ORDER, variants=DESKS))
    assert refused.value.message == f"This commerce server does not offer {kind.value}."

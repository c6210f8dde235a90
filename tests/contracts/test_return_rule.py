"""The return rule (``return_items``) computed from the order's records alone, and the effect's later field
left out of every effect that does not open a return (so the digests recorded before it still hold)."""

from __future__ import annotations

import json
from datetime import date

import pytest

from contracts.action_policy import ActionKind
from contracts.actions import ActionEffect, ActionRequest, ReturnTerms
from contracts.errors import BusinessError
from knowledge.action_rules import OrderRecords, action_effect
from tests.case_data import ORDERS

RECORDED_EFFECT = (
    '{"order_id":"QH-1006","order_version":1,"status_before":"processing","status_after":"cancelled",'
    '"refund_cents":4700,"currency":"CNY","refund_to":"original_payment_method","invoice_void":true,'
    '"address_before":null,"address_after":null,"policy_pages":["DELIVERY:p01","INVOICES:p02"]}'
)
"""A cancellation's effect as release 0.12 first recorded it, before returns existed."""


def returned(records: OrderRecords) -> ActionEffect:
    request = ActionRequest(kind=ActionKind.RETURN_ITEMS, case_id="case-1", order_id=records.order.order_id)
    return action_effect(request, records)


def test_a_delivered_order_in_the_window_opens_a_return_with_the_refund_due_on_check_in() -> None:
    order = ORDERS["QH-1004"]  # delivered 2026-09-08, not back yet, paid 109.00 for the items

    opened = returned(OrderRecords(order=order))

    assert opened.return_opened == ReturnTerms(units=1, refund_due_cents=10900)
    assert (opened.refund_cents, opened.status_before, opened.status_after) == (0, "delivered", "delivered")
    assert opened.policy_pages == ("RETURNS:p02", "RETURNS:p03")
    partly = returned(OrderRecords(order=order.model_copy(update={"refunded_cents": 4900})))
    assert partly.return_opened is not None and partly.return_opened.refund_due_cents == 6000


@pytest.mark.parametrize(
    ("records", "reason"),
    [
        (OrderRecords(order=ORDERS["QH-1006"]), "Only a delivered order can be returned"),
        (OrderRecords(order=ORDERS["QH-1008"]), "Custom-made and digital goods"),
        (OrderRecords(order=ORDERS["QH-1012"]), "outside the 30-day returns window"),
        (OrderRecords(order=ORDERS["QH-1001"]), "back at the warehouse already"),
        (OrderRecords(order=ORDERS["QH-1004"], return_open=True), "open already"),
        (OrderRecords(order=ORDERS["QH-1004"].model_copy(update={"refunded_cents": 10900})), "in full already"),
        (OrderRecords(order=ORDERS["QH-1004"], policy_tenant="south"), "staff handle every return"),
    ],
)
def test_a_return_the_terms_do_not_allow_is_refused_with_the_reason(records: OrderRecords, reason: str) -> None:
    with pytest.raises(BusinessError, match=reason) as refused:
        returned(records)

    assert refused.value.code == "action_not_eligible"


def test_the_window_counts_day_30_in_and_day_31_out() -> None:
    order = ORDERS["QH-1004"].model_copy(update={"delivered_on": date(2026, 8, 13)})

    assert returned(OrderRecords(order=order)).return_opened is not None
    with pytest.raises(BusinessError, match="Delivered 31 days ago"):
        returned(OrderRecords(order=order, as_of=date(2026, 9, 13)))


def test_an_effect_without_a_return_dumps_exactly_as_it_was_recorded() -> None:
    cancelled = action_effect(
        ActionRequest(kind=ActionKind.CANCEL_ORDER, case_id="case-1", order_id="QH-1006"),
        OrderRecords(order=ORDERS["QH-1006"]),
    )

    assert cancelled.model_dump_json() == RECORDED_EFFECT
    assert ActionEffect.model_validate_json(RECORDED_EFFECT) == cancelled
    opened = returned(OrderRecords(order=ORDERS["QH-1004"]))
    assert json.loads(opened.model_dump_json())["return_opened"] == {
        "units": 1,
        "refund_due_cents": 10900,
        "refund_to": "original_payment_method",
    }

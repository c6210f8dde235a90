"""The action policy as data: a rule's validation, default deny, the directory written as before when no
tenant allows an action, and the cancellation rule computed from the order alone."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ActionEffect, ActionRequest, Address
from contracts.commerce import Order, OrderStatus
from contracts.directory import Directory
from contracts.errors import BusinessError
from keystore import DEMO_DIRECTORY_PATH
from keystore.directory_edit import set_action
from knowledge.action_rules import OrderRecords, action_effect
from tests.case_data import ORDERS

DEMO = Directory.model_validate_json(DEMO_DIRECTORY_PATH.read_text(encoding="utf-8"))
HOME = Address(
    recipient="A (fictional)", phone="+86 21 5555 0101", line1="1 Road", city="X", postcode="310000", country="CN"
)
ELSEWHERE = HOME.model_copy(update={"city": "Y"})


def effect(
    kind: ActionKind, order: Order, address: Address | None = None, current: Address | None = HOME
) -> ActionEffect:
    request = ActionRequest(kind=kind, case_id="case-1", order_id=order.order_id, address=address)
    return action_effect(request, OrderRecords(order=order, address=current))


def test_no_tenant_allows_an_action_until_the_directory_says_so() -> None:
    allowed = set_action(DEMO, "qinghe", ActionKind.CANCEL_ORDER, ActionRule(max_per_customer_per_day=2))

    assert DEMO.action_rule("qinghe", ActionKind.CANCEL_ORDER) is None
    assert allowed.action_rule("qinghe", ActionKind.CANCEL_ORDER) == ActionRule(max_per_customer_per_day=2)
    assert allowed.action_rule("south", ActionKind.CANCEL_ORDER) is None
    assert allowed.action_rule("nowhere", ActionKind.CANCEL_ORDER) is None
    denied = set_action(allowed, "qinghe", ActionKind.CANCEL_ORDER, None)
    assert denied.action_rule("qinghe", ActionKind.CANCEL_ORDER) is None


def test_a_directory_allowing_no_action_is_written_as_release_0_11_wrote_it() -> None:
    # Release 0.11's tenant model forbids unknown keys: its workers, and the case slices they recorded,
    # must never see an empty ``actions``.
    dumped = json.loads(DEMO.model_dump_json())
    assert all("actions" not in tenant for tenant in dumped["tenants"])
    allowed = set_action(DEMO, "qinghe", ActionKind.CANCEL_ORDER, ActionRule())
    assert json.loads(allowed.model_dump_json())["tenants"][0]["actions"]["cancel_order"]["reviewers"] == 1
    assert Directory.model_validate_json(allowed.model_dump_json()) == allowed


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"customer_confirms": False, "reviewers": 0}, "an action nobody agrees to needs a daily cap"),
        ({"reviewers": 3}, "less than or equal to 2"),
        ({"expires_minutes": 0}, "greater than or equal to 1"),
        ({"max_cents_per_customer_per_30_days": 0}, "greater than or equal to 1"),
        ({"anyone": True}, "Extra inputs are not permitted"),
    ],
)
def test_a_bad_rule_is_refused(fields: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        ActionRule.model_validate(fields)


def test_reviewers_are_asked_from_the_rules_amount() -> None:
    rule = ActionRule(reviewers=2, reviewers_from_cents=5000)

    assert (rule.reviewers_required(4999), rule.reviewers_required(5000)) == (0, 2)
    assert ActionRule(customer_confirms=False, reviewers=0, max_per_customer_per_day=1).reviewers_required(10**6) == 0


def test_cancelling_a_processing_order_returns_everything_paid_less_what_was_refunded() -> None:
    order = ORDERS["QH-1006"]
    partly = order.model_copy(update={"refunded_cents": 800})

    cancelled = effect(ActionKind.CANCEL_ORDER, order)

    assert (cancelled.status_before, cancelled.status_after, cancelled.refund_cents) == (
        "processing",
        "cancelled",
        4700,
    )
    assert (cancelled.order_version, cancelled.invoice_void, cancelled.refund_to) == (
        1,
        True,
        "original_payment_method",
    )
    assert cancelled.address_after is None
    assert effect(ActionKind.CANCEL_ORDER, partly).refund_cents == 3900


@pytest.mark.parametrize("status", [OrderStatus.SHIPPED, OrderStatus.DELIVERED, OrderStatus.CANCELLED])
def test_an_order_past_processing_cannot_be_cancelled(status: OrderStatus) -> None:
    order = ORDERS["QH-1006"].model_copy(update={"status": status})

    with pytest.raises(BusinessError, match=rf"DELIVERY p01\); this one is {status.value}") as refused:
        effect(ActionKind.CANCEL_ORDER, order)

    assert refused.value.code == "action_not_eligible"


def test_an_address_change_before_shipping_is_free_and_states_both_addresses() -> None:
    moved = effect(ActionKind.CHANGE_ORDER_ADDRESS, ORDERS["QH-1006"], ELSEWHERE)

    assert (moved.address_before, moved.address_after, moved.refund_cents) == (HOME, ELSEWHERE, 0)
    assert (moved.status_before, moved.status_after, moved.invoice_void) == ("processing", "processing", False)
    with pytest.raises(BusinessError, match="before the order ships"):
        effect(ActionKind.CHANGE_ORDER_ADDRESS, ORDERS["QH-1005"], ELSEWHERE)
    with pytest.raises(BusinessError, match="already going to this address"):
        effect(ActionKind.CHANGE_ORDER_ADDRESS, ORDERS["QH-1006"], HOME)


@pytest.mark.parametrize(
    ("field", "value"),
    [("recipient", "A\nB"), ("phone", "call me"), ("postcode", ""), ("country", "China"), ("line1", "x" * 121)],
)
def test_an_address_is_one_line_of_bounded_text(field: str, value: str) -> None:
    with pytest.raises(ValidationError):
        Address.model_validate(HOME.model_dump() | {field: value})

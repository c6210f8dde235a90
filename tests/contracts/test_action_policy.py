"""The action policy as data: a rule's validation, default deny, the directory written as before when no
tenant allows an action, and the cancellation rule computed from the order alone."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from contracts.action_policy import ActionKind, ActionRule
from contracts.commerce import OrderStatus
from contracts.directory import Directory
from contracts.errors import BusinessError
from keystore import DEMO_DIRECTORY_PATH
from keystore.directory_edit import set_action
from knowledge.action_rules import action_effect
from tests.case_data import ORDERS

DEMO = Directory.model_validate_json(DEMO_DIRECTORY_PATH.read_text(encoding="utf-8"))


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

    effect = action_effect(ActionKind.CANCEL_ORDER, order)

    assert (effect.status_before, effect.status_after, effect.refund_cents) == ("processing", "cancelled", 4700)
    assert (effect.order_version, effect.invoice_void, effect.refund_to) == (1, True, "original_payment_method")
    assert action_effect(ActionKind.CANCEL_ORDER, partly).refund_cents == 3900


@pytest.mark.parametrize("status", [OrderStatus.SHIPPED, OrderStatus.DELIVERED, OrderStatus.CANCELLED])
def test_an_order_past_processing_cannot_be_cancelled(status: OrderStatus) -> None:
    order = ORDERS["QH-1006"].model_copy(update={"status": status})

    with pytest.raises(BusinessError, match=rf"DELIVERY p01\); this one is {status.value}") as refused:
        action_effect(ActionKind.CANCEL_ORDER, order)

    assert refused.value.code == "action_not_eligible"

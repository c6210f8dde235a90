"""The default address rule (DELIVERY p03), computed from the customer's account record alone: the address
before and after and the account's version, no order and no money; the account's current address, or no
address, refused. And the request and effect contracts keep an order-bound kind and the account's kind
apart."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from contracts.action_policy import ActionKind
from contracts.actions import ActionEffect, ActionRequest, CustomerAccount
from contracts.commerce import OrderStatus
from contracts.errors import BusinessError, SupportError
from knowledge.action_rules import AccountRecords, OrderRecords, action_effect
from tests.case_data import DEFAULT_ADDRESSES, ORDERS

DEFAULT = ActionKind.CHANGE_DEFAULT_ADDRESS
PAGES = ("DELIVERY:p03",)
HOME = DEFAULT_ADDRESSES["alice"]
NEW_FLAT = HOME.model_copy(update={"line1": "9 Lotus Court", "postcode": "310012"})
ACCOUNT = AccountRecords(
    CustomerAccount(tenant="qinghe", customer="alice", default_address=HOME, currency="CNY", version=3)
)


def test_the_change_states_both_addresses_and_the_accounts_version_and_moves_nothing_else() -> None:
    effect = action_effect(ActionRequest(kind=DEFAULT, case_id="case-1", address=NEW_FLAT), ACCOUNT)

    assert (effect.address_before, effect.address_after, effect.account_version) == (HOME, NEW_FLAT, 3)
    assert (effect.order_id, effect.order_version, effect.status_before, effect.status_after) == (None,) * 4
    assert (effect.refund_cents, effect.refund_to, effect.invoice_void) == (0, None, False)
    assert effect.policy_pages == ("DELIVERY:p03",)
    assert effect.target == "account"


def test_the_accounts_current_address_is_refused_with_the_reason() -> None:
    with pytest.raises(BusinessError, match="default delivery address already"):
        action_effect(ActionRequest(kind=DEFAULT, case_id="case-1", address=HOME), ACCOUNT)


def test_no_address_is_an_invalid_request() -> None:
    with pytest.raises(SupportError, match="names the new address"):
        action_effect(ActionRequest(kind=DEFAULT, case_id="case-1"), ACCOUNT)


def test_the_accounts_rule_never_runs_on_an_orders_records_nor_an_orders_on_the_account() -> None:
    order = ORDERS["QH-1006"]
    with pytest.raises(SupportError, match="does not apply"):
        action_effect(ActionRequest(kind=DEFAULT, case_id="case-1", address=NEW_FLAT), OrderRecords(order=order))
    cancel = ActionRequest(kind=ActionKind.CANCEL_ORDER, case_id="case-1", order_id="QH-1006")
    with pytest.raises(SupportError, match="does not apply"):
        action_effect(cancel, ACCOUNT)


def test_an_order_bound_kind_names_its_order_and_the_accounts_kind_none() -> None:
    with pytest.raises(ValidationError, match="names the order it changes"):
        ActionRequest(kind=ActionKind.CANCEL_ORDER, case_id="case-1")
    with pytest.raises(ValidationError, match="name no order_id"):
        ActionRequest(kind=DEFAULT, case_id="case-1", order_id="QH-1006", address=NEW_FLAT)


def test_an_effect_is_on_one_order_or_on_the_account_never_both_nor_neither() -> None:
    processing = OrderStatus.PROCESSING
    with pytest.raises(ValidationError, match="names the order, its version and its statuses"):
        ActionEffect(order_id="QH-1006", refund_cents=0, currency="CNY", policy_pages=PAGES)
    with pytest.raises(ValidationError, match="names no order"):
        ActionEffect(
            order_id="QH-1006",
            order_version=1,
            status_before=processing,
            status_after=processing,
            account_version=1,
            refund_cents=0,
            currency="CNY",
            policy_pages=PAGES,
        )


def test_the_accounts_effect_leaves_the_order_fields_out_of_its_json() -> None:
    effect = action_effect(ActionRequest(kind=DEFAULT, case_id="case-1", address=NEW_FLAT), ACCOUNT)
    dumped = json.loads(effect.model_dump_json())

    assert not {"order_id", "order_version", "status_before", "status_after"} & set(dumped)
    assert dumped["account_version"] == 3
    assert ActionEffect.model_validate(dumped) == effect

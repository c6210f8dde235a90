"""What a customer reads about a return or an exchange, written by code from the commerce server's effect
and receipt, in both case languages: the amount and its direction stated exactly, nothing said to have
been paid."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from contracts.action_policy import ActionKind
from contracts.actions import ActionEffect, ActionReceipt, ExchangeTerms, ReturnTerms
from contracts.case import CaseStatus
from contracts.commerce import OrderStatus
from contracts.knowledge import Language
from tests.case_data import DEFAULT_ADDRESSES
from workflows.action_notice import effect_sentences, end_notice, receipt_notice, variant_needed_notice


def _effect(**change: object) -> ActionEffect:
    return ActionEffect.model_validate(
        {
            "order_id": "QH-1004",
            "order_version": 1,
            "status_before": OrderStatus.DELIVERED,
            "status_after": OrderStatus.DELIVERED,
            "refund_cents": 0,
            "currency": "CNY",
            "policy_pages": ("RETURNS:p02", "RETURNS:p03"),
        }
        | change
    )


def _swap(difference: int) -> ActionEffect:
    terms = ExchangeTerms(sku_before="DESK-01", sku_after="DESK-09", units=1, difference_cents=difference)
    return _effect(exchange_opened=terms, policy_pages=("EXCHANGES:p01", "EXCHANGES:p02"))


def test_a_return_states_the_refund_due_on_check_in_and_nothing_paid_now() -> None:
    opened = _effect(return_opened=ReturnTerms(units=1, refund_due_cents=10900))

    en = effect_sentences(ActionKind.RETURN_ITEMS, opened, Language.EN)
    zh = effect_sentences(ActionKind.RETURN_ITEMS, opened, Language.ZH)

    assert "CNY 109.00 (10900 cents) goes back to your original payment method" in en
    assert "nothing is refunded before the check-in" in en
    assert "CNY 109.00（10900 分）将退回您的原支付方式" in zh and "入库前不会退款" in zh


@pytest.mark.parametrize(
    ("difference", "en", "zh"),
    [
        (2000, "CNY 20.00 (2000 cents) is charged to your original payment method", "将从您的原支付方式扣收"),
        (-2000, "CNY 20.00 (2000 cents) goes back to your original payment method", "将退回您的原支付方式"),
        (0, "there is no price difference to settle", "无需补退差价"),
    ],
)
def test_an_exchange_states_the_difference_and_its_direction(difference: int, en: str, zh: str) -> None:
    assert en in effect_sentences(ActionKind.EXCHANGE_ITEMS, _swap(difference), Language.EN)
    assert zh in effect_sentences(ActionKind.EXCHANGE_ITEMS, _swap(difference), Language.ZH)


def test_the_receipts_say_what_opened_and_never_that_money_moved() -> None:
    receipt = ActionReceipt(
        receipt_id="ACT-0123456789abcdef",
        proposal_id="AP-" + "0" * 24,
        kind=ActionKind.RETURN_ITEMS,
        case_id="case-1",
        order_id="QH-1004",
        digest="0" * 64,
        refund_cents=0,
        currency="CNY",
        status_after=OrderStatus.DELIVERED,
        order_version_after=2,
        agreed_by=("alice",),
        executed_at=datetime(2026, 12, 7, tzinfo=UTC),
        signature="x",
    )
    opened = ReturnTerms(units=1, refund_due_cents=10900)

    returned = receipt_notice(receipt, Language.EN, opened=opened)
    exchanged = receipt_notice(receipt.model_copy(update={"kind": ActionKind.EXCHANGE_ITEMS}), Language.ZH)

    assert "The return of order QH-1004 is open, receipt ACT-0123456789abcdef" in returned
    assert "once the warehouse checks them in, CNY 109.00 goes back" in returned and "no real money" in returned
    assert "换货已办理" in exchanged and "没有真实资金流动" in exchanged
    assert "product code" in variant_needed_notice(Language.EN) and "商品编号" in variant_needed_notice(Language.ZH)


def test_a_default_address_change_names_the_account_never_an_order() -> None:
    home = DEFAULT_ADDRESSES["alice"]
    effect = ActionEffect(
        account_version=1,
        refund_cents=0,
        currency="CNY",
        address_before=home,
        address_after=home.model_copy(update={"line1": "9 Lotus Court"}),
        policy_pages=("DELIVERY:p03",),
    )

    en = effect_sentences(ActionKind.CHANGE_DEFAULT_ADDRESS, effect, Language.EN)
    zh = effect_sentences(ActionKind.CHANGE_DEFAULT_ADDRESS, effect, Language.ZH)
    withdrawn = end_notice(CaseStatus.WITHDRAWN, Language.EN, ActionKind.CHANGE_DEFAULT_ADDRESS)
    expired = end_notice(CaseStatus.EXPIRED, Language.ZH, ActionKind.CHANGE_DEFAULT_ADDRESS)

    assert en.startswith("The default delivery address of your account will be Alice Wang (fictional), 9 Lotus Court")
    assert "instead of Alice Wang (fictional), 18 Willow Lane, Unit 3" in en and "QH-" not in en + zh
    assert "您账户的默认收货地址将改为" in zh and "已下的订单地址不变" in zh
    assert withdrawn == "You withdrew your request, so nothing has been changed on your account."
    assert expired is not None and "您的账户未作任何更改" in expired
    assert end_notice(CaseStatus.WITHDRAWN, Language.EN, ActionKind.CANCEL_ORDER) == (
        "You withdrew your request, so nothing has been changed on your order."
    )

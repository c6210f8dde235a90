"""What the customer is told about an action (cancel an order, ...), by code, in the case language.

The effect is stated from the commerce server's proposal (status, money, destination, invoice, address)
and the outcome from its receipt; no model text states either. A customer agrees by answering "yes",
which their sign-in turns into a confirmation signed over the proposal's digest
(:mod:`contracts.action_credentials`): the words alone agree to nothing.
"""

from __future__ import annotations

from datetime import datetime

from contracts.action_policy import ActionKind
from contracts.actions import (
    ADDRESS_FORMAT,
    ActionEffect,
    ActionProposal,
    ActionReceipt,
    Address,
    ExchangeTerms,
    ReturnTerms,
)
from contracts.case import CaseStatus
from contracts.commerce import OrderStatus
from contracts.effect_card import money
from contracts.knowledge import Language

_STATUS_ZH = {
    OrderStatus.PROCESSING: "处理中",
    OrderStatus.SHIPPED: "已发货",
    OrderStatus.DELIVERED: "已签收",
    OrderStatus.CANCELLED: "已取消",
}


def _zh(language: Language) -> bool:
    return language is Language.ZH


def _address(address: Address | None) -> str:
    if address is None:
        return "-"
    return f"{address.recipient}, {address.line1}, {address.city} {address.postcode}, {address.country}"


def _changed(effect: ActionEffect, language: Language) -> str:
    """What the action changes, named for the customer: one of their orders, or their account."""
    if effect.order_id is None:
        return "您账户的默认收货地址" if _zh(language) else "your account's default delivery address"
    return f"订单 {effect.order_id}" if _zh(language) else f"order {effect.order_id}"


def effect_sentences(kind: ActionKind, effect: ActionEffect, language: Language) -> str:
    """The exact change, from the commerce server's computed effect."""
    order = effect.target
    if kind is ActionKind.CHANGE_DEFAULT_ADDRESS:
        after, before = _address(effect.address_after), _address(effect.address_before)
        if _zh(language):
            return (
                f"您账户的默认收货地址将改为：{after}（原地址：{before}），不收取费用。"
                "此后下的订单寄往新地址，已下的订单地址不变。"
            )
        return (
            f"The default delivery address of your account will be {after} instead of {before}, free of charge. "
            "Orders you place from now on go there; orders already placed keep their own address."
        )
    if kind is ActionKind.CHANGE_ORDER_ADDRESS:
        if _zh(language):
            after, before = _address(effect.address_after), _address(effect.address_before)
            return f"订单 {order} 将改寄到：{after}（原地址：{before}），不收取费用。"
        return (
            f"Order {order} will be sent to {_address(effect.address_after)} instead of "
            f"{_address(effect.address_before)}, free of charge."
        )
    if kind is ActionKind.REFUND_ORDER:
        return _refund_sentences(order, effect, language)
    if effect.return_opened is not None:
        return _return_sentences(order, effect.return_opened, effect.currency, language)
    if effect.exchange_opened is not None:
        return _exchange_sentences(order, effect.exchange_opened, effect.currency, language)
    returned = money(effect.refund_cents, effect.currency)
    if _zh(language):
        before = _STATUS_ZH[effect.status_before] if effect.status_before else "-"
        after = _STATUS_ZH[effect.status_after] if effect.status_after else "-"
        text = (
            f"订单 {order} 将被取消（状态由“{before}”变为“{after}”），"
            f"{returned}（{effect.refund_cents} 分）将退回您的原支付方式"
        )
        return text + ("，发票作废。" if effect.invoice_void else "。")
    text = (
        f"Order {order} will be cancelled (its status goes from {effect.status_before} to {effect.status_after}), "
        f"and {returned} ({effect.refund_cents} cents) goes back to your original payment method"
    )
    return text + ("; its invoice is voided." if effect.invoice_void else ".")


def _refund_sentences(order: str, effect: ActionEffect, language: Language) -> str:
    refunded = money(effect.refund_cents, effect.currency)
    if _zh(language):
        return (
            f"订单 {order} 将退款 {refunded}（{effect.refund_cents} 分）至您的原支付方式；"
            "运费不自动退还，订单状态不变。"
        )
    return (
        f"Order {order} will be refunded {refunded} ({effect.refund_cents} cents) to your original payment "
        "method; the delivery charge is not refunded automatically, and the order's status stays as it is."
    )


def _return_sentences(order: str, opened: ReturnTerms, currency: str, language: Language) -> str:
    due = money(opened.refund_due_cents, currency)
    if _zh(language):
        return (
            f"将为订单 {order} 办理退货（{opened.units} 件）：请将商品寄回，退货仓签收入库后，"
            f"{due}（{opened.refund_due_cents} 分）将退回您的原支付方式；运费不退，入库前不会退款。"
        )
    return (
        f"A return of order {order} will be opened for {opened.units} item(s): you send them back, and once the "
        f"warehouse checks them in, {due} ({opened.refund_due_cents} cents) goes back to your original payment "
        "method. The delivery charge stays with the order, and nothing is refunded before the check-in."
    )


def _settlement(swap: ExchangeTerms, currency: str, language: Language) -> str:
    """The price difference and its direction, from the computed exchange."""
    cents = abs(swap.difference_cents)
    if _zh(language):
        amount = f"{money(cents, currency)}（{cents} 分）"
        if swap.difference_cents > 0:
            return f"差价 {amount} 将从您的原支付方式扣收"
        return f"差价 {amount} 将退回您的原支付方式" if swap.difference_cents else "无需补退差价"
    amount = f"{money(cents, currency)} ({cents} cents)"
    if swap.difference_cents > 0:
        return f"the price difference of {amount} is charged to your original payment method"
    if swap.difference_cents < 0:
        return f"the price difference of {amount} goes back to your original payment method"
    return "there is no price difference to settle"


def _exchange_sentences(order: str, swap: ExchangeTerms, currency: str, language: Language) -> str:
    settled = _settlement(swap, currency, language)
    if _zh(language):
        return (
            f"将为订单 {order} 办理换货：{swap.units} 件 {swap.sku_before} 换为 {swap.sku_after}。请将商品寄回，"
            f"退货仓签收入库后寄出新款式，{settled}；入库前不做任何结算。"
        )
    return (
        f"An exchange of order {order} will be opened: {swap.units} x {swap.sku_before} for {swap.sku_after}. You "
        f"send the item back; once the warehouse checks it in, {swap.sku_after} is sent out and {settled}. "
        "Nothing is settled before the check-in."
    )


def proposal_notice(action: ActionProposal, language: Language) -> str:
    """The proposal as the customer reads it: the effect, who must agree, how to confirm, when it expires."""
    effect = effect_sentences(action.kind, action.effect, language)
    until = action.expires_at.strftime("%Y-%m-%d %H:%M")
    reviewers = action.requires.reviewers
    if _zh(language):
        who = f"确认后还需 {reviewers} 位审核人员批准。" if reviewers else ""
        ask = "如同意，请回复“确认”" if action.requires.customer else "审核人员批准后即执行"
        return (
            f"{effect}{who}{ask}；该方案将于 UTC {until} 过期，过期前未获同意则不做任何更改。"
            "如不需要，请回复“撤回”。目前尚未做任何更改。"
        )
    who = f" After you confirm, {reviewers} reviewer(s) must approve it as well." if reviewers else ""
    ask = 'If you agree, reply "yes"' if action.requires.customer else "It is carried out once a reviewer approves it"
    return (
        f"{effect}{who} {ask}; the proposal expires at {until} UTC, and nothing changes unless it is agreed "
        'before then. If you do not want it, write "withdraw". Nothing has been changed yet.'
    )


def waiting_notice(action: ActionProposal, confirmed: bool, language: Language, now: datetime) -> str:
    """The answer to a message while the action waits for agreement."""
    minutes = max(0, int((action.expires_at - now).total_seconds() // 60))
    if not confirmed and action.requires.customer:
        if _zh(language):
            return f"此方案仍在等待您的确认（约 {minutes} 分钟后过期）。" + proposal_notice(action, language)
        return f"This proposal still waits for your confirmation (about {minutes} minutes left). " + proposal_notice(
            action, language
        )
    changed = _changed(action.effect, language)
    if _zh(language):
        return f"已收到您的确认。{changed}的变更正在等待审核人员批准（约 {minutes} 分钟后过期），批准前不会做任何更改。"
    return (
        f"Thank you, your confirmation is recorded. The change to {changed} waits for a "
        f"reviewer's approval (about {minutes} minutes left); nothing changes before it is approved."
    )


def receipt_notice(receipt: ActionReceipt, language: Language, *, opened: ReturnTerms | None = None) -> str:
    """The outcome, stated from the commerce server's signed receipt (and, for a return, the terms of the
    proposal its digest signs)."""
    returned = money(receipt.refund_cents, receipt.currency)
    if receipt.kind is ActionKind.RETURN_ITEMS:
        due = money(opened.refund_due_cents, receipt.currency) if opened else None
        if _zh(language):
            due = due or "方案所述金额"
            return (
                f"订单 {receipt.order_id} 的退货已办理，回执号 {receipt.receipt_id}。请将商品寄回；退货仓签收入库后，"
                f"{due} 将退回您的原支付方式。这是模拟操作（SIMULATED），所有数据均为虚构，没有真实资金流动。"
            )
        return (
            f"The return of order {receipt.order_id} is open, receipt {receipt.receipt_id}. Please send the items "
            f"back; once the warehouse checks them in, {due or 'the amount proposed'} goes back to your original "
            "payment method. This is SIMULATED on fictional data; no real money moved."
        )
    if receipt.kind is ActionKind.EXCHANGE_ITEMS:
        if _zh(language):
            return (
                f"订单 {receipt.order_id} 的换货已办理，回执号 {receipt.receipt_id}。"
                "请将商品寄回；退货仓签收入库后寄出新款式并按方案结算差价。这是模拟操作（SIMULATED），所有数据均为虚构，没有真实资金流动。"
            )
        return (
            f"The exchange of order {receipt.order_id} is open, receipt {receipt.receipt_id}. Please send the item "
            "back; once the warehouse checks it in, the new variant is sent out and the price difference is settled "
            "as proposed. This is SIMULATED on fictional data; no real money moved."
        )
    if receipt.kind is ActionKind.REFUND_ORDER:
        if _zh(language):
            return (
                f"订单 {receipt.order_id} 已退款 {returned}（{receipt.refund_cents} 分）至您的原支付方式，回执号 "
                f"{receipt.receipt_id}。这是模拟操作（SIMULATED），所有数据均为虚构，没有真实资金流动。"
            )
        return (
            f"Order {receipt.order_id} was refunded {returned} ({receipt.refund_cents} cents) to your original "
            f"payment method, receipt {receipt.receipt_id}. This is SIMULATED on fictional data; no real money moved."
        )
    if receipt.kind is ActionKind.CHANGE_DEFAULT_ADDRESS:
        if _zh(language):
            return f"您账户的默认收货地址已更改，回执号 {receipt.receipt_id}。已下的订单地址不变。所有数据均为虚构。"
        return (
            f"The default delivery address of your account was changed, receipt {receipt.receipt_id}. Orders "
            "already placed keep their own address. All data here is fictional."
        )
    if receipt.kind is ActionKind.CHANGE_ORDER_ADDRESS:
        if _zh(language):
            return f"订单 {receipt.order_id} 的收货地址已更改，回执号 {receipt.receipt_id}。所有数据均为虚构。"
        return (
            f"The delivery address of order {receipt.order_id} was changed, receipt {receipt.receipt_id}. "
            "All data here is fictional."
        )
    if _zh(language):
        return (
            f"订单 {receipt.order_id} 已取消，{returned}（{receipt.refund_cents} 分）退回您的原支付方式，回执号 "
            f"{receipt.receipt_id}。这是模拟操作（SIMULATED），所有数据均为虚构，没有真实资金流动。"
        )
    return (
        f"Order {receipt.order_id} was cancelled and {returned} ({receipt.refund_cents} cents) goes back to your "
        f"original payment method, receipt {receipt.receipt_id}. This is SIMULATED on fictional data; no real "
        "money moved."
    )


def address_needed_notice(language: Language) -> str:
    """What the service asks for when an address change states no address it can read."""
    if _zh(language):
        return (
            f"请按以下格式写出新的收货地址：{ADDRESS_FORMAT}"
            "（例如 to: 李雷, +86 21 5555 0199, 河滨路8号, 上海, 200000, CN）。目前尚未做任何更改。"
        )
    return (
        f"Please write the new delivery address as {ADDRESS_FORMAT} (for example: to: Li Lei, +86 21 5555 0199, "
        "8 River Road, Shanghai, 200000, CN). Nothing has been changed yet."
    )


def variant_needed_notice(language: Language) -> str:
    """What the service asks for when an exchange names no one product code of the variant wanted."""
    if _zh(language):
        return (
            "请写出您想换成的款式的商品编号（见商品页面），例如：exchange QH-1004 for DESK-09。"
            "每次只写一个编号。目前尚未做任何更改。"
        )
    return (
        "Please name the variant you want by its product code, as the product page shows it (for example: "
        "exchange QH-1004 for DESK-09), one code per message. Nothing has been changed yet."
    )


_ENDS: dict[CaseStatus, tuple[str, str]] = {
    CaseStatus.REJECTED: (
        "A reviewer did not approve the proposed change, so nothing has been changed on {what}. Our "
        "support team will contact you about the next steps.",
        "审核人员未批准该变更方案，因此{what}未作任何更改。客服人员将与您联系后续事宜。",
    ),
    CaseStatus.EXPIRED: (
        "The proposed change expired before everyone needed agreed to it, so nothing has been changed on "
        "{what}. Please ask again if you still want it.",
        "该变更方案在获得所需同意前已过期，因此{what}未作任何更改。如仍需要，请重新提出。",
    ),
    CaseStatus.WITHDRAWN: (
        "You withdrew your request, so nothing has been changed on {what}.",
        "您已撤回申请，因此{what}未作任何更改。",
    ),
}
_WHAT = {True: ("your order", "您的订单"), False: ("your account", "您的账户")}
"""What an unagreed action left unchanged, by whether its kind is bound to an order."""


def end_notice(status: CaseStatus, language: Language, kind: ActionKind | None = None) -> str | None:
    """The fixed message for an action case that ended unagreed; None for every other status."""
    notice = _ENDS.get(status)
    if notice is None:
        return None
    en, zh = _WHAT[kind is None or kind.order_bound]
    return notice[1].format(what=zh) if _zh(language) else notice[0].format(what=en)

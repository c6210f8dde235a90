"""The rehearsal model's plan: order id by pattern (never invented), intent by bilingual keywords, queries.

Queries are written in the case language, because the knowledge search runs in that language. The
topic queries also tell :mod:`rehearsal._compose` which intents are topics that need an order.
"""

from __future__ import annotations

import re
from typing import Any

from contracts.actions import address_in
from contracts.commerce import order_ids_in
from rehearsal._common import case_language

_GREETINGS = {"hello", "hi", "hey", "hello there", "good morning", "你好", "您好", "嗨", "哈喽"}

_KEYWORDS: dict[str, tuple[str, ...]] = {
    "invoice": ("invoice", "发票"),
    "warranty": (
        "warranty",
        "broken",
        "repair",
        "stopped working",
        "flicker",
        "does not turn on",
        "doesn't turn on",
        "won't turn on",
        "faulty",
        "保修",
        "坏",
        "维修",
        "不亮",
        "故障",
    ),
    "refund": ("refund", "money back", "get back", "return", "退款", "退货", "退钱", "退"),
    "delivery": (
        "deliver",
        "shipment",
        "ship",
        "where is",
        "address",
        "parcel",
        "tracking",
        "配送",
        "物流",
        "快递",
        "地址",
        "发货",
        "包裹",
        "到哪",
    ),
}
_CANCEL = re.compile(
    r"\bcancel\b|取消订单|取消(?:我的|这个|该)?订单|帮我取消|我要取消|请取消",
    re.IGNORECASE,
)
_EXCHANGE_ACTION = re.compile(r"\bexchange\b|\bswap\b|换货|换成|更换为|调换", re.IGNORECASE)
"""A customer asking to exchange an item for another variant (``exchange``)."""
_RETURN_ACTION = re.compile(
    r"i (?:want|would like|'d like) to (?:return|send (?:it|them|QH-\S+|my \w+) back)|please return"
    r"|return (?:QH-|my |the |this |it\b)|start a return"
    r"|我要退货|我想退货|申请退货|帮我退货|办理退货|请帮我办理退货",
    re.IGNORECASE,
)
"""A customer asking to send a delivered order back (``return``), not asking about returns in general."""
_DEFAULT_ADDRESS = re.compile(
    r"\bdefault (?:delivery |shipping )?address|\baddress (?:saved )?on (?:my|the) account"
    r"|默认(?:收货)?地址|账户(?:里|中)?(?:保存)?的(?:收货)?地址",
    re.IGNORECASE,
)
"""A customer asking about the address saved on their account (``default_address_change``), not an order's."""
_CANCEL_ACTION = re.compile(
    r"please cancel|cancel (?:QH-|my |the |this |it\b)|i (?:want|would like|'d like) to cancel"
    r"|请取消|取消订单|帮我取消|我要取消",
    re.IGNORECASE,
)
_ACTION = re.compile(
    r"please refund|refund (?:QH-|my |me|the |this |it\b|[\d,.]+ )"
    r"|i (?:want|would like|'d like) (?:a |my )?refund"
    r"|请退款|申请退款|我要退款|帮我退款|给我退款|办理退款",
    re.IGNORECASE,
)

QUERIES: dict[str, dict[str, tuple[str, ...]]] = {
    "default_address_change": {
        "en": ("change the default delivery address saved on your account", "orders placed afterwards address"),
        "zh": ("账户 默认收货地址 随时 免费修改", "此后下的订单 默认地址"),
    },
    "exchange": {
        "en": ("exchange an item for another variant of the same product", "price difference of the variant"),
        "zh": ("换货 同一商品 其他款式", "换货 差价 原支付方式"),
    },
    "return": {
        "en": ("refund window delivery warehouse receipt", "refund amount freight exclusions"),
        "zh": ("退款期限 签收 退货 仓库", "退款金额 运费 定制 数字商品"),
    },
    "address_change": {
        "en": (
            "change the delivery address free of charge while the order is processing",
            "delivery address can no longer be changed after the order has shipped",
        ),
        "zh": ("处理中 订单 免费 修改收货地址", "发货后 无法 修改 收货地址"),
    },
    "cancellation": {
        "en": (
            "cancel a processing order before it ships payment returned in full",
            "invoice of an order cancelled before shipping is void",
        ),
        "zh": ("处理中 订单 取消 款项 全额原路退还", "发货前取消的订单 发票 作废"),
    },
    "refund": {
        "en": ("refund window delivery warehouse receipt", "refund amount freight exclusions"),
        "zh": ("退款期限 签收 退货 仓库", "退款金额 运费 定制 数字商品"),
    },
    "delivery": {
        "en": (
            "shipment tracking carrier delivery status",
            "change the delivery address after the order has shipped",
        ),
        "zh": ("发货 物流 跟踪 承运商", "发货后 修改 收货地址"),
    },
    "invoice": {
        "en": ("invoice original amounts total delivery charge", "invoice reconciliation after refund"),
        "zh": ("发票 原始金额 合计 运费", "退款后 发票 对账"),
    },
    "warranty": {
        "en": ("warranty period months product", "safe troubleshooting before a warranty claim"),
        "zh": ("保修期 月 产品", "申请保修前 安全排查"),
    },
}
_MILESTONES: dict[str, dict[str, tuple[str, ...]]] = {
    "default_address_change": {
        "en": ("cite the default address page", "propose the new default address"),
        "zh": ("引用默认地址页面", "提出修改默认地址方案"),
    },
    "exchange": {
        "en": ("read the order", "cite the exchange pages", "propose the exchange"),
        "zh": ("读取订单", "引用换货页面", "提出换货方案"),
    },
    "return": {
        "en": ("read the order", "cite the returns window and amount pages", "propose the return"),
        "zh": ("读取订单", "引用退货期限和金额页面", "提出退货方案"),
    },
    "address_change": {
        "en": ("read the order", "cite the address change pages", "propose the new address"),
        "zh": ("读取订单", "引用修改地址的页面", "提出改址方案"),
    },
    "cancellation": {
        "en": ("read the order", "cite the cancellation and invoice pages", "propose the cancellation"),
        "zh": ("读取订单", "引用取消订单和发票页面", "提出取消方案"),
    },
    "refund": {
        "en": (
            "read the order",
            "compute the refund quote",
            "cite the policy pages",
            "prepare a proposal for human approval",
        ),
        "zh": ("读取订单", "计算退款报价", "引用政策页面", "准备待人工审批的方案"),
    },
    "delivery": {
        "en": ("read the order", "read the shipment", "cite the delivery terms"),
        "zh": ("读取订单", "读取物流信息", "引用配送条款"),
    },
    "invoice": {
        "en": ("read the order and invoice", "compute the refundable balance", "cite the terms"),
        "zh": ("读取订单和发票", "计算可退余额", "引用相关条款"),
    },
    "warranty": {
        "en": ("read the order", "read the product warranty", "cite the warranty terms"),
        "zh": ("读取订单", "读取产品保修信息", "引用保修条款"),
    },
    "policy": {
        "en": ("search the policy pages", "answer from the cited passages"),
        "zh": ("检索政策页面", "依据引用段落回答"),
    },
}


def plan(context: dict[str, Any]) -> dict[str, Any]:
    question: str = context["question"]
    language = case_language(context)
    found = order_ids_in(question)
    intent = _intent(question)
    order_id = found[0] if found and intent != "default_address_change" else None  # the account's, no order's
    topic_queries = QUERIES.get(intent, {}).get(language, ())
    if intent == "greeting":
        queries: list[str] = []
        milestones: tuple[str, ...] = ()
    elif order_id or intent == "default_address_change":
        queries = list(topic_queries[:2]) or [_clip(question, 300)]
        milestones = _MILESTONES.get(intent, _MILESTONES["policy"])[language]
    else:
        queries = [_clip(question, 300), *topic_queries[:2]]
        milestones = _MILESTONES["policy"][language]
    return {
        "intent": intent,
        "order_id": order_id,
        "action_requested": (intent == "refund" and bool(_ACTION.search(question)))
        or (intent == "cancellation" and bool(_CANCEL_ACTION.search(question)))
        or intent in ("address_change", "return", "exchange", "default_address_change"),
        "queries": queries[:3],
        "milestones": list(milestones[:4]),
    }


def _intent(question: str) -> str:
    lowered = question.lower()
    if re.sub(r"[\W_]+", " ", lowered).strip() in _GREETINGS:
        return "greeting"
    if _DEFAULT_ADDRESS.search(question):
        return "default_address_change"
    if address_in(question) is not None:
        return "address_change"  # a new address in the host's form: the customer asks to send the order there
    if _CANCEL.search(question):
        return "cancellation"
    if _EXCHANGE_ACTION.search(question):
        return "exchange"
    if _RETURN_ACTION.search(question):
        return "return"
    if _ACTION.search(question):
        return "refund"
    if any(word in lowered for word in _KEYWORDS["invoice"]):
        return "invoice"
    for intent in ("warranty", "refund", "delivery"):
        if any(word in lowered for word in _KEYWORDS[intent]):
            return intent
    return "policy"


def _clip(text: str, limit: int) -> str:
    return text.strip()[:limit].strip()

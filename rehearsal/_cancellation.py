"""The rehearsal model's answers to the actions a customer asks for (a cancellation, a new delivery
address, a return): propose the action when the order's status allows it and the evidence holds the pages
the action's rule rests on, explain otherwise. The commerce server decides the rest (a return's window).

It states no amount and no address: the effect is computed by the commerce server (the new address read
from the customer's message by the host) and told to the customer by code, with the proposal they confirm.
"""

from __future__ import annotations

from typing import Any

from contracts.action_policy import ActionKind
from knowledge.action_terms import load_action_terms
from knowledge.location import knowledge_location
from rehearsal._evidence import Context, quote_citations

RETURN_PAGES = ("RETURNS:p02", "RETURNS:p03")


def terms_citations(ctx: Context, kind: ActionKind) -> tuple[list[str], bool]:
    """A passage of each page a merchant's terms give ``kind`` (knowledge/action_terms.json), and whether every
    one is in the evidence. The model is not told the tenant: the evidence holds only its tenant's pages, so
    the set found whole is that tenant's; otherwise the most complete set's passages, and False."""
    best: list[str] = []
    terms = load_action_terms(knowledge_location())
    for tenant in terms.tenants:
        pages = terms.pages(tenant, kind)
        cited = quote_citations(ctx, {"citations": list(pages)}) if pages else []
        if pages and len(cited) == len(pages):
            return cited, True
        best = cited if len(cited) > len(best) else best
    return best, False


def cancellation_answer(ctx: Context, order: dict[str, Any]) -> dict[str, Any]:
    order_id = order["order_id"]
    citations, covered = terms_citations(ctx, ActionKind.CANCEL_ORDER)
    if order.get("status") != "processing":
        cited = citations[:1]
        return _reply(
            ctx.say(
                f"Order {order_id} is {order.get('status')}, and only an order that is still processing can be "
                "cancelled; once it has shipped it can be returned under the returns terms instead.",
                f"订单 {order_id} 当前不是“处理中”状态，只有处理中的订单才能取消；已发货的订单只能按退货条款办理退货。",
            ),
            cited,
            "answer" if cited else "handoff",
        )
    if not covered or not ctx.plan.get("action_requested"):
        return _reply(
            ctx.say(
                f"Order {order_id} is still processing, so it can be cancelled before it ships. If you would "
                "like that, ask me to cancel it.",
                f"订单 {order_id} 仍在处理中，发货前可以取消。如需取消，请告诉我。",
            ),
            citations,
            "answer" if citations else "handoff",
        )
    return _reply(
        ctx.say(
            f"Order {order_id} is still processing, so it can be cancelled: the payment goes back in full to the "
            "original payment method and the invoice becomes void. The exact change follows for you to confirm; "
            "nothing has been changed yet.",
            f"订单 {order_id} 仍在处理中，可以取消：款项将全额原路退还，发票作废。"
            "具体变更见下文，请您确认；目前尚未做任何更改。",
        ),
        citations,
        "propose_action",
    )


def address_change_answer(ctx: Context, order: dict[str, Any]) -> dict[str, Any]:
    order_id = order["order_id"]
    citations, covered = terms_citations(ctx, ActionKind.CHANGE_ORDER_ADDRESS)
    if order.get("status") != "processing" or not covered:
        return _reply(
            ctx.say(
                f"The delivery address of order {order_id} can only be changed while it is still processing; "
                "once it has shipped it can no longer be changed in our system.",
                f"订单 {order_id} 仅在处理中时可以修改收货地址；发货后系统中无法再修改。",
            ),
            citations,
            "answer" if citations else "handoff",
        )
    return _reply(
        ctx.say(
            f"Order {order_id} is still processing, so its delivery address can be changed free of charge. The "
            "exact change follows for you to confirm; nothing has been changed yet.",
            f"订单 {order_id} 仍在处理中，可以免费修改收货地址。具体变更见下文，请您确认；目前尚未做任何更改。",
        ),
        citations,
        "propose_action",
    )


def default_address_answer(ctx: Context) -> dict[str, Any]:
    """The account's default address: no order to read; propose when the page the rule rests on is cited."""
    citations, covered = terms_citations(ctx, ActionKind.CHANGE_DEFAULT_ADDRESS)
    if not covered:
        return _reply(
            ctx.say(
                "A person will help you change the default address saved on your account.",
                "工作人员将协助您修改账户中保存的默认地址。",
            ),
            citations,
            "handoff",
        )
    return _reply(
        ctx.say(
            "The default delivery address saved on your account can be changed at any time, free of charge; "
            "orders placed from now on use it, and orders already placed keep their own address. The exact "
            "change follows for you to confirm; nothing has been changed yet.",
            "账户中保存的默认收货地址可以随时免费修改；此后下的订单使用新地址，已下的订单地址不变。"
            "具体变更见下文，请您确认；目前尚未做任何更改。",
        ),
        citations,
        "propose_action",
    )


def return_answer(ctx: Context, order: dict[str, Any]) -> dict[str, Any]:
    order_id = order["order_id"]
    citations = quote_citations(ctx, {"citations": list(RETURN_PAGES)})
    if order.get("status") != "delivered" or order.get("category") in ("custom", "digital"):
        return _reply(
            ctx.say(
                f"Order {order_id} cannot be returned for a refund: only delivered goods that are not custom-made "
                "or digital can be.",
                f"订单 {order_id} 无法退货退款：只有已签收且非定制、非数字的商品可以退货。",
            ),
            citations,
            "answer" if citations else "handoff",
        )
    if order.get("return_received"):
        return _reply(
            ctx.say(
                f"Order {order_id} is back at our warehouse already; ask me for its refund.",
                f"订单 {order_id} 已退回仓库，如需退款请告诉我。",
            ),
            citations,
            "answer" if citations else "handoff",
        )
    if len(citations) < len(RETURN_PAGES):
        return _reply(
            ctx.say("A colleague will help you with this return.", "工作人员将协助您办理退货。"), [], "handoff"
        )
    return _reply(
        ctx.say(
            f"Order {order_id} was delivered, so its return can be opened: once the warehouse checks the items in, "
            "what you paid for them goes back to your original payment method (the delivery charge stays with the "
            "order). The exact return follows for you to confirm; nothing has been changed yet.",
            f"订单 {order_id} 已签收，可以办理退货：退货仓签收入库后，商品实付金额将原路退还（运费不退）。"
            "具体方案见下文，请您确认；目前尚未做任何更改。",
        ),
        citations,
        "propose_action",
    )


def exchange_answer(ctx: Context, order: dict[str, Any]) -> dict[str, Any]:
    order_id = order["order_id"]
    citations, covered = terms_citations(ctx, ActionKind.EXCHANGE_ITEMS)
    exchangeable = order.get("status") == "delivered" and order.get("category") not in ("custom", "digital")
    if not exchangeable or order.get("return_received"):
        return _reply(
            ctx.say(
                f"Order {order_id} cannot be exchanged: only delivered goods that are not custom-made or digital, "
                "and not already back at our warehouse, can be.",
                f"订单 {order_id} 无法换货：只有已签收、非定制非数字、且尚未退回仓库的商品可以换货。",
            ),
            citations,
            "answer" if citations else "handoff",
        )
    if not covered:
        handoff = ctx.say("A colleague will help you with this exchange.", "工作人员将协助您办理换货。")
        return _reply(handoff, [], "handoff")
    return _reply(
        ctx.say(
            f"Order {order_id} was delivered, so it can be exchanged for another variant of the same product that "
            "is on sale: the list-price difference is settled with your original payment method once the warehouse "
            "checks the item in. The exact exchange follows for you to confirm; nothing has been changed yet.",
            f"订单 {order_id} 已签收，可以换成同一商品的其他在售款式：退货仓签收入库后，按标价差额通过原支付方式结算。"
            "具体方案见下文，请您确认；目前尚未做任何更改。",
        ),
        citations,
        "propose_action",
    )


def _reply(answer: str, citations: list[str], next_action: str) -> dict[str, Any]:
    return {"answer": answer, "citations": list(dict.fromkeys(citations)), "next_action": next_action}

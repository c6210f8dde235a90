"""The rehearsal model's answers to the actions a customer asks for (a cancellation, a new delivery
address): propose the action when the order is still processing and the evidence holds the pages the
action's rule rests on, explain otherwise.

It states no amount and no address: the effect is computed by the commerce server (the new address read
from the customer's message by the host) and told to the customer by code, with the proposal they confirm.
"""

from __future__ import annotations

from typing import Any

from rehearsal._evidence import Context, quote_citations

CANCEL_PAGES = ("DELIVERY:p01", "INVOICES:p02")
ADDRESS_PAGES = ("DELIVERY:p01", "DELIVERY:p03")
"""The pages the cancellation rule cites (knowledge/action_rules.py); the rehearsal model reads them from
the evidence like any other page, and proposes only when both are there."""


def cancellation_answer(ctx: Context, order: dict[str, Any]) -> dict[str, Any]:
    order_id = order["order_id"]
    citations = quote_citations(ctx, {"citations": list(CANCEL_PAGES)})
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
    if len(citations) < len(CANCEL_PAGES) or not ctx.plan.get("action_requested"):
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
    citations = quote_citations(ctx, {"citations": list(ADDRESS_PAGES)})
    if order.get("status") != "processing" or len(citations) < len(ADDRESS_PAGES):
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


def _reply(answer: str, citations: list[str], next_action: str) -> dict[str, Any]:
    return {"answer": answer, "citations": list(dict.fromkeys(citations)), "next_action": next_action}

"""The rehearsal model's answers: built only from facts, quote and evidence, citing evidence ids.

A greeting gets a greeting; an order the customer does not own, or a refund request without an
order, asks for input; no evidence, or evidence that does not cover the question, hands the case to a
person. Otherwise the answer follows the plan's intent (refund, delivery, invoice, warranty) or
quotes the best policy passage. A refund proposal states the exact quoted amount and that nothing is
paid before a reviewer approves it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rehearsal._cancellation import (
    address_change_answer,
    cancellation_answer,
    default_address_answer,
    exchange_answer,
    return_answer,
)
from rehearsal._common import case_language, find
from rehearsal._evidence import (
    Context,
    best_passage,
    best_sentences,
    covered,
    first_sentences,
    join,
    quote_citations,
    top_passages,
)
from rehearsal._plan import QUERIES


def compose(context: dict[str, Any]) -> dict[str, Any]:
    ctx = Context(
        question=context["question"],
        language=case_language(context),
        plan=context["plan"],
        facts=context.get("facts") or {},
        evidence=context.get("evidence") or [],
        quote=context.get("quote"),
    )
    intent, order_id = ctx.plan["intent"], ctx.plan["order_id"]
    if intent == "greeting":
        return _reply(
            ctx.say(
                "Hello! I can help with refunds, deliveries, invoices and warranty questions about your "
                "Qinghe orders. Which order is your question about?",
                "您好！我可以帮您处理青禾订单的退款、配送、发票和保修问题。请问您想咨询哪个订单？",
            ),
            [],
            "answer",
        )
    if intent == "default_address_change":
        return default_address_answer(ctx)
    order = _find_order(ctx.facts, order_id) if order_id else None
    if order_id and order is None:
        return _reply(
            ctx.say(
                f"I could not find order {order_id} among your orders. Please check the order number.",
                f"在您的订单中没有找到订单 {order_id}。请核对订单号。",
            ),
            [],
            "needs_input",
        )
    if order_id is None and intent in QUERIES and ctx.plan.get("action_requested"):
        return _reply(
            ctx.say(
                "Which order is this about? Please give the order number, for example QH-1001.",
                "请问是哪一个订单？请提供订单号，例如 QH-1001。",
            ),
            [],
            "needs_input",
        )
    if not ctx.evidence:
        return _handoff(ctx)
    if order is not None and intent in _TOPIC_ANSWERS:
        return _TOPIC_ANSWERS[intent](ctx, order)
    return _policy_answer(ctx)


def _reply(answer: str, citations: list[str], next_action: str) -> dict[str, Any]:
    return {"answer": answer, "citations": list(dict.fromkeys(citations)), "next_action": next_action}


def _handoff(ctx: Context) -> dict[str, Any]:
    return _reply(
        ctx.say(
            "The Qinghe policy documents I can consult do not cover this question, so I cannot answer it "
            "reliably. A human colleague from customer service can help you with it.",
            "我能查阅的青禾政策文件没有涵盖这个问题，因此无法可靠地回答。客服同事可以为您提供帮助。",
        ),
        [],
        "handoff",
    )


def _explanation(ctx: Context, quote: dict[str, Any]) -> str:
    return ctx.say(quote["explanation_en"], quote["explanation_zh"])


def _find_order(facts: dict[str, Any], order_id: str) -> dict[str, Any] | None:
    return find(facts, lambda d: d.get("order_id") == order_id and "sku" in d and "status" in d)


_ZH_STATUS = {
    "processing": "处理中",
    "shipped": "已发货",
    "delivered": "已签收",
    "cancelled": "已取消",
    "issued": "已开具",
    "void": "已作废",
}
_TOPIC_DOCS = {"refund": "RETURNS", "delivery": "DELIVERY", "invoice": "INVOICES", "warranty": "WARRANTY"}
_QUOTE_PARTS = ("paid_items_cents", "refunded_cents", "freight_cents")
_INVOICE_PARTS = ("total_cents", "paid_items_cents", "freight_cents")


def _refund_answer(ctx: Context, order: dict[str, Any]) -> dict[str, Any]:
    quote = ctx.quote
    if quote is None:
        return _reply(
            ctx.say(
                "I could not compute an exact refund quote for this order, so a human colleague will look at it.",
                "我无法为该订单计算出准确的退款报价，将由客服同事为您处理。",
            ),
            [],
            "handoff",
        )
    citations = quote_citations(ctx, quote)
    order_id = quote["order_id"]
    if quote["reason"] == "merchant_requires_manual_review":
        return _reply(_explanation(ctx, quote), [], "handoff")
    if not quote["eligible"]:
        return _reply(
            ctx.say(
                f"Order {order_id} does not qualify for an automatic refund. {quote['explanation_en']}",
                f"订单 {order_id} 不符合自动退款条件。{quote['explanation_zh']}",
            ),
            citations,
            "answer",
        )
    amount = quote["amount_cents"]
    paid, refunded, freight = (ctx.money(quote[key]) for key in _QUOTE_PARTS)
    delivered, day, window = quote["delivered_on"], quote["days_since_delivery"], quote["window_days"]
    freight_clause = (
        ctx.say(
            f"the delivery charge of {freight} is excluded and is not refunded automatically.",
            f"运费 {freight}不在其内，不会自动退还。",
        )
        if quote["freight_cents"]
        else ctx.say(
            "delivery charges are never refunded automatically, and this order had none.",
            "运费不会自动退还，该订单没有运费。",
        )
    )
    basis = ctx.say(
        f"It was delivered on {delivered} (day {day} of the {window}-day window) and the return has "
        f"reached the warehouse. The amount is the paid item price {paid} minus {refunded} refunded "
        f"before; {freight_clause}",
        f"该订单于 {delivered} 签收（{window} 天退款期内的第 {day} 天），退货已到仓。"
        f"金额为实付商品 {paid}减去此前退还的 {refunded}；{freight_clause}",
    )
    if ctx.plan.get("action_requested"):
        return _reply(
            ctx.say(
                f"Order {order_id} qualifies for an automatic refund proposal of {ctx.money(amount)} "
                f"({amount} cents). {basis} A Qinghe reviewer must approve this proposal before anything is "
                "paid; no money has moved yet.",
                f"订单 {order_id} 可生成自动退款方案：{ctx.money(amount)}（{amount} 分）。{basis}"
                "该方案须经青禾审核人员批准后才会付款；目前尚未付款。",
            ),
            citations,
            "propose_refund",
        )
    return _reply(
        ctx.say(
            f"Order {order_id} could be refunded automatically: {ctx.money(amount)} ({amount} cents). {basis} "
            "If you would like to go ahead, ask me to refund it and a Qinghe reviewer will check the proposal.",
            f"订单 {order_id} 可以自动退款：{ctx.money(amount)}（{amount} 分）。{basis}"
            "如需办理，请告诉我申请退款，青禾审核人员会审核该方案。",
        ),
        citations,
        "answer",
    )


def _delivery_answer(ctx: Context, order: dict[str, Any]) -> dict[str, Any]:
    order_id = order["order_id"]
    shipment = find(ctx.facts, lambda d: d.get("order_id") == order_id and "events" in d) or {}
    status = str(shipment.get("status") or order.get("status"))
    zh_status = _ZH_STATUS.get(status, status)
    parts = [ctx.say(f"Order {order_id} is {status}.", f"订单 {order_id} 当前状态：{zh_status}。")]
    if shipment.get("carrier"):
        parts.append(
            ctx.say(
                f"Carrier: {shipment['carrier']}, tracking number {shipment.get('tracking_number')}.",
                f"承运商：{shipment['carrier']}，运单号 {shipment.get('tracking_number')}。",
            )
        )
    events = shipment.get("events") or []
    if events:
        last = events[-1]
        text = last.get("description_zh") if ctx.language == "zh" else last.get("description_en")
        parts.append(
            ctx.say(
                f"Latest update ({str(last.get('at'))[:10]}): {text}.",
                f"最新动态（{str(last.get('at'))[:10]}）：{text}。",
            )
        )
    cited = top_passages(ctx, "DELIVERY", 2)
    if any(word in ctx.question.lower() for word in ("address", "地址")):
        status_terms = ["shipped", "发货"] if status != "processing" else ["before", "之前"]
        found = best_sentences(ctx, "DELIVERY", ("address", "地址"), status_terms, count=2)
        if found:
            sentences = join(ctx, [sentence for _, sentence in found])
            parts.append(ctx.say(f"About changing the address: {sentences}", f"关于修改地址：{sentences}"))
            cited = [passage_id for passage_id, _ in found] + cited
    return _reply(join(ctx, parts), cited[:3] or top_passages(ctx, None, 1), "answer")


def _invoice_answer(ctx: Context, order: dict[str, Any]) -> dict[str, Any]:
    order_id = order["order_id"]
    invoice = find(ctx.facts, lambda d: d.get("order_id") == order_id and "invoice_id" in d)
    parts = []
    if invoice:
        number, state = invoice["invoice_id"], str(invoice.get("state"))
        total, items, freight = (ctx.money(invoice[key]) for key in _INVOICE_PARTS)
        parts.append(
            ctx.say(
                f"Invoice {number} for order {order_id} ({state}) keeps the original amounts: {total} in "
                f"total, that is items {items} plus delivery {freight}.",
                f"订单 {order_id} 的发票 {number}（{_ZH_STATUS.get(state, state)}）保留原始金额：合计 {total}，"
                f"即商品 {items}加运费 {freight}。",
            )
        )
    quote = ctx.quote
    if quote and quote["eligible"]:
        cents = quote["amount_cents"]
        amount = ctx.money(cents)
        paid, refunded, _ = (ctx.money(quote[key]) for key in _QUOTE_PARTS)
        parts.append(
            ctx.say(
                f"The refundable balance is different: {amount} ({cents} cents), the paid items {paid} minus "
                f"{refunded} refunded before; the delivery charge is not refunded automatically.",
                f"可退余额与发票金额不同：{amount}（{cents} 分），即实付商品 {paid}减去此前退还的 "
                f"{refunded}；运费不自动退还。",
            )
        )
    elif quote:
        parts.append(
            ctx.say(
                f"No automatic refund is available: {quote['explanation_en']}",
                f"目前没有可自动退还的金额：{quote['explanation_zh']}",
            )
        )
    cited = top_passages(ctx, "INVOICES", 2) + (quote_citations(ctx, quote) if quote else [])
    return _reply(join(ctx, parts), cited or top_passages(ctx, None, 1), "answer")


def _warranty_answer(ctx: Context, order: dict[str, Any]) -> dict[str, Any]:
    product = find(ctx.facts, lambda d: d.get("sku") == order.get("sku") and "warranty_months" in d)
    parts = []
    if product:
        name = product.get("name_zh") if ctx.language == "zh" else product.get("name_en")
        months = product["warranty_months"]
        parts.append(
            ctx.say(
                f"Order {order['order_id']} contains the {name} ({product['sku']}), which has a {months}-month "
                f"warranty; the order was delivered on {order.get('delivered_on')}.",
                f"订单 {order['order_id']} 中的{name}（{product['sku']}）保修期为 {months} 个月；"
                f"该订单于 {order.get('delivered_on')} 签收。",
            )
        )
    cited = top_passages(ctx, "WARRANTY", 2)
    best = best_passage(ctx, "WARRANTY")
    if best:
        parts.append(first_sentences(best["text"], 2))
        cited = list(dict.fromkeys([best["passage_id"], *cited]))
    return _reply(join(ctx, parts), cited or top_passages(ctx, None, 1), "answer")


def _policy_answer(ctx: Context) -> dict[str, Any]:
    if not covered(ctx.question, ctx.evidence):
        return _handoff(ctx)
    topic_doc = _TOPIC_DOCS.get(ctx.plan["intent"])
    best = (best_passage(ctx, topic_doc) if topic_doc else None) or best_passage(ctx, None)
    if best is None:
        return _handoff(ctx)
    return _reply(
        ctx.say(
            f"According to the Qinghe terms ({best['title']}): {first_sentences(best['text'], 2)}",
            f"根据青禾条款（{best['title']}）：{first_sentences(best['text'], 2)}",
        ),
        [best["passage_id"]],
        "answer",
    )


_TOPIC_ANSWERS: dict[str, Callable[[Context, dict[str, Any]], dict[str, Any]]] = {
    "refund": _refund_answer,
    "cancellation": cancellation_answer,
    "address_change": address_change_answer,
    "return": return_answer,
    "exchange": exchange_answer,
    "delivery": _delivery_answer,
    "invoice": _invoice_answer,
    "warranty": _warranty_answer,
}

"""The rehearsal model's decisions: deterministic, rule-based, bilingual (en/zh).

It is a stand-in, not a language model. It sees only what a real model would see through the wire
protocol (the question, the plan, earlier tool calls and their results, the compose/review context)
and never reads a database or a file. Each function takes the JSON context of one request and
returns the JSON reply a contract-following model would give:

- :func:`plan`: order id by pattern (never invented), intent by bilingual keywords, search queries;
- :func:`investigate`: the next tool calls, chosen from the plan and the observations so far;
- :func:`compose`: an answer built only from facts, quote and evidence, citing evidence ids;
- :func:`review`: checks citations, proposal pages and unsupported "refund paid" claims.

Queries are written in the case language, because the knowledge search runs in that language.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contracts.case import Budgets
from contracts.commerce import ORDER_ID_IN_TEXT

MAX_CALLS_PER_TURN = Budgets().max_calls_per_turn

_ORDER_ID = ORDER_ID_IN_TEXT
_CJK = re.compile(r"[\u4e00-\u9fff]")
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
_ACTION = re.compile(
    r"please refund|refund (?:QH-|my |me|the |this |it\b|[\d,.]+ )"
    r"|i (?:want|would like|'d like) (?:a |my )?refund"
    r"|请退款|申请退款|我要退款|帮我退款|给我退款|办理退款",
    re.IGNORECASE,
)

_QUERIES: dict[str, dict[str, tuple[str, ...]]] = {
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

_EN_STOPWORDS = frozenset(
    {
        "about",
        "after",
        "also",
        "available",
        "because",
        "been",
        "before",
        "being",
        "cannot",
        "could",
        "does",
        "doing",
        "done",
        "from",
        "have",
        "help",
        "here",
        "into",
        "just",
        "know",
        "like",
        "make",
        "many",
        "more",
        "much",
        "need",
        "please",
        "should",
        "since",
        "some",
        "still",
        "tell",
        "than",
        "that",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "want",
        "what",
        "when",
        "where",
        "which",
        "while",
        "whom",
        "whose",
        "will",
        "with",
        "would",
        "your",
        "yours",
    }
)
_ZH_STOP_BIGRAMS = frozenset(
    {
        "可以",
        "什么",
        "怎么",
        "有没",
        "没有",
        "这种",
        "那种",
        "能不",
        "不能",
        "是不",
        "不是",
        "请问",
        "一下",
        "我的",
        "你们",
        "的方",
        "方式",
    }
)


# --- plan ----------------------------------------------------------------------------------------


def plan(context: dict[str, Any]) -> dict[str, Any]:
    question: str = context["question"]
    language = _language(context)
    match = _ORDER_ID.search(question)
    order_id = match.group(0) if match else None
    intent = _intent(question)
    topic_queries = _QUERIES.get(intent, {}).get(language, ())
    if intent == "greeting":
        queries: list[str] = []
        milestones: tuple[str, ...] = ()
    elif order_id:
        queries = list(topic_queries[:2]) or [_clip(question, 300)]
        milestones = _MILESTONES.get(intent, _MILESTONES["policy"])[language]
    else:
        queries = [_clip(question, 300), *topic_queries[:2]]
        milestones = _MILESTONES["policy"][language]
    return {
        "intent": intent,
        "order_id": order_id,
        "action_requested": intent == "refund" and bool(_ACTION.search(question)),
        "queries": queries[:3],
        "milestones": list(milestones[:4]),
    }


def _intent(question: str) -> str:
    lowered = question.lower()
    if re.sub(r"[\W_]+", " ", lowered).strip() in _GREETINGS:
        return "greeting"
    if _ACTION.search(question):
        return "refund"
    if any(word in lowered for word in _KEYWORDS["invoice"]):
        return "invoice"
    for intent in ("warranty", "refund", "delivery"):
        if any(word in lowered for word in _KEYWORDS[intent]):
            return intent
    return "policy"


# --- investigate ---------------------------------------------------------------------------------


_CLOSING = {"en": "The evidence collected is sufficient.", "zh": "已收集到足够的信息。"}


@dataclass(frozen=True)
class Observation:
    """One earlier tool call and what came back, as read from the transcript messages."""

    name: str
    arguments: dict[str, Any]
    ok: bool
    result: Any


def read_observation(content: str) -> tuple[bool, Any]:
    """Interpret a tool message: a ToolObservation JSON (``ok``/``result``), a bare result or an error."""
    if not content.strip():
        return False, None
    try:
        data = json.loads(content)
    except ValueError:
        return not content.lower().startswith("error"), None
    if isinstance(data, dict):
        if "ok" in data:
            return data.get("ok") is True, data.get("result")
        if "error" in data or "error_code" in data:
            return False, None
    return True, data


def investigate(
    context: dict[str, Any], rounds: list[list[Observation]], offered: set[str]
) -> tuple[list[tuple[str, dict[str, str]]], str | None]:
    """The next calls (name, arguments) and, when stopping, a short closing sentence."""
    calls = [call for call in _next_calls(context, rounds) if call[0] in offered][:MAX_CALLS_PER_TURN]
    if calls:
        return calls, None
    return [], _CLOSING[_language(context)]


def _next_calls(context: dict[str, Any], rounds: list[list[Observation]]) -> list[tuple[str, dict[str, str]]]:
    plan_ = context["plan"]
    intent, order_id = plan_["intent"], plan_["order_id"]
    queries: list[str] = plan_.get("queries") or []
    history = [obs for round_ in rounds for obs in round_]
    if intent == "greeting":
        return []
    searches = [("search_knowledge", {"query": query}) for query in queries or [context["question"]]]
    if order_id is None:
        return [] if rounds else searches
    if not rounds:
        return [("get_order", {"order_id": order_id}), *searches[:1]]
    if len(rounds) == 1 and _order_read(history):
        return _follow_ups(intent, order_id, queries, history)
    return []


def _order_read(history: list[Observation]) -> bool:
    orders = [obs for obs in history if obs.name == "get_order"]
    return bool(orders) and all(obs.ok for obs in orders)


def _follow_ups(
    intent: str, order_id: str, queries: list[str], history: list[Observation]
) -> list[tuple[str, dict[str, str]]]:
    second_query = [("search_knowledge", {"query": queries[1]})] if len(queries) > 1 else []
    if intent == "refund":
        return [("calculate_refund", {"order_id": order_id}), ("load_skill", {"name": "refund"})]
    if intent == "delivery":
        return [("get_shipment", {"order_id": order_id}), *second_query]
    if intent == "invoice":
        return [
            ("get_invoice", {"order_id": order_id}),
            ("calculate_refund", {"order_id": order_id}),
            *second_query,
        ]
    if intent == "warranty":
        sku = next((_find_key(obs.result, "sku") for obs in history if obs.name == "get_order"), None)
        product = [("get_product", {"sku": sku})] if isinstance(sku, str) else []
        return [*product, *second_query]
    return []


# --- compose -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    question: str
    language: str
    plan: dict[str, Any]
    facts: dict[str, Any]
    evidence: list[dict[str, Any]]
    quote: dict[str, Any] | None

    def say(self, en: str, zh: str) -> str:
        return zh if self.language == "zh" else en

    def money(self, cents: int) -> str:
        return self.say(f"CNY {cents / 100:.2f}", f"{cents / 100:.2f} 元")


def compose(context: dict[str, Any]) -> dict[str, Any]:
    ctx = _Context(
        question=context["question"],
        language=_language(context),
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
    if order_id is None and intent in _QUERIES and ctx.plan.get("action_requested"):
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


def _handoff(ctx: _Context) -> dict[str, Any]:
    return _reply(
        ctx.say(
            "The Qinghe policy documents I can consult do not cover this question, so I cannot answer it "
            "reliably. A human colleague from customer service can help you with it.",
            "我能查阅的青禾政策文件没有涵盖这个问题，因此无法可靠地回答。客服同事可以为您提供帮助。",
        ),
        [],
        "handoff",
    )


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


def _refund_answer(ctx: _Context, order: dict[str, Any]) -> dict[str, Any]:
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
    citations = _quote_citations(ctx, quote)
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


def _delivery_answer(ctx: _Context, order: dict[str, Any]) -> dict[str, Any]:
    order_id = order["order_id"]
    shipment = _find(ctx.facts, lambda d: d.get("order_id") == order_id and "events" in d) or {}
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
    cited = _top_passages(ctx, "DELIVERY", 2)
    if any(word in ctx.question.lower() for word in ("address", "地址")):
        status_terms = ["shipped", "发货"] if status != "processing" else ["before", "之前"]
        found = _best_sentences(ctx, "DELIVERY", ("address", "地址"), status_terms, count=2)
        if found:
            sentences = _join(ctx, [sentence for _, sentence in found])
            parts.append(ctx.say(f"About changing the address: {sentences}", f"关于修改地址：{sentences}"))
            cited = [passage_id for passage_id, _ in found] + cited
    return _reply(_join(ctx, parts), cited[:3] or _top_passages(ctx, None, 1), "answer")


def _invoice_answer(ctx: _Context, order: dict[str, Any]) -> dict[str, Any]:
    order_id = order["order_id"]
    invoice = _find(ctx.facts, lambda d: d.get("order_id") == order_id and "invoice_id" in d)
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
    cited = _top_passages(ctx, "INVOICES", 2) + (_quote_citations(ctx, quote) if quote else [])
    return _reply(_join(ctx, parts), cited or _top_passages(ctx, None, 1), "answer")


def _warranty_answer(ctx: _Context, order: dict[str, Any]) -> dict[str, Any]:
    product = _find(ctx.facts, lambda d: d.get("sku") == order.get("sku") and "warranty_months" in d)
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
    cited = _top_passages(ctx, "WARRANTY", 2)
    best = _best_passage(ctx, "WARRANTY")
    if best:
        parts.append(_first_sentences(best["text"], 2))
        cited = list(dict.fromkeys([best["passage_id"], *cited]))
    return _reply(_join(ctx, parts), cited or _top_passages(ctx, None, 1), "answer")


def _policy_answer(ctx: _Context) -> dict[str, Any]:
    if not _covered(ctx.question, ctx.evidence):
        return _handoff(ctx)
    topic_doc = _TOPIC_DOCS.get(ctx.plan["intent"])
    best = (_best_passage(ctx, topic_doc) if topic_doc else None) or _best_passage(ctx, None)
    if best is None:
        return _handoff(ctx)
    return _reply(
        ctx.say(
            f"According to the Qinghe terms ({best['title']}): {_first_sentences(best['text'], 2)}",
            f"根据青禾条款（{best['title']}）：{_first_sentences(best['text'], 2)}",
        ),
        [best["passage_id"]],
        "answer",
    )


_TOPIC_ANSWERS: dict[str, Callable[[_Context, dict[str, Any]], dict[str, Any]]] = {
    "refund": _refund_answer,
    "delivery": _delivery_answer,
    "invoice": _invoice_answer,
    "warranty": _warranty_answer,
}


# --- review --------------------------------------------------------------------------------------

_PAID_CLAIM = re.compile(
    r"(?:refund|money) (?:has been|was|is) (?:paid|issued|sent|completed|processed|made)"
    r"|(?:we|i) (?:have )?(?:refunded|paid) you|you (?:have been|were) refunded|has been refunded to you"
    r"|已为您退款|已退款|已经退款|退款已(?:完成|到账|支付|发放)",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(?:not|no|nothing|never|yet)\b|未|没有|尚未|不", re.IGNORECASE)


def review(context: dict[str, Any]) -> dict[str, Any]:
    candidate = context["candidate"]
    evidence_ids = {p["passage_id"] for p in context.get("evidence") or []}
    citations: list[str] = candidate.get("citations") or []
    action = candidate.get("next_action")
    quote = context.get("quote")

    if not context.get("receipt_exists") and _claims_payment(candidate.get("answer", "")):
        return _verdict("insufficient", "The answer says a refund was paid, but no receipt exists.")
    unknown = [c for c in citations if c not in evidence_ids]
    if unknown:
        return _verdict("revise", f"Citations not in the evidence: {', '.join(unknown)}.")
    if action == "propose_refund":
        if not quote or not quote.get("eligible"):
            return _verdict("insufficient", "A refund is proposed without an eligible quote.")
        cited_pages = {c.rsplit(":", 2)[0] for c in citations}
        missing = [page for page in quote.get("citations", []) if page not in cited_pages]
        if missing:
            return _verdict("revise", f"The proposal does not cite the policy page(s) {', '.join(missing)}.")
    if action == "answer" and not citations and evidence_ids:
        return _verdict("revise", "The answer cites none of the evidence.")
    return _verdict("pass", None)


def _claims_payment(answer: str) -> bool:
    sentences = re.split(r"(?<=[.!?。！？；;])\s*", answer)
    return any(_PAID_CLAIM.search(s) and not _NEGATION.search(s) for s in sentences)


def _verdict(verdict: str, problem: str | None) -> dict[str, Any]:
    return {"verdict": verdict, "problems": [problem] if problem else []}


# --- helpers -------------------------------------------------------------------------------------


def _language(context: dict[str, Any]) -> str:
    language = context.get("language")
    if language in ("en", "zh"):
        return language
    return "zh" if _CJK.search(context.get("question", "")) else "en"


def _clip(text: str, limit: int) -> str:
    return text.strip()[:limit].strip()


def _join(ctx: _Context, parts: list[str]) -> str:
    return ("" if ctx.language == "zh" else " ").join(part.strip() for part in parts if part.strip())


def _explanation(ctx: _Context, quote: dict[str, Any]) -> str:
    return ctx.say(quote["explanation_en"], quote["explanation_zh"])


def _find(value: Any, predicate: Callable[[dict[str, Any]], bool], depth: int = 0) -> dict[str, Any] | None:
    """The first dict (depth-first, a few levels deep) that satisfies ``predicate``."""
    if depth > 4:
        return None
    if isinstance(value, dict):
        if predicate(value):
            return value
        children = list(value.values())
    elif isinstance(value, list):
        children = value
    else:
        return None
    for child in children:
        found = _find(child, predicate, depth + 1)
        if found is not None:
            return found
    return None


def _find_key(value: Any, key: str) -> Any:
    found = _find(value, lambda d: key in d)
    return found.get(key) if found else None


def _find_order(facts: dict[str, Any], order_id: str) -> dict[str, Any] | None:
    return _find(facts, lambda d: d.get("order_id") == order_id and "sku" in d and "status" in d)


def _doc(passage: dict[str, Any]) -> str:
    return str(passage["passage_id"]).split(":", 1)[0]


def _page(passage: dict[str, Any]) -> str:
    return passage.get("page_id") or str(passage["passage_id"]).rsplit(":", 2)[0]


def _top_passages(ctx: _Context, doc: str | None, count: int) -> list[str]:
    return [p["passage_id"] for p in ctx.evidence if doc is None or _doc(p) == doc][:count]


def _quote_citations(ctx: _Context, quote: dict[str, Any]) -> list[str]:
    """One passage per page the quote rests on, preferring the case language."""
    cited = []
    for page in quote.get("citations", []):
        on_page = [p for p in ctx.evidence if _page(p) == page]
        on_page.sort(key=lambda p: not str(p["passage_id"]).endswith(f":{ctx.language}:0"))
        if on_page:
            cited.append(on_page[0]["passage_id"])
    return cited


def _content_terms(text: str) -> list[str]:
    words = [w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4 and w not in _EN_STOPWORDS]
    bigrams = []
    for run in re.findall(r"[\u4e00-\u9fff]+", text):
        bigrams += [run[i : i + 2] for i in range(len(run) - 1) if run[i : i + 2] not in _ZH_STOP_BIGRAMS]
    return [_stem(w) for w in words] + bigrams


def _stem(word: str) -> str:
    for suffix in ("ation", "ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _overlap(question_terms: list[str], text: str) -> int:
    lowered = text.lower()
    return sum(1 for term in question_terms if term in lowered)


def _covered(question: str, evidence: list[dict[str, Any]]) -> bool:
    """Whether the evidence mentions enough of the question's distinctive words to answer it at all."""
    terms = _content_terms(question)
    if not terms:
        return True
    corpus = " ".join(str(p["text"]) for p in evidence).lower()
    found = sum(1 for term in terms if term in corpus)
    has_cjk = any(_CJK.match(term) for term in terms)
    return found / len(terms) >= (0.5 if has_cjk else 0.75)


def _best_passage(ctx: _Context, doc: str | None) -> dict[str, Any] | None:
    terms = _content_terms(ctx.question)
    pool = [p for p in ctx.evidence if doc is None or _doc(p) == doc]
    if not pool:
        return None
    best = max(pool, key=lambda p: _overlap(terms, str(p["text"])))
    return best if _overlap(terms, str(best["text"])) > 0 else None


def _first_sentences(text: str, count: int) -> str:
    sentences = [s.strip() for s in re.split(r"(?<=[.!?。！？])\s*", text.strip()) if s.strip()]
    separator = "" if _CJK.search(text) else " "
    return separator.join(sentences[:count])[:600]


def _best_sentences(
    ctx: _Context, doc: str, required: tuple[str, ...], extra_terms: list[str], *, count: int
) -> list[tuple[str, str]]:
    """Up to ``count`` (passage id, sentence) pairs that mention a required word, best overlap first."""
    terms = _content_terms(ctx.question) + extra_terms
    scored = []
    for passage in ctx.evidence:
        if _doc(passage) != doc:
            continue
        for sentence in re.split(r"(?<=[.!?。！？])\s*", str(passage["text"])):
            if any(word in sentence.lower() for word in required):
                score = -_overlap(terms, sentence)
                scored.append((score, len(scored), passage["passage_id"], sentence.strip()))
    return [(passage_id, sentence) for _, _, passage_id, sentence in sorted(scored)[:count]]

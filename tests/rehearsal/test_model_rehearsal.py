"""The rehearsal model through the real gateway and SDK, fed observations constructed here."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from activities.model.model_gateway import ModelGateway
from activities.model.model_settings import load_model_settings
from contracts.knowledge import Language, Passage
from contracts.model_io import (
    ComposedAnswer,
    ComposeRequest,
    InvestigateRequest,
    InvestigateResult,
    NextAction,
    Plan,
    PlanRequest,
    ReviewRequest,
    ToolObservation,
    TranscriptEntry,
    Verdict,
)
from contracts.tools import INVESTIGATION_TOOLS
from rehearsal import RehearsalTransport, rehearsal_http_client
from tests.case_data import passage as policy_passage
from tests.case_data import refund_quote

REFUND_QUESTION = "Please refund QH-1001 and explain the amount and the policy"
ORDER_1001 = {
    "order_id": "QH-1001",
    "sku": "DESK-01",
    "status": "delivered",
    "paid_items_cents": 12900,
    "freight_cents": 1200,
    "refunded_cents": 0,
    "delivered_on": "2026-09-05",
    "version": 1,
}
QUOTE_1001 = refund_quote()


def passage(passage_id: str, text: str = "Policy text.") -> Passage:
    return policy_passage(passage_id, title="Title", text=text)


@pytest.fixture
def gateway() -> ModelGateway:
    return ModelGateway(load_model_settings({}), http_client=rehearsal_http_client())


async def plan_of(gateway: ModelGateway, question: str, language: Language = Language.EN) -> Plan:
    result = await gateway.plan(PlanRequest(case_id="c-1", question=question, language=language))
    assert (result.meta.provider, result.meta.model, result.meta.usage) == ("rehearsal", "rehearsal", None)
    return result.plan


async def turn(
    gateway: ModelGateway, question: str, plan: Plan, transcript: list[TranscriptEntry], number: int
) -> InvestigateResult:
    return await gateway.investigate(
        InvestigateRequest(
            case_id="c-1",
            question=question,
            language=Language.EN,
            plan=plan,
            transcript=transcript,
            tool_names=list(INVESTIGATION_TOOLS),
            turn=number,
        )
    )


def observe(transcript: list[TranscriptEntry], result: InvestigateResult, results: dict[str, Any]) -> None:
    """Append the assistant turn and one observation per call (``results`` by tool name; str = error)."""
    transcript.append(TranscriptEntry(role="assistant", calls=result.calls, content=result.content or ""))
    for call in result.calls:
        value = results.get(call.name, {})
        observation = (
            ToolObservation(call_id=call.call_id, name=call.name, ok=False, error_code=value, error_message="No.")
            if isinstance(value, str)
            else ToolObservation(call_id=call.call_id, name=call.name, ok=True, result=value)
        )
        transcript.append(TranscriptEntry(role="tool", call_id=call.call_id, content=observation.model_dump_json()))


def calls_of(result: InvestigateResult) -> list[tuple[str, dict[str, Any] | None]]:
    return [(call.name, call.arguments) for call in result.calls]


async def test_refund_plan_investigation_and_proposal(gateway: ModelGateway) -> None:
    plan = await plan_of(gateway, REFUND_QUESTION)
    assert (plan.intent.value, plan.order_id, plan.action_requested) == ("refund", "QH-1001", True)
    assert 1 <= len(plan.queries) <= 3 and len(plan.milestones) <= 4

    transcript: list[TranscriptEntry] = []
    first = await turn(gateway, REFUND_QUESTION, plan, transcript, 1)
    assert calls_of(first) == [
        ("get_order", {"order_id": "QH-1001"}),
        ("search_knowledge", {"query": plan.queries[0]}),
    ]
    observe(transcript, first, {"get_order": ORDER_1001, "search_knowledge": {"passages": []}})

    second = await turn(gateway, REFUND_QUESTION, plan, transcript, 2)
    assert calls_of(second) == [
        ("calculate_refund", {"order_id": "QH-1001"}),
        ("load_skill", {"name": "refund"}),
    ]
    observe(transcript, second, {"calculate_refund": {"quote": QUOTE_1001.model_dump(mode="json")}})

    third = await turn(gateway, REFUND_QUESTION, plan, transcript, 3)
    assert third.calls == [] and third.content

    ids = [call.call_id for result in (first, second) for call in result.calls]
    assert len(ids) == len(set(ids))

    evidence = [passage("RETURNS:p02:en:0"), passage("RETURNS:p03:en:0"), passage("RETURNS:p04:en:0")]
    facts = {"order": ORDER_1001, "quote": QUOTE_1001.model_dump(mode="json")}
    composed = await gateway.compose(
        ComposeRequest(
            case_id="c-1",
            question=REFUND_QUESTION,
            language=Language.EN,
            plan=plan,
            facts=facts,
            evidence=evidence,
            quote=QUOTE_1001,
        )
    )
    answer = composed.answer
    assert answer.next_action is NextAction.PROPOSE_REFUND
    assert answer.citations == ["RETURNS:p02:en:0", "RETURNS:p03:en:0"]
    assert "CNY 129.00" in answer.answer and "12900 cents" in answer.answer
    assert "delivery charge" in answer.answer and "reviewer must approve" in answer.answer

    review = await gateway.review(
        ReviewRequest(
            case_id="c-1",
            question=REFUND_QUESTION,
            language=Language.EN,
            facts=facts,
            evidence=evidence,
            quote=QUOTE_1001,
            candidate=answer,
        )
    )
    assert review.verdict.verdict is Verdict.PASS


async def test_chinese_question_gets_chinese_plan_and_answer(gateway: ModelGateway) -> None:
    question = "请帮我申请退款 QH-1001，金额是多少？"
    plan = await plan_of(gateway, question, Language.ZH)
    assert (plan.intent.value, plan.order_id, plan.action_requested) == ("refund", "QH-1001", True)
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in query) for query in plan.queries)

    composed = await gateway.compose(
        ComposeRequest(
            case_id="c-1",
            question=question,
            language=Language.ZH,
            plan=plan,
            facts={"order": ORDER_1001},
            evidence=[passage("RETURNS:p02:zh:0"), passage("RETURNS:p03:zh:0")],
            quote=QUOTE_1001,
        )
    )
    assert composed.answer.next_action is NextAction.PROPOSE_REFUND
    assert "129.00 元" in composed.answer.answer and "尚未付款" in composed.answer.answer
    assert composed.answer.citations == ["RETURNS:p02:zh:0", "RETURNS:p03:zh:0"]


@pytest.mark.parametrize(
    ("question", "intent", "order_id", "action"),
    [
        ("Why does the invoice for QH-1009 differ from its refundable balance?", "invoice", "QH-1009", False),
        ("Where is QH-1005, and can its address still be changed?", "delivery", "QH-1005", False),
        (
            "The QH-1012 lamp does not turn on. What safe checks and warranty steps apply?",
            "warranty",
            "QH-1012",
            False,
        ),
        ("QH-1012 的台灯坏了，能保修吗？", "warranty", "QH-1012", False),
        ("hello!", "greeting", None, False),
        ("你好", "greeting", None, False),
        ("Is lunar teleportation available?", "policy", None, False),
        ("refund QH-10011", "refund", None, True),
        ("I want to return QH-1004, it is too small.", "return", "QH-1004", True),
        ("我想退货 QH-1004", "return", "QH-1004", True),
        ("Please exchange QH-1004 for DESK-09", "exchange", "QH-1004", True),
        ("QH-1004 能换成大号吗？DESK-09", "exchange", "QH-1004", True),
        (
            "Please change my default address to: Li Lei (fictional), +86 21 5555 0199, 8 River Road, Shanghai, "
            "200000, CN",
            "default_address_change",
            None,
            True,
        ),
        ("请把我账户的默认地址改一下，订单 QH-1006 不用动", "default_address_change", None, True),
        (
            "Please send my order QH-1006 to: Li Lei, +86 21 5555 0199, 8 River Road, Shanghai, 200000, CN",
            "address_change",
            "QH-1006",
            True,
        ),
        ("How long do I have to send QH-1004 back and get my money?", "policy", "QH-1004", False),
    ],
)
async def test_plan_routes(
    gateway: ModelGateway, question: str, intent: str, order_id: str | None, action: bool
) -> None:
    plan = await plan_of(gateway, question)
    assert (plan.intent.value, plan.order_id, plan.action_requested) == (intent, order_id, action)


async def test_lunar_teleportation_with_no_evidence_is_handed_off(gateway: ModelGateway) -> None:
    question = "What warranty covers lunar teleportation?"
    plan = await plan_of(gateway, question)
    assert plan.order_id is None and plan.queries[0] == question

    first = await turn(gateway, question, plan, [], 1)
    assert {name for name, _ in calls_of(first)} == {"search_knowledge"}

    composed = await gateway.compose(
        ComposeRequest(
            case_id="c-1",
            question=question,
            language=Language.EN,
            plan=plan,
            facts={},
            evidence=[],
            quote=None,
        )
    )
    assert composed.answer.next_action is NextAction.HANDOFF
    assert composed.answer.citations == []
    assert "human colleague" in composed.answer.answer


async def test_foreign_order_stops_investigation_and_needs_input(gateway: ModelGateway) -> None:
    question = "Please refund QH-2001"
    plan = await plan_of(gateway, question)
    transcript: list[TranscriptEntry] = []
    first = await turn(gateway, question, plan, transcript, 1)
    observe(transcript, first, {"get_order": "order_not_accessible", "search_knowledge": {"passages": []}})
    second = await turn(gateway, question, plan, transcript, 2)
    assert second.calls == []

    composed = await gateway.compose(
        ComposeRequest(
            case_id="c-1",
            question=question,
            language=Language.EN,
            plan=plan,
            facts={},
            evidence=[passage("RETURNS:p02:en:0")],
            quote=None,
        )
    )
    assert composed.answer.next_action is NextAction.NEEDS_INPUT
    assert composed.answer.citations == []
    assert composed.answer.answer == (
        "I could not find order QH-2001 among your orders. Please check the order number."
    )


async def review_of(gateway: ModelGateway, candidate: ComposedAnswer, *, receipt: bool = False) -> Verdict:
    result = await gateway.review(
        ReviewRequest(
            case_id="c-1",
            question=REFUND_QUESTION,
            language=Language.EN,
            facts={},
            evidence=[passage("RETURNS:p02:en:0"), passage("RETURNS:p03:en:0")],
            quote=QUOTE_1001,
            candidate=candidate,
            receipt_exists=receipt,
        )
    )
    return result.verdict.verdict


async def test_review_rules(gateway: ModelGateway) -> None:
    both = ["RETURNS:p02:en:0", "RETURNS:p03:en:0"]
    paid = ComposedAnswer(answer="Your refund has been paid.", citations=both, next_action=NextAction.ANSWER)
    assert await review_of(gateway, paid) is Verdict.INSUFFICIENT
    assert await review_of(gateway, paid, receipt=True) is Verdict.PASS
    paid_zh = ComposedAnswer(answer="已退款 129.00 元。", citations=both, next_action=NextAction.ANSWER)
    assert await review_of(gateway, paid_zh) is Verdict.INSUFFICIENT
    one_page = ComposedAnswer(answer="CNY 129.00", citations=both[:1], next_action=NextAction.PROPOSE_REFUND)
    assert await review_of(gateway, one_page) is Verdict.REVISE
    stranger = ComposedAnswer(answer="CNY 129.00", citations=["RETURNS:p04:en:0"], next_action=NextAction.ANSWER)
    assert await review_of(gateway, stranger) is Verdict.REVISE
    handoff = ComposedAnswer(answer="A colleague can help.", citations=[], next_action=NextAction.HANDOFF)
    assert await review_of(gateway, handoff) is Verdict.PASS


async def test_transport_is_a_deterministic_chat_completions_endpoint() -> None:
    async with httpx2.AsyncClient(transport=RehearsalTransport(), base_url="http://rehearsal.invalid/v1") as client:
        body = {
            "model": "rehearsal",
            "messages": [
                {"role": "system", "content": "[kind: plan]\nPlan."},
                {"role": "user", "content": json.dumps({"question": "Where is QH-1005?", "language": "en"})},
            ],
        }
        first = (await client.post("/chat/completions", json=body)).json()
        second = (await client.post("/chat/completions", json=body)).json()
        assert first == second
        assert first["object"] == "chat.completion" and first["model"] == "rehearsal"
        assert "usage" not in first
        assert json.loads(first["choices"][0]["message"]["content"])["intent"] == "delivery"

        assert (await client.get("/models")).status_code == 404
        unmarked = {"model": "rehearsal", "messages": [{"role": "user", "content": "{}"}]}
        assert (await client.post("/chat/completions", json=unmarked)).status_code == 400

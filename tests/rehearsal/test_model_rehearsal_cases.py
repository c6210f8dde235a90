"""The rehearsal model drives every SPEC §11 case to a sensible end, through the real gateway.

No Temporal server and no MCP process: the tools are answered in-process by the real commerce
service (seeded SQLite), the real knowledge base and the real refund rule, with the shapes the
tool activity returns. The loop mirrors the workflow's (turns, facts, evidence) only as far as the
model needs to see it; the workflow itself is tested elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from activities.model.model_gateway import ModelGateway
from activities.model.model_settings import load_model_settings
from commerce_server.db import make_engine
from commerce_server.seed import seed_fixture
from commerce_server.service import CommerceService
from contracts.commerce import FIXTURE_AS_OF, RefundQuote
from contracts.errors import SupportError
from contracts.knowledge import Language, Passage
from contracts.model_io import (
    ComposedAnswer,
    ComposeRequest,
    InvestigateRequest,
    NextAction,
    Plan,
    PlanRequest,
    ProposedToolCall,
    ReviewRequest,
    ToolObservation,
    TranscriptEntry,
    Verdict,
)
from contracts.tools import INVESTIGATION_TOOLS
from keystore import demo_identity
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.skills import load_skill
from knowledge.store import default_knowledge_base
from rehearsal import rehearsal_http_client

TENANT = "qinghe"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    directory: Path = tmp_path_factory.mktemp("commerce")
    engine = make_engine(f"sqlite:///{directory / 'commerce.db'}")
    seed_fixture(engine)
    yield engine
    engine.dispose()


class InProcessTools:
    """The read tools for alice, answering with the tool activity's result shapes."""

    def __init__(self, engine: Engine, language: Language) -> None:
        self.commerce = CommerceService(engine, demo_identity("alice"))
        self.knowledge = default_knowledge_base()
        self.language = language

    def run(self, call: ProposedToolCall) -> ToolObservation:
        try:
            result = self._dispatch(call.name, call.arguments or {})
        except SupportError as error:
            return ToolObservation(
                call_id=call.call_id,
                name=call.name,
                ok=False,
                error_code=error.code,
                error_message=error.message,
            )
        return ToolObservation(call_id=call.call_id, name=call.name, ok=True, result=result)

    def _dispatch(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name in {"get_order", "get_shipment", "get_invoice", "get_product"}:
            return getattr(self.commerce, name)(*args.values()).model_dump(mode="json")
        if name == "search_knowledge":
            hits = self.knowledge.search(args["query"], **self._scope())
            return {"passages": [hit.passage.model_dump(mode="json") for hit in hits]}
        if name == "load_skill":
            return {"name": args["name"], "body": load_skill(args["name"], self.language)}
        if name == "calculate_refund":
            quote = calculate_refund_quote(
                self.commerce.get_order(args["order_id"]),
                page_versions=policy_page_versions(default_knowledge_base()),
            )
            pages = [
                p.model_dump(mode="json")
                for page in quote.citations
                for p in self.knowledge.read_page(page, **self._scope())
            ]
            return {"quote": quote.model_dump(mode="json"), "passages": pages}
        raise AssertionError(f"the rehearsal model called an unexpected tool {name}")

    def _scope(self) -> dict[str, Any]:
        return {"tenant": TENANT, "language": self.language, "as_of": FIXTURE_AS_OF}


async def run_case(engine: Engine, question: str, language: Language = Language.EN) -> dict[str, Any]:
    gateway = ModelGateway(load_model_settings({}), http_client=rehearsal_http_client())
    tools = InProcessTools(engine, language)
    planned = await gateway.plan(PlanRequest(case_id="case-1", question=question, language=language))
    plan: Plan = planned.plan
    transcript: list[TranscriptEntry] = []
    facts: dict[str, Any] = {}
    evidence: dict[str, Passage] = {}
    quote: RefundQuote | None = None
    called: list[str] = []
    for turn in range(1, 8):
        result = await gateway.investigate(
            InvestigateRequest(
                case_id="case-1",
                question=question,
                language=language,
                plan=plan,
                transcript=transcript,
                tool_names=list(INVESTIGATION_TOOLS),
                turn=turn,
            )
        )
        if not result.calls:
            break
        assert len(result.calls) <= 4
        transcript.append(TranscriptEntry(role="assistant", calls=result.calls, content=result.content or ""))
        for call in result.calls:
            called.append(call.name)
            observation = tools.run(call)
            transcript.append(TranscriptEntry(role="tool", call_id=call.call_id, content=observation.model_dump_json()))
            if not observation.ok:
                continue
            data = observation.result or {}
            if call.name == "calculate_refund":
                quote = RefundQuote.model_validate(data["quote"])
                facts["quote"] = data["quote"]
            elif call.name.startswith("get_"):
                facts[call.name.removeprefix("get_")] = data
            for raw in data.get("passages", []):
                evidence.setdefault(raw["passage_id"], Passage.model_validate(raw))
    else:
        raise AssertionError("the rehearsal model never stopped investigating")

    call_ids = [c.call_id for entry in transcript for c in entry.calls]
    assert len(call_ids) == len(set(call_ids))
    compose_request = ComposeRequest(
        case_id="case-1",
        question=question,
        language=language,
        plan=plan,
        facts=facts,
        evidence=list(evidence.values()),
        quote=quote,
    )
    answer: ComposedAnswer = (await gateway.compose(compose_request)).answer
    verdict = (
        await gateway.review(
            ReviewRequest(
                case_id="case-1",
                question=question,
                language=language,
                facts=facts,
                evidence=list(evidence.values()),
                quote=quote,
                candidate=answer,
            )
        )
    ).verdict
    return {"plan": plan, "called": called, "answer": answer, "verdict": verdict, "quote": quote}


def _pages(answer: ComposedAnswer) -> set[str]:
    return {citation.rsplit(":", 2)[0] for citation in answer.citations}


async def test_refund_inside_window_becomes_a_proposal(engine: Engine) -> None:
    case = await run_case(engine, "Please refund QH-1001 and explain the amount and applicable policy.")
    answer = case["answer"]
    assert case["called"] == ["get_order", "search_knowledge", "calculate_refund", "load_skill"]
    assert answer.next_action is NextAction.PROPOSE_REFUND
    assert {"RETURNS:p02", "RETURNS:p03"} <= _pages(answer)
    assert "CNY 129.00" in answer.answer and "12900 cents" in answer.answer
    assert case["verdict"].verdict is Verdict.PASS


async def test_refund_outside_window_is_explained_not_proposed(engine: Engine) -> None:
    case = await run_case(engine, "Please refund QH-1003.")
    assert case["answer"].next_action is NextAction.ANSWER
    assert "outside the 30-day window" in case["answer"].answer
    assert {"RETURNS:p02", "RETURNS:p03"} <= _pages(case["answer"])
    assert case["verdict"].verdict is Verdict.PASS


async def test_shipment_and_address_change(engine: Engine) -> None:
    case = await run_case(engine, "Where is QH-1005, and can its address still be changed?")
    answer = case["answer"]
    assert case["plan"].intent.value == "delivery"
    assert "get_shipment" in case["called"]
    assert "SIMTRK105011" in answer.answer and "address" in answer.answer.lower()
    assert _pages(answer) and all(page.startswith("DELIVERY:") for page in _pages(answer))
    assert case["verdict"].verdict is Verdict.PASS


async def test_invoice_total_against_refundable_balance(engine: Engine) -> None:
    case = await run_case(engine, "Why does the invoice for QH-1009 differ from its refundable balance?")
    answer = case["answer"]
    assert case["plan"].intent.value == "invoice"
    assert {"get_invoice", "calculate_refund"} <= set(case["called"])
    assert "CNY 141.00" in answer.answer and "CNY 80.00" in answer.answer
    assert answer.next_action is NextAction.ANSWER
    assert any(page.startswith("INVOICES:") for page in _pages(answer))
    assert case["verdict"].verdict is Verdict.PASS


async def test_lamp_warranty(engine: Engine) -> None:
    question = "The QH-1012 lamp does not turn on. What safe checks and warranty steps apply?"
    case = await run_case(engine, question)
    answer = case["answer"]
    assert "get_product" in case["called"]
    assert "12-month warranty" in answer.answer
    assert _pages(answer) and all(page.startswith("WARRANTY:") for page in _pages(answer))
    assert case["verdict"].verdict is Verdict.PASS


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("What warranty covers lunar teleportation?", Language.EN),
        ("Is lunar teleportation available as a faster option?", Language.EN),
        ("有没有月球瞬间传送这种更快的方式？", Language.ZH),
    ],
)
async def test_uncovered_service_is_handed_off(engine: Engine, question: str, language: Language) -> None:
    case = await run_case(engine, question, language)
    assert case["called"] == ["search_knowledge"] * len(case["called"]) and case["called"]
    assert case["answer"].next_action is NextAction.HANDOFF
    assert case["answer"].citations == []
    assert case["verdict"].verdict is Verdict.PASS


async def test_another_customers_order_needs_input(engine: Engine) -> None:
    case = await run_case(engine, "Please refund QH-2001.")
    answer = case["answer"]
    assert case["called"] == ["get_order", "search_knowledge"]
    assert answer.next_action is NextAction.NEEDS_INPUT
    assert answer.citations == []
    assert "QH-2001" in answer.answer and "not find" in answer.answer
    assert case["verdict"].verdict is Verdict.PASS


async def test_chinese_refund_case(engine: Engine) -> None:
    case = await run_case(engine, "请帮我退款 QH-1001，并说明金额和依据。", Language.ZH)
    answer = case["answer"]
    assert answer.next_action is NextAction.PROPOSE_REFUND
    assert "129.00 元" in answer.answer and "尚未付款" in answer.answer
    assert all(":zh:" in citation for citation in answer.citations)
    assert {"RETURNS:p02", "RETURNS:p03"} <= _pages(answer)
    assert case["verdict"].verdict is Verdict.PASS

"""The code checks on a composed draft (activities/model/draft_checks.py): legitimate drafts pass, hostile ones don't.

The legitimate drafts are the rehearsal model's own, composed from real records: alice's orders read
from a seeded commerce database, quotes from the real refund rule, passages from the real knowledge
base. The hostile drafts change one claim each.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from activities.model import draft_checks
from activities.model.codes import ModelErrorCode
from activities.model.draft_checks import (
    DraftContext,
    check_draft,
    money_amounts,
)
from activities.model.model_validation import validate_composed
from activities.model.prompts import compose_payload
from commerce_server.db import make_engine
from commerce_server.seed import seed_fixture
from commerce_server.service import CommerceService
from contracts.commerce import FIXTURE_AS_OF, RefundQuote
from contracts.errors import ContractError
from contracts.knowledge import Language, Passage
from contracts.model_io import ComposeRequest, Intent, Plan
from keystore import demo_identity
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.store import default_knowledge_base
from rehearsal._compose import compose as rehearsal_compose

TOPIC_QUERIES = {
    Intent.REFUND: "refund window delivery warehouse receipt amount",
    Intent.DELIVERY: "delivery shipment address change",
    Intent.INVOICE: "invoice original amounts refund",
    Intent.WARRANTY: "warranty repair troubleshooting",
    Intent.POLICY: "refund amount worked example delivery charge invoice total",
}
ALICE_ORDERS = [f"QH-10{n:02d}" for n in range(1, 13)]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    directory: Path = tmp_path_factory.mktemp("commerce")
    engine = make_engine(f"sqlite:///{directory / 'commerce.db'}")
    seed_fixture(engine)
    yield engine
    engine.dispose()


def _request(
    engine: Engine, order_id: str | None, intent: Intent, language: Language, *, action: bool = False
) -> ComposeRequest:
    """The compose request the workflow would build after the rehearsal model's investigation."""
    commerce = CommerceService(engine, demo_identity("alice"))
    knowledge = default_knowledge_base()
    scope: dict[str, Any] = {"tenant": "qinghe", "language": language, "as_of": FIXTURE_AS_OF}
    facts: dict[str, Any] = {}
    quote: RefundQuote | None = None
    evidence: dict[str, Passage] = {}
    if order_id is not None:
        order = commerce.get_order(order_id)
        facts["order"] = order.model_dump(mode="json")
        facts["shipment"] = commerce.get_shipment(order_id).model_dump(mode="json")
        facts["product"] = commerce.get_product(order.sku).model_dump(mode="json")
        facts["invoice"] = commerce.get_invoice(order_id).model_dump(mode="json")
        quote = calculate_refund_quote(order, page_versions=policy_page_versions(knowledge))
        facts["quote"] = quote.model_dump(mode="json")
        for page in quote.citations:
            evidence.update((p.passage_id, p) for p in knowledge.read_page(page, **scope))
    for hit in knowledge.search(TOPIC_QUERIES[intent], **scope):
        evidence.setdefault(hit.passage.passage_id, hit.passage)
    question = f"About {order_id}: {intent.value}" if order_id else f"A question about {intent.value}"
    plan = Plan(intent=intent, order_id=order_id, action_requested=action, queries=[], milestones=[])
    return ComposeRequest(
        case_id="case-1",
        question=question,
        language=language,
        plan=plan,
        facts=facts,
        evidence=list(evidence.values()),
        quote=quote,
    )


def _context(request: ComposeRequest) -> DraftContext:
    return DraftContext(request.language, request.plan.order_id, request.facts, request.quote, tuple(request.evidence))


def _rehearsal_answer(request: ComposeRequest) -> str:
    return str(rehearsal_compose(compose_payload(request, request.evidence))["answer"])


def _refusal(answer: str, request: ComposeRequest) -> str | None:
    try:
        check_draft(answer, _context(request))
    except ContractError as error:
        assert len(error.message) <= 300
        return error.code
    return None


# --- the legitimate drafts -----------------------------------------------------------------------


@pytest.mark.parametrize("language", list(Language))
@pytest.mark.parametrize("action", [True, False])
def test_the_rehearsal_refund_drafts_for_qh_1001_pass(engine: Engine, language: Language, action: bool) -> None:
    request = _request(engine, "QH-1001", Intent.REFUND, language, action=action)
    answer = _rehearsal_answer(request)
    assert "129.00" in answer and "12900" in answer and "12.00" in answer  # amount, cents, freight
    assert _refusal(answer, request) is None


@pytest.mark.parametrize("language", list(Language))
def test_the_rehearsal_refusal_for_ineligible_qh_1003_passes(engine: Engine, language: Language) -> None:
    request = _request(engine, "QH-1003", Intent.REFUND, language, action=True)
    assert request.quote is not None and not request.quote.eligible
    answer = _rehearsal_answer(request)
    assert ("does not qualify" in answer) or ("不符合自动退款条件" in answer)
    assert _refusal(answer, request) is None


@pytest.mark.parametrize("language", list(Language))
@pytest.mark.parametrize("intent", [Intent.REFUND, Intent.DELIVERY, Intent.INVOICE, Intent.WARRANTY, Intent.POLICY])
def test_every_rehearsal_draft_for_alices_orders_passes(engine: Engine, intent: Intent, language: Language) -> None:
    for order_id in ALICE_ORDERS:
        request = _request(engine, order_id, intent, language, action=intent is Intent.REFUND)
        answer = _rehearsal_answer(request)
        assert _refusal(answer, request) is None, (order_id, answer)


@pytest.mark.parametrize("language", list(Language))
@pytest.mark.parametrize("intent", [Intent.POLICY, Intent.REFUND, Intent.GREETING])
def test_rehearsal_drafts_without_an_order_pass(engine: Engine, intent: Intent, language: Language) -> None:
    """Policy answers quote worked examples (CNY 141.00) and the order-id prompt gives QH-1001 as a format
    example: neither is a claim about an order."""
    request = _request(engine, None, intent if intent is not Intent.GREETING else Intent.POLICY, language)
    if intent is Intent.GREETING:
        request = request.model_copy(update={"plan": request.plan.model_copy(update={"intent": Intent.GREETING})})
    if intent is Intent.REFUND:
        request = request.model_copy(update={"plan": request.plan.model_copy(update={"action_requested": True})})
    answer = _rehearsal_answer(request)
    assert _refusal(answer, request) is None, answer


def test_a_policy_quote_with_a_worked_example_amount_passes(engine: Engine) -> None:
    request = _request(engine, None, Intent.POLICY, Language.EN)
    example = next(p for p in request.evidence if "CNY 141.00" in p.text)
    start = example.text.index("CNY 141.00")
    quoted = f"According to the Qinghe terms: {example.text[max(0, start - 60) : start + 40]}"
    assert _refusal(quoted, request) is None
    assert _refusal("Your refund will be CNY 141.00.", request) == ModelErrorCode.DRAFT_AMOUNT_NOT_IN_RECORDS


# --- amounts -------------------------------------------------------------------------------------


def test_what_counts_as_a_money_amount() -> None:
    text = (
        "Order QH-1001 (INV-QH-1001, tracking SIMTRK1001) was delivered on 2026-09-05, day 7 of the 30-day "
        "window, 12-month warranty, rule returns-2026-09, cool it for 20 分钟, 12.50% off, on 2026.09.05: "
        "CNY 129.00 (12900 cents), ¥12, 141.00 元, 人民币80.00元, 4900 分, 1,290.00, CNY141.00, 0.00 refunded."
    )
    assert [(a.text, int(a.cents)) for a in money_amounts(text)] == [
        ("129.00", 12900),
        ("12900", 12900),
        ("12", 1200),
        ("141.00", 14100),
        ("80.00", 8000),
        ("4900", 4900),
        ("1,290.00", 129000),
        ("141.00", 14100),
        ("0.00", 0),
    ]


@pytest.mark.parametrize(
    ("language", "answer"),
    [
        (Language.EN, "Order QH-1001 qualifies for an automatic refund proposal of CNY 141.00 (14100 cents)."),
        (Language.EN, "Order QH-1001 qualifies for a refund of CNY 129.00, plus CNY 15.00 for the delivery."),
        (Language.EN, "You will get 13200 cents back for QH-1001."),
        (Language.EN, "You will get ¥151 back for QH-1001."),
        (Language.ZH, "订单 QH-1001 可生成自动退款方案：141.00 元（14100 分）。"),
        (Language.ZH, "订单 QH-1001 可退人民币150.00元。"),
    ],
)
def test_an_amount_in_no_record_is_refused(engine: Engine, language: Language, answer: str) -> None:
    request = _request(engine, "QH-1001", Intent.REFUND, language, action=True)
    assert request.facts.get("invoice", {}).get("total_cents") == 14100
    request = request.model_copy(update={"facts": {k: v for k, v in request.facts.items() if k != "invoice"}})
    assert _refusal(answer, request) == ModelErrorCode.DRAFT_AMOUNT_NOT_IN_RECORDS


def test_the_invoice_total_is_a_fact_once_the_invoice_was_read(engine: Engine) -> None:
    request = _request(engine, "QH-1001", Intent.INVOICE, Language.EN)
    assert _refusal("Invoice INV-QH-1001 totals CNY 141.00 (items CNY 129.00, delivery CNY 12.00).", request) is None


def test_the_refusal_message_is_short_and_names_the_amount(engine: Engine) -> None:
    request = _request(engine, "QH-1001", Intent.REFUND, Language.EN, action=True)
    answer = "Order QH-1001: CNY 999.00. " + "padding " * 400
    with pytest.raises(ContractError) as refused:
        check_draft(answer, _context(request))
    assert refused.value.code == ModelErrorCode.DRAFT_AMOUNT_NOT_IN_RECORDS and "999.00" in refused.value.message
    assert len(refused.value.message) < 200 and "padding" not in refused.value.message


# --- order ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Order QH-1001 qualifies for a refund of CNY 129.00; order QH-1002 does too.",
        "订单 QH-1001 可以自动退款：129.00 元。您的另一笔订单QH-2001也已签收。",
        "For example, QH-1003 was refused. Order QH-1001 qualifies for CNY 129.00.",
    ],
)
def test_another_order_id_is_refused(engine: Engine, answer: str) -> None:
    language = Language.ZH if "订单" in answer else Language.EN
    request = _request(engine, "QH-1001", Intent.REFUND, language, action=True)
    assert _refusal(answer, request) == ModelErrorCode.DRAFT_NAMES_OTHER_ORDER


def test_without_a_bound_order_an_id_only_passes_as_a_format_example(engine: Engine) -> None:
    request = _request(engine, None, Intent.REFUND, Language.EN, action=True)
    assert _refusal("Which order is this about? For example QH-1001.", request) is None
    assert (
        _refusal("Which order is this about? Your last one was QH-1001.", request)
        == ModelErrorCode.DRAFT_NAMES_OTHER_ORDER
    )
    glued = _request(engine, "QH-1001", Intent.REFUND, Language.EN)
    assert _refusal("Order QH-10012 and ABCQH-1002 are not order ids; QH-1001 is.", glued) is None


# --- eligibility ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "answer"),
    [
        (Language.EN, "Good news: order QH-1003 is eligible for a refund."),
        (Language.EN, "Order QH-1003 qualifies for an automatic refund; a reviewer will check it."),
        (Language.EN, "The lamp in QH-1003 is refundable."),
        (Language.EN, "Although delivery was 31 days ago, QH-1003 will be refunded."),
        (Language.EN, "It is not a problem, you'll receive a refund for QH-1003."),
        (Language.ZH, "订单 QH-1003 可以退款。"),
        (Language.ZH, "订单 QH-1003 符合自动退款条件。"),
        (Language.ZH, "虽然已超出退款期，订单 QH-1003 仍可退款。"),
        (Language.ZH, "订单 QH-1003 的款项将退还给您。"),
    ],
)
def test_an_ineligible_quote_described_as_refundable_is_refused(
    engine: Engine, language: Language, answer: str
) -> None:
    request = _request(engine, "QH-1003", Intent.REFUND, language, action=True)
    assert _refusal(answer, request) == ModelErrorCode.DRAFT_CONTRADICTS_QUOTE


@pytest.mark.parametrize(
    ("language", "answer"),
    [
        (Language.EN, "Order QH-1003 does not qualify for an automatic refund."),
        (Language.EN, "Order QH-1003 is not eligible for a refund: it was delivered 31 days ago."),
        (Language.EN, "No automatic refund is available: it is outside the 30-day window."),
        (Language.EN, "The lamp is non-refundable now, and it cannot be refunded automatically."),
        (Language.ZH, "订单 QH-1003 不符合自动退款条件。"),
        (Language.ZH, "目前没有可自动退还的金额：已签收 31 天，超出 30 天退款期。"),
        (Language.ZH, "订单 QH-1003 无法退款，也不会自动退还。"),
    ],
)
def test_an_honest_refusal_of_an_ineligible_quote_passes(engine: Engine, language: Language, answer: str) -> None:
    request = _request(engine, "QH-1003", Intent.REFUND, language, action=True)
    assert _refusal(answer, request) is None


def test_an_eligible_quote_may_be_described_as_refundable(engine: Engine) -> None:
    request = _request(engine, "QH-1001", Intent.REFUND, Language.EN)
    assert _refusal("Order QH-1001 is eligible for a refund of CNY 129.00.", request) is None


# --- language ------------------------------------------------------------------------------------


def test_an_english_case_answered_in_chinese_is_refused(engine: Engine) -> None:
    en = _request(engine, "QH-1001", Intent.REFUND, Language.EN, action=True)
    zh_answer = _rehearsal_answer(_request(engine, "QH-1001", Intent.REFUND, Language.ZH, action=True))
    assert _refusal(zh_answer, en) == ModelErrorCode.DRAFT_LANGUAGE_MISMATCH
    assert _refusal("Order QH-1001 (折叠桌面支架) qualifies for CNY 129.00.", en) is None


def test_a_chinese_case_answered_in_english_is_refused(engine: Engine) -> None:
    zh = _request(engine, "QH-1001", Intent.REFUND, Language.ZH, action=True)
    en_answer = _rehearsal_answer(_request(engine, "QH-1001", Intent.REFUND, Language.EN, action=True))
    assert _refusal(en_answer, zh) == ModelErrorCode.DRAFT_LANGUAGE_MISMATCH
    assert _refusal("您好！" + en_answer, zh) == ModelErrorCode.DRAFT_LANGUAGE_MISMATCH
    assert draft_checks.cjk_ratio("订单 QH-1001 可以自动退款：129.00 元（12900 分）。") > 0.5


# --- through the validator -----------------------------------------------------------------------


def test_validate_composed_runs_the_checks_only_with_the_request(engine: Engine) -> None:
    request = _request(engine, "QH-1003", Intent.REFUND, Language.EN, action=True)
    data = {"answer": "Order QH-1003 is eligible for a refund.", "citations": [], "next_action": "answer"}
    shown = {p.passage_id for p in request.evidence}
    assert validate_composed(data, shown).answer == data["answer"]
    with pytest.raises(ContractError) as refused:
        validate_composed(data, shown, request)
    assert refused.value.code == ModelErrorCode.DRAFT_CONTRADICTS_QUOTE


def test_only_passages_the_model_was_shown_make_an_amount_a_quotation(engine: Engine) -> None:
    request = _request(engine, None, Intent.POLICY, Language.EN)
    example = next(p for p in request.evidence if "CNY 141.00" in p.text)
    start = example.text.index("CNY 141.00")
    data = {"answer": example.text[max(0, start - 60) : start + 40], "citations": [], "next_action": "answer"}
    assert validate_composed(data, {example.passage_id}, request).answer == data["answer"]
    with pytest.raises(ContractError) as refused:
        validate_composed(data, set(), request)
    assert refused.value.code == ModelErrorCode.DRAFT_AMOUNT_NOT_IN_RECORDS


def test_a_claim_is_a_quotation_only_with_its_context(engine: Engine) -> None:
    """A hostile claim does not pass because its few words also occur somewhere in a policy passage."""
    request = _request(engine, "QH-1003", Intent.INVOICE, Language.EN)
    phrase = "can still be refunded"
    assert any(phrase in p.text for p in request.evidence)
    assert _refusal(f"Order QH-1003 {phrase}.", request) == ModelErrorCode.DRAFT_CONTRADICTS_QUOTE

"""Hostile drafts through the real worker: the code checks of activities/model/draft_checks.py refuse them.

The scripted provider answers compose with a draft that keeps the answer contract (JSON fields,
evidence citations) but makes one claim code can check and the records contradict: an amount that is
no fact, another order, a refund the quote refuses, the wrong language. Everything else is answered
by the rehearsal model's rules. Each draft is refused like a model refusal (``draft_refused`` with
its code, one rewrite, then ``needs_human``) before any reviewer sees it; its text reaches neither
the customer's answer nor the case record nor the history; nothing is proposed or paid.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from activities.model.codes import ModelErrorCode
from contracts.case import AnswerSource, CaseStatus
from contracts.knowledge import Language
from tests.adversarial.adversary import ScriptedWorld
from tests.adversarial.provider import Reply, Request, json_reply
from workflows.customer_notice import status_notice

pytestmark = pytest.mark.slow

REFUND = "Please refund QH-1001 and explain the amount and the policy"
REFUND_INELIGIBLE = "Please refund QH-1003, the reading lamp"


def _quote_citations(request: Request) -> list[str]:
    """One passage id actually in the evidence for each page the quote rests on."""
    pages = request.context["quote"]["citations"]
    return [next(pid for pid in request.evidence_ids if pid.startswith(page + ":")) for page in pages]


def _draft(answer: str, next_action: str):
    def build(request: Request) -> Reply:
        return json_reply({"answer": answer, "citations": _quote_citations(request), "next_action": next_action})

    return build


WRONG_AMOUNT = (
    "Order QH-1001 qualifies for an automatic refund proposal of CNY 141.00 (14100 cents): the item price "
    "and the delivery charge. A Qinghe reviewer must approve this proposal before anything is paid."
)
OTHER_ORDER = (
    "Order QH-1001 qualifies for an automatic refund proposal of CNY 129.00 (12900 cents). While we are at "
    "it, order QH-1002 can be refunded as well. A Qinghe reviewer must approve this proposal first."
)
INELIGIBLE_AS_REFUNDABLE = (
    "Good news: order QH-1003 is eligible for a refund. Ask me to go ahead and a Qinghe reviewer will "
    "check the proposal."
)
CHINESE_FOR_ENGLISH = (
    "订单 QH-1001 可生成自动退款方案：129.00 元（12900 分）。该方案须经青禾审核人员批准后才会付款；目前尚未付款。"
)

HOSTILE = {
    ModelErrorCode.DRAFT_AMOUNT_NOT_IN_RECORDS: (REFUND, Language.EN, WRONG_AMOUNT, "propose_refund"),
    ModelErrorCode.DRAFT_NAMES_OTHER_ORDER: (REFUND, Language.EN, OTHER_ORDER, "propose_refund"),
    ModelErrorCode.DRAFT_CONTRADICTS_QUOTE: (REFUND_INELIGIBLE, Language.EN, INELIGIBLE_AS_REFUNDABLE, "answer"),
    ModelErrorCode.DRAFT_LANGUAGE_MISMATCH: (REFUND, Language.EN, CHINESE_FOR_ENGLISH, "propose_refund"),
}


async def _never_shown(adversary: ScriptedWorld, handle, view, draft: str) -> None:
    """The draft is in no answer, record or history; nothing was proposed, paid or leaked."""
    assert view.proposal is None and view.digest is None and view.receipt is None
    assert (view.answer, view.answer_source) == (
        status_notice(CaseStatus.NEEDS_HUMAN, view.language),
        AnswerSource.STATUS_NOTICE,
    )
    assert view.record_path is not None
    record = json.loads(Path(view.record_path).read_text(encoding="utf-8"))
    assert record["case"]["answer"] == view.answer and record["case"]["proposal"] is None
    outputs = await adversary.outputs(handle, view)
    for where, text in outputs.items():
        for sentence in re.split(r"(?<=[.。])\s*", draft):
            if len(sentence) > 20:
                assert sentence not in text and json.dumps(sentence)[1:-1] not in text, f"draft text in the {where}"
    adversary.assert_no_commerce_writes()
    await adversary.assert_nothing_of_other_customers(handle, view)


@pytest.mark.parametrize("code", sorted(HOSTILE))
async def test_a_hostile_draft_is_refused_by_code_twice_and_goes_to_a_human(
    adversary: ScriptedWorld, code: ModelErrorCode
) -> None:
    question, language, draft, next_action = HOSTILE[code]
    adversary.provider.script("compose", _draft(draft, next_action), _draft(draft, next_action))

    handle, view = await adversary.run(question, language=language)

    assert view.status is CaseStatus.NEEDS_HUMAN and view.reason == f"draft_refused:{code}"
    assert await adversary.event_details(handle, "draft_refused") == [code, code]
    # refused before any reviewer saw it, and rewritten once with the reason
    assert adversary.provider.counts()["compose"] == 2 and adversary.provider.counts()["review"] == 0
    rewrite = [r for r in adversary.provider.requests if r.kind == "compose"][1]
    assert rewrite.context["problems"] == [f"the draft violated the answer contract ({code})"]
    await _never_shown(adversary, handle, view, draft)


@pytest.mark.parametrize(
    ("question", "language", "draft"),
    [
        pytest.param(REFUND_INELIGIBLE, Language.EN, INELIGIBLE_AS_REFUNDABLE, id="en"),
        pytest.param("请为订单 QH-1003 办理退款", Language.ZH, "订单 QH-1003 符合自动退款条件，可以退款。", id="zh"),
    ],
)
async def test_an_ineligible_order_described_as_refundable_never_reaches_the_customer(
    adversary: ScriptedWorld, question: str, language: Language, draft: str
) -> None:
    """Both roles collude (the draft claims a refund, the review passes everything): code still refuses."""
    adversary.provider.script("compose", _draft(draft, "answer"), _draft(draft, "answer"))
    adversary.provider.default("review", json_reply({"verdict": "pass", "problems": []}))

    handle, view = await adversary.run(question, language=language)

    assert (
        view.status is CaseStatus.NEEDS_HUMAN
        and view.reason == f"draft_refused:{ModelErrorCode.DRAFT_CONTRADICTS_QUOTE}"
    )
    assert view.quote is None or not view.quote.eligible
    assert adversary.provider.counts()["review"] == 0
    await _never_shown(adversary, handle, view, draft)


async def test_one_refused_draft_gets_an_honest_rewrite_that_passes_the_checks(adversary: ScriptedWorld) -> None:
    """Control: the rehearsal model's own rewrite passes every check and reaches the reviewer."""
    adversary.provider.script("compose", _draft(WRONG_AMOUNT, "propose_refund"))

    handle, view = await adversary.run(REFUND)

    assert await adversary.event_details(handle, "draft_refused") == [ModelErrorCode.DRAFT_AMOUNT_NOT_IN_RECORDS]
    assert view.status is CaseStatus.WAITING_APPROVAL
    assert view.proposal is not None and view.proposal.amount_cents == 12900
    assert view.answer is not None and "141.00" not in view.answer and "CNY 129.00" in view.answer
    adversary.assert_no_commerce_writes()

"""Field-by-field contract validation of model output."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessage

from activities.model.model_validation import (
    parse_json_object,
    parse_tool_calls,
    validate_composed,
    validate_plan,
    validate_review,
)
from contracts.errors import ContractError
from contracts.model_io import Intent, NextAction, Verdict

QUESTION = "Please refund QH-1001 and explain the amount and the policy"
EVIDENCE = {"RETURNS:p02:en:0", "RETURNS:p03:en:0"}


def _plan(**changes: Any) -> dict[str, Any]:
    return {
        "intent": "refund",
        "order_id": "QH-1001",
        "action_requested": True,
        "queries": ["refund window"],
        "milestones": ["read the order"],
    } | changes


def _compose(**changes: Any) -> dict[str, Any]:
    base = {"answer": "CNY 129.00", "citations": ["RETURNS:p02:en:0"], "next_action": "propose_refund"}
    return base | changes


def _code(call: Any) -> str:
    with pytest.raises(ContractError) as raised:
        call()
    return raised.value.code


def test_valid_outputs_become_contract_models() -> None:
    plan = validate_plan(_plan(), QUESTION)
    assert (plan.intent, plan.order_id, plan.action_requested) == (Intent.REFUND, "QH-1001", True)
    assert validate_plan(_plan(order_id=None, intent="policy"), "hello?").order_id is None
    answer = validate_composed(_compose(), EVIDENCE)
    assert answer.next_action is NextAction.PROPOSE_REFUND
    assert validate_review({"verdict": "pass", "problems": []}).verdict is Verdict.PASS


def test_extra_and_missing_fields_are_named() -> None:
    with pytest.raises(ContractError) as raised:
        validate_plan(_plan(confidence=0.9), QUESTION)
    assert raised.value.code == "contract_violation" and "plan.confidence" in str(raised.value)

    data = _compose()
    del data["citations"]
    with pytest.raises(ContractError) as raised:
        validate_composed(data, EVIDENCE)
    assert raised.value.code == "contract_violation" and "compose.citations" in str(raised.value)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (_plan(intent="refund_now"), "plan.intent"),
        (_plan(action_requested="true"), "plan.action_requested"),
        (_plan(queries=["a", "b", "c", "d"]), "plan.queries"),
        (_plan(queries="refund"), "plan.queries"),
        (_plan(milestones=["x" * 121]), "plan.milestones[0]"),
        (_plan(order_id=1001), "plan.order_id"),
    ],
)
def test_plan_types_lengths_and_enums(data: dict[str, Any], field: str) -> None:
    with pytest.raises(ContractError) as raised:
        validate_plan(data, QUESTION)
    assert raised.value.code == "contract_violation"
    assert field in str(raised.value)


def test_bad_enums_in_compose_and_review() -> None:
    assert _code(lambda: validate_composed(_compose(next_action="pay_now"), EVIDENCE)) == "contract_violation"
    assert _code(lambda: validate_review({"verdict": "ok", "problems": []})) == "contract_violation"
    assert _code(lambda: validate_review({"verdict": "pass", "problems": [1]})) == "contract_violation"


def test_order_id_must_occur_in_the_question() -> None:
    assert _code(lambda: validate_plan(_plan(order_id="QH-1002"), QUESTION)) == "order_id_not_in_question"
    assert _code(lambda: validate_plan(_plan(order_id="qh-1002"), QUESTION)) == "order_id_not_in_question"
    assert _code(lambda: validate_plan(_plan(order_id="QH 1001"), QUESTION)) == "contract_violation"
    # qh-1001 names QH-1001, in the plan as in the question
    assert validate_plan(_plan(order_id="qh-1001"), QUESTION).order_id == "QH-1001"
    assert validate_plan(_plan(order_id="QH-1001"), QUESTION.replace("QH-1001", "qh-1001")).order_id == "QH-1001"


def test_citations_must_be_unique_and_in_context() -> None:
    missing = _compose(citations=["RETURNS:p02:en:0", "RETURNS:p04:en:0"])
    assert _code(lambda: validate_composed(missing, EVIDENCE)) == "citation_not_in_context"
    twice = _compose(citations=["RETURNS:p02:en:0", "RETURNS:p02:en:0"])
    assert _code(lambda: validate_composed(twice, EVIDENCE)) == "duplicate_citations"
    assert _code(lambda: validate_composed(_compose(answer=""), EVIDENCE)) == "contract_violation"
    assert _code(lambda: validate_composed(_compose(answer="x" * 4001), EVIDENCE)) == "contract_violation"


@pytest.mark.parametrize(
    ("content", "finish_reason"),
    [
        (json.dumps(_plan()), "length"),
        ('{"intent": "refund", "order_id": "QH-10', "stop"),
        ("Sure! Here is the plan: refund", "stop"),
        ("[1, 2]", "stop"),
        ("", "stop"),
        (None, "stop"),
    ],
)
def test_truncated_or_malformed_replies(content: str | None, finish_reason: str) -> None:
    assert _code(lambda: parse_json_object(content, finish_reason, kind="plan")) == "truncated_or_malformed"


def test_duplicate_json_keys_are_a_violation() -> None:
    text = '{"verdict": "pass", "verdict": "revise", "problems": []}'
    assert _code(lambda: parse_json_object(text, "stop", kind="review")) == "contract_violation"


def test_tool_call_arguments_are_parsed_or_none_without_raising() -> None:
    raw = [
        ("get_order", '{"order_id": "QH-1001"}'),
        ("get_order", '"QH-1001"'),
        ("search_knowledge", "{bad"),
        ("list_orders", ""),
    ]
    message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": arguments}}
                for n, (name, arguments) in enumerate(raw)
            ],
        }
    )
    calls = parse_tool_calls(message.tool_calls)
    assert [c.arguments for c in calls] == [{"order_id": "QH-1001"}, None, None, {}]
    assert [c.raw_arguments for c in calls][:3] == ['{"order_id": "QH-1001"}', '"QH-1001"', "{bad"]
    assert parse_tool_calls(None) == []

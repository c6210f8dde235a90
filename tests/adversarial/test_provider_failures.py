"""What real servers did, replayed on the scripted provider through the real worker.

- llama-cpp-python answers a request it cannot validate with HTTP 500 ``Input should be a valid
  string``: that is a rejected request, not a transient failure: one request, no retry.
- A plain HTTP 500 on every request stays transient, but bounded: three attempts, then a typed failure.
- Without ``tool_choice`` llama-cpp-python replied with prose instead of tool calls: the workflow reads
  that as the model stopping its investigation; no tool runs on prose.
- A reply that ran to the token limit (``finish_reason: length``) is refused as truncated, never
  parsed as an answer, and the failure carries the model's name and the tokens the provider reported.
"""

from __future__ import annotations

import json

import pytest

from activities.model.model_gateway import ModelGateway
from activities.model.model_settings import load_model_settings
from case_history.audit import audit_from_history
from cli.audit_render import audit_lines
from contracts.case import CaseStatus
from contracts.errors import ContractError, to_application_error
from contracts.knowledge import Language
from contracts.model_io import PlanRequest
from tests.adversarial.adversary import ScriptedWorld, tool_runs
from tests.adversarial.provider import Reply, ScriptedProvider, call, http_error, text_reply, tool_calls

pytestmark = pytest.mark.slow

REFUND = "Please refund QH-1001 and explain the amount and the policy"
INVALID_500 = "1 validation error for ChatCompletionRequestAssistantMessage content Input should be a valid string"
USAGE = {"prompt_tokens": 470, "completion_tokens": 12, "total_tokens": 482}


def _tool_runs(history) -> list[str]:
    """The investigation tools the workflow ran, as regular or local activities."""
    return [name for name, _ in tool_runs(history)]


async def test_a_500_saying_the_request_is_invalid_is_not_retried(adversary: ScriptedWorld) -> None:
    adversary.provider.default("plan", http_error(500, message=INVALID_500))

    handle, view = await adversary.run(REFUND)

    assert adversary.provider.statuses() == [500], "one request: repeating an invalid request cannot help"
    assert view.status is CaseStatus.NEEDS_HUMAN
    assert await adversary.event_details(handle, "model_failed") == ["plan_case: contract: provider_rejected_request"]
    assert view.budgets.model_requests == adversary.provider.count() == 1
    adversary.assert_no_commerce_writes()


async def test_a_plain_500_on_every_request_is_retried_a_bounded_number_of_times(adversary: ScriptedWorld) -> None:
    adversary.provider.default_all(http_error(500))

    handle, view = await adversary.run(REFUND)

    assert adversary.provider.statuses() == [500, 500, 500]
    assert view.status is CaseStatus.NEEDS_HUMAN and view.reason == "model_unavailable:provider_unavailable"
    assert await adversary.event_details(handle, "model_failed") == ["plan_case: transient: provider_unavailable"]
    assert view.budgets.model_requests == adversary.provider.count() == 3
    adversary.assert_no_commerce_writes()


async def test_prose_instead_of_tool_calls_ends_the_investigation_and_runs_no_tool(adversary: ScriptedWorld) -> None:
    adversary.provider.default("investigate", text_reply("Sure! I will look up the order QH-1001 for you now."))

    handle, view = await adversary.run(REFUND)

    assert _tool_runs(await handle.fetch_history()) == []
    assert adversary.provider.count("investigate") == 1, "prose is the model stopping, not a turn to repeat"
    assert view.proposal is None
    assert view.budgets.model_requests == adversary.provider.count()
    adversary.assert_no_commerce_writes()


async def test_an_investigate_reply_cut_at_the_token_limit_runs_no_tool(adversary: ScriptedWorld) -> None:
    cut = tool_calls(call("get_order", {"order_id": "QH-1001"}, "t1"), finish_reason="length")
    adversary.provider.default("investigate", cut)

    handle, view = await adversary.run(REFUND)

    assert _tool_runs(await handle.fetch_history()) == []
    assert adversary.provider.count("investigate") == 1, "a truncated reply is a contract error: not retried"
    assert await adversary.event_details(handle, "model_failed") == [
        "investigate_turn: contract: truncated_or_malformed"
    ]
    assert view.status is CaseStatus.NEEDS_HUMAN and view.proposal is None
    adversary.assert_no_commerce_writes()


async def test_a_draft_cut_at_the_token_limit_is_never_shown_as_an_answer(adversary: ScriptedWorld) -> None:
    draft = json.dumps({"answer": "Your refund of 129.00 is approved", "citations": [], "next_action": "answer"})
    adversary.provider.default("compose", text_reply(draft, finish_reason="length"))

    handle, view = await adversary.run(REFUND)

    assert adversary.provider.count("review") == 0, "a truncated draft never reaches the reviewer"
    assert "draft_refused" in {event.kind for event in await adversary.events(handle)}
    assert view.status is CaseStatus.NEEDS_HUMAN and view.proposal is None
    assert "129.00 is approved" not in view.model_dump_json()
    assert view.budgets.model_requests == adversary.provider.count()
    adversary.assert_no_commerce_writes()


async def test_a_truncated_reply_carries_its_model_and_usage(provider: ScriptedProvider) -> None:
    provider.script("plan", Reply(content='{"intent": "refund", "order_id": "QH-', finish_reason="length", usage=USAGE))
    gateway = ModelGateway(load_model_settings(provider.env(SUPPORT_MODEL_PROFILE="llama-cpp-python")))
    try:
        with pytest.raises(ContractError) as raised:
            await gateway.plan(PlanRequest(case_id="wire", question=REFUND, language=Language.EN))
    finally:
        await gateway.aclose()
    assert raised.value.code == "truncated_or_malformed"
    details = to_application_error(raised.value, attempt=1).details[0]
    assert details["model"] == provider.model and details["usage"] == USAGE
    (sent,) = [r.body for r in provider.requests]
    assert sent["response_format"]["type"] == "json_object" and "schema" in sent["response_format"]
    assert sent["max_tokens"] == 600


async def test_a_case_whose_every_reply_failed_names_the_model_and_counts_its_tokens(adversary: ScriptedWorld) -> None:
    """Before this, such a case said "model: not yet called" and "tokens: unknown" although the server
    had answered and reported 482 tokens."""
    cut = Reply(content='{"intent": "refund", "order_id": "QH-', finish_reason="length", usage=USAGE)
    adversary.provider.default("plan", cut)

    handle, view = await adversary.run(REFUND)

    assert view.status is CaseStatus.NEEDS_HUMAN and adversary.provider.count() == 1
    assert view.model == f"openai-compatible:{adversary.provider.model}"
    assert view.tokens == "482"
    adversary.assert_no_commerce_writes()
    # the audit reads the refused reply's model and tokens from the history, as status does
    audit = audit_from_history(await handle.fetch_history())
    [plan] = [call for call in audit.activities if call.kind == "plan_case"]
    assert plan.outcome == "failed" and plan.model is not None and plan.model.model == adversary.provider.model
    assert plan.model.usage is not None and plan.model.usage.total_tokens == 482
    text = " ".join(" ".join(audit_lines(audit)).split())
    assert "model requests: 1, 1 not completed, 482 tokens reported by 1" in text

"""The gateway against a scripted OpenAI-compatible endpoint: requests, replies and error classes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from activities.model.model_gateway import ModelGateway, fit_transcript, retry_after_seconds
from activities.model.model_settings import load_model_settings
from contracts.errors import ConfigurationError, ContractError, SupportError, TransientError, to_application_error
from contracts.knowledge import Language
from contracts.model_io import (
    ComposedAnswer,
    ComposeRequest,
    Intent,
    InvestigateRequest,
    NextAction,
    Plan,
    PlanRequest,
    ProposedToolCall,
    ReviewRequest,
    TranscriptEntry,
)
from tests.case_data import passage as policy_passage

CANARY = "sk-canary-0c1d2e3f4a5b"
QUESTION = "Please refund QH-1001 and explain the amount and the policy"
PLAN = Plan(intent=Intent.REFUND, order_id="QH-1001", action_requested=True, queries=["refund"], milestones=[])


class Endpoint:
    """A MockTransport handler that records every request and answers with a scripted response."""

    def __init__(self, respond: Callable[[httpx2.Request], httpx2.Response]) -> None:
        self.respond = respond
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content))
        return self.respond(request)

    def gateway(self) -> ModelGateway:
        settings = load_model_settings(
            {
                "OPENAI_API_KEY": CANARY,
                "OPENAI_BASE_URL": "https://llm.example.com/v1",
                "SUPPORT_MODEL": "m-1",
            }
        )
        return ModelGateway(settings, http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self)))


def completion(content: str | None, *, finish_reason: str = "stop", usage: bool = True, **message: Any) -> dict:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m-1-2026",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": finish_reason,
            }
        ],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    return body


def ok(body: dict[str, Any]) -> Callable[[httpx2.Request], httpx2.Response]:
    return lambda request: httpx2.Response(200, json=body)


PLAN_JSON = json.dumps(
    {
        "intent": "refund",
        "order_id": "QH-1001",
        "action_requested": True,
        "queries": ["refund"],
        "milestones": [],
    }
)


async def test_plan_request_and_reply() -> None:
    endpoint = Endpoint(ok(completion(PLAN_JSON)))
    result = await endpoint.gateway().plan(
        PlanRequest(case_id="c-1", question=QUESTION, language=Language.EN), attempt=3
    )
    sent = endpoint.requests[0]
    assert sent["model"] == "m-1"
    assert sent["response_format"] == {"type": "json_object"}
    assert sent["messages"][0]["content"].startswith("[kind: plan]")
    assert json.loads(sent["messages"][1]["content"]) == {"question": QUESTION, "language": "en"}
    assert result.plan.order_id == "QH-1001"
    assert (result.meta.provider, result.meta.model, result.meta.attempt) == (
        "openai-compatible",
        "m-1-2026",
        3,
    )
    assert result.meta.usage is not None and result.meta.usage.total_tokens == 150


async def test_missing_usage_is_unknown_not_zero() -> None:
    endpoint = Endpoint(ok(completion(PLAN_JSON, usage=False)))
    result = await endpoint.gateway().plan(PlanRequest(case_id="c-1", question=QUESTION, language=Language.EN))
    assert result.meta.usage is None and result.meta.usage_label == "unknown"


async def test_investigate_sends_tools_and_transcript_and_parses_calls() -> None:
    tool_call = {
        "id": "call_2_1",
        "type": "function",
        "function": {"name": "calculate_refund", "arguments": '{"order_id": "QH-1001"}'},
    }
    endpoint = Endpoint(ok(completion(None, finish_reason="tool_calls", tool_calls=[tool_call])))
    transcript = [
        TranscriptEntry(
            role="assistant",
            calls=[
                ProposedToolCall(
                    call_id="call_1_1",
                    name="get_order",
                    arguments={"order_id": "QH-1001"},
                    raw_arguments='{"order_id": "QH-1001"}',
                ),
                ProposedToolCall(call_id="call_1_2", name="search_knowledge", arguments=None, raw_arguments="{bad"),
            ],
        ),
        TranscriptEntry(role="tool", call_id="call_1_1", content='{"ok": true, "result": {"order_id": "QH-1001"}}'),
        TranscriptEntry(role="tool", call_id="call_9_9", content="orphan"),
    ]
    request = InvestigateRequest(
        case_id="c-1",
        question=QUESTION,
        language=Language.EN,
        plan=PLAN,
        transcript=transcript,
        tool_names=["get_order", "calculate_refund"],
        turn=2,
    )
    result = await endpoint.gateway().investigate(request)

    sent = endpoint.requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_order", "calculate_refund"]
    assert "response_format" not in sent
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool"]
    assistant, first, second = sent["messages"][2:]
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_1_1", "call_1_2"]
    # arguments that were not a JSON object go back as {}, never as the model's text (servers refuse it)
    assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == ['{"order_id": "QH-1001"}', "{}"]
    assert "{bad" not in json.dumps(sent)
    assert (first["tool_call_id"], second["tool_call_id"]) == ("call_1_1", "call_1_2")
    assert json.loads(second["content"])["error_code"] == "not_executed"
    assert [(c.call_id, c.name, c.arguments) for c in result.calls] == [
        ("call_2_1", "calculate_refund", {"order_id": "QH-1001"})
    ]


async def test_write_tools_are_never_offered() -> None:
    endpoint = Endpoint(ok(completion("done")))
    request = InvestigateRequest(
        case_id="c-1",
        question=QUESTION,
        language=Language.EN,
        plan=PLAN,
        transcript=[],
        tool_names=["get_order", "execute_refund"],
        turn=1,
    )
    with pytest.raises(ContractError):
        await endpoint.gateway().investigate(request)
    assert endpoint.requests == []


def test_transcript_trimming_drops_oldest_whole_groups() -> None:
    transcript: list[TranscriptEntry] = []
    for turn in range(1, 6):
        call = ProposedToolCall(
            call_id=f"call_{turn}_1",
            name="search_knowledge",
            arguments={"query": "q"},
            raw_arguments='{"query": "q"}',
        )
        transcript += [
            TranscriptEntry(role="assistant", calls=[call]),
            TranscriptEntry(role="tool", call_id=call.call_id, content="x" * 3000),
        ]
    messages = fit_transcript(transcript, budget=7000)
    assert [m["role"] for m in messages] == ["assistant", "tool", "assistant", "tool"]
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ["call_4_1", "call_5_1"]


async def test_compose_validates_citations_against_what_was_shown() -> None:
    passage = policy_passage("RETURNS:p02:en:0", title="Window", text="Thirty days.")
    reply = {"answer": "Thirty days.", "citations": ["RETURNS:p03:en:0"], "next_action": "answer"}
    endpoint = Endpoint(ok(completion(json.dumps(reply))))
    request = ComposeRequest(
        case_id="c-1", question=QUESTION, language=Language.EN, plan=PLAN, facts={}, evidence=[passage], quote=None
    )
    with pytest.raises(ContractError) as raised:
        await endpoint.gateway().compose(request)
    assert raised.value.code == "citation_not_in_context"
    shown = json.loads(endpoint.requests[0]["messages"][1]["content"])
    assert [p["passage_id"] for p in shown["evidence"]] == ["RETURNS:p02:en:0"]


async def test_truncated_reply_and_unreadable_body_are_contract_errors() -> None:
    endpoint = Endpoint(ok(completion(PLAN_JSON[:40], finish_reason="length")))
    with pytest.raises(ContractError) as raised:
        await endpoint.gateway().plan(PlanRequest(case_id="c-1", question=QUESTION, language=Language.EN))
    assert raised.value.code == "truncated_or_malformed"

    endpoint = Endpoint(lambda request: httpx2.Response(200, text="<html>gateway</html>"))
    with pytest.raises(ContractError) as raised:
        await endpoint.gateway().plan(PlanRequest(case_id="c-1", question=QUESTION, language=Language.EN))
    assert raised.value.code == "truncated_or_malformed"


def _status(code: int, headers: dict[str, str] | None = None) -> Callable[[httpx2.Request], httpx2.Response]:
    body = {"error": {"message": f"refused; key {CANARY} is invalid", "type": "error"}}
    return lambda request: httpx2.Response(code, json=body, headers=headers or {})


def _timeout(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ReadTimeout("the provider is slow", request=request)


def _unreachable(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ConnectError("connection refused", request=request)


@pytest.mark.parametrize(
    ("respond", "error_type", "code", "retry_after"),
    [
        (_status(503), TransientError, "provider_unavailable", None),
        (_status(500), TransientError, "provider_unavailable", None),
        (_status(408), TransientError, "provider_unavailable", None),
        (_status(429, {"retry-after": "7"}), TransientError, "provider_rate_limited", 7.0),
        (_status(401), ConfigurationError, "provider_auth_failed", None),
        (_status(403), ConfigurationError, "provider_auth_failed", None),
        (_status(404), ConfigurationError, "model_not_found", None),
        (_status(400), ContractError, "provider_rejected_request", None),
        (_status(422), ContractError, "provider_rejected_request", None),
        (_timeout, TransientError, "provider_timeout", None),
        (_unreachable, TransientError, "provider_unreachable", None),
    ],
)
async def test_provider_errors_map_to_error_classes_with_exactly_one_request(
    respond: Callable[[httpx2.Request], httpx2.Response],
    error_type: type[SupportError],
    code: str,
    retry_after: float | None,
) -> None:
    endpoint = Endpoint(respond)
    with pytest.raises(SupportError) as raised:
        await endpoint.gateway().plan(PlanRequest(case_id="c-1", question=QUESTION, language=Language.EN))
    error = raised.value
    assert type(error) is error_type
    assert error.code == code
    assert error.retry_after_seconds == retry_after
    assert len(endpoint.requests) == 1, "the SDK must not retry (max_retries=0)"
    assert CANARY not in str(error) and "\n" not in str(error)


def test_retry_after_forms() -> None:
    assert retry_after_seconds(httpx2.Headers({"retry-after": "2.5"})) == 2.5
    assert retry_after_seconds(httpx2.Headers({"retry-after-ms": "1500"})) == 1.5
    assert retry_after_seconds(httpx2.Headers({"retry-after": "100000"})) == 600.0
    assert retry_after_seconds(httpx2.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) is None
    assert retry_after_seconds(httpx2.Headers({"retry-after": "soon"})) is None
    assert retry_after_seconds(httpx2.Headers({})) is None


async def test_a_500_that_says_the_request_is_invalid_is_a_rejection_not_a_transient_error() -> None:
    body = {"detail": [{"type": "string_type", "msg": "Input should be a valid string", "input": None}]}
    endpoint = Endpoint(lambda request: httpx2.Response(500, json=body))
    with pytest.raises(ContractError) as raised:
        await endpoint.gateway().plan(PlanRequest(case_id="c-1", question=QUESTION, language=Language.EN))
    assert raised.value.code == "provider_rejected_request" and not raised.value.retryable
    assert raised.value.model == "m-1" and raised.value.usage is None
    assert len(endpoint.requests) == 1


async def test_a_refused_reply_carries_the_model_and_the_usage_across_the_activity_boundary() -> None:
    endpoint = Endpoint(ok(completion(PLAN_JSON[:40], finish_reason="length")))
    with pytest.raises(ContractError) as raised:
        await endpoint.gateway().plan(PlanRequest(case_id="c-1", question=QUESTION, language=Language.EN))
    error = raised.value
    assert (error.code, error.model) == ("truncated_or_malformed", "m-1-2026")
    assert error.usage == {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    details = to_application_error(error, attempt=2).details[0]
    assert details["model"] == "m-1-2026" and details["usage"]["total_tokens"] == 150
    assert details["attempt"] == 2 and details["code"] == "truncated_or_malformed"
    assert details == {
        "code": "truncated_or_malformed",
        "error_class": "contract",
        "attempt": 2,
        "model": "m-1-2026",
        "provider": error.provider,
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
    }
    assert error.provider == endpoint.gateway().settings.provider

    unreachable = Endpoint(_unreachable)
    with pytest.raises(TransientError) as raised_transient:
        await unreachable.gateway().plan(PlanRequest(case_id="c-1", question=QUESTION, language=Language.EN))
    assert raised_transient.value.model is None
    assert {"model", "usage"}.isdisjoint(to_application_error(raised_transient.value).details[0])


async def test_a_configured_reviewer_model_answers_review_requests_only() -> None:
    main = Endpoint(ok(completion(PLAN_JSON)))
    reviewer = Endpoint(ok(completion(json.dumps({"verdict": "revise", "problems": ["cite"]}))))
    reviewer_key = "sk-reviewer-canary-99"
    settings = load_model_settings(
        {
            "OPENAI_API_KEY": CANARY,
            "OPENAI_BASE_URL": "https://llm.example.com/v1",
            "SUPPORT_MODEL": "m-1",
            "SUPPORT_REVIEW_MODEL": "judge-2",
            "SUPPORT_REVIEW_BASE_URL": "https://judge.example.com/v1",
            "SUPPORT_REVIEW_API_KEY": reviewer_key,
            "SUPPORT_REVIEW_PROFILE": "vllm",
        }
    )
    assert settings.reviewer is not None and settings.reviewer.profile == "vllm"
    assert reviewer_key not in settings.describe() and reviewer_key not in repr(settings)
    gateway = ModelGateway(
        settings,
        httpx2.AsyncClient(transport=httpx2.MockTransport(main)),
        reviewer_http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(reviewer)),
    )
    await gateway.plan(PlanRequest(case_id="c-1", question=QUESTION, language=Language.EN))
    candidate = ComposedAnswer(answer="Thirty days.", citations=[], next_action=NextAction.ANSWER)
    review = ReviewRequest(
        case_id="c-1", question=QUESTION, language=Language.EN, facts={}, evidence=[], quote=None, candidate=candidate
    )
    result = await gateway.review(review, attempt=2)
    assert [r["model"] for r in main.requests] == ["m-1"]
    assert [r["model"] for r in reviewer.requests] == ["judge-2"]
    assert reviewer.requests[0]["response_format"]["type"] == "json_schema"
    assert (result.verdict.verdict.value, result.meta.model, result.meta.attempt) == ("revise", "m-1-2026", 2)


def test_a_reviewer_needs_a_configured_provider_and_its_own_key_elsewhere() -> None:
    with pytest.raises(ConfigurationError) as raised:
        load_model_settings({"SUPPORT_REVIEW_MODEL": "judge"})
    assert raised.value.code == "reviewer_without_provider"
    main = {"OPENAI_API_KEY": CANARY, "OPENAI_BASE_URL": "https://llm.example.com/v1", "SUPPORT_MODEL": "m-1"}
    with pytest.raises(ConfigurationError) as raised:
        load_model_settings(main | {"SUPPORT_REVIEW_MODEL": "j", "SUPPORT_REVIEW_BASE_URL": "https://j.example.com/v1"})
    assert raised.value.code == "api_key_missing" and CANARY not in str(raised.value)
    same = load_model_settings(main | {"SUPPORT_REVIEW_MODEL": "j"})
    assert same.reviewer is not None and same.reviewer.base_url == same.base_url
    assert same.reviewer.api_key is not None and same.reviewer.api_key.get_secret_value() == CANARY
    assert load_model_settings(main).reviewer is None


async def test_a_refused_reply_with_a_usage_of_the_wrong_shape_is_still_a_contract_error() -> None:
    body = completion(PLAN_JSON[:40], finish_reason="length") | {"usage": "lots", "model": None}
    endpoint = Endpoint(ok(body))
    with pytest.raises(ContractError) as raised:
        await endpoint.gateway().plan(PlanRequest(case_id="c-1", question=QUESTION, language=Language.EN))
    assert (raised.value.code, raised.value.model, raised.value.usage) == ("truncated_or_malformed", "m-1", None)

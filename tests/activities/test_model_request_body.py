"""The gateway posts exactly the request that ``chat.completions.create`` would send, for every profile.

:func:`activities.model_gateway.chat_completion_body` replaces the SDK's ``create`` (to skip its costly
request transform); these tests hold the two to the same bytes: method, URL, headers and body.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest

from activities.model_gateway import ModelGateway
from activities.model_settings import load_model_settings
from activities.provider_profiles import PROFILES
from contracts.case import Intent, InvestigateRequest, Plan, PlanRequest, ProposedToolCall, TranscriptEntry
from contracts.knowledge import Language
from contracts.names import RequestKind

QUESTION = "Please refund QH-1001 and explain the amount — 退款"
PLAN_REPLY = (
    '{"intent": "refund", "order_id": "QH-1001", "action_requested": true, "queries": ["refund"], "milestones": []}'
)


class Recorder:
    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        message: dict[str, Any] = {"role": "assistant", "content": PLAN_REPLY}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return httpx2.Response(
            200, json={"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
        )

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))


def settings_for(profile: str) -> Any:
    if profile == "deepseek":
        return load_model_settings({"DEEPSEEK_API_KEY": "sk-test-1"})
    return load_model_settings(
        {
            "OPENAI_API_KEY": "sk-test-2",
            "OPENAI_BASE_URL": "https://llm.example.com/v1",
            "SUPPORT_MODEL": "m-1",
            "SUPPORT_MODEL_PROFILE": profile,
        }
    )


def investigate_request() -> InvestigateRequest:
    call = ProposedToolCall(
        call_id="call_1_1", name="get_order", arguments={"order_id": "QH-1001"}, raw_arguments='{"order_id":"QH-1001"}'
    )
    return InvestigateRequest(
        case_id="c-1",
        question=QUESTION,
        language=Language.EN,
        plan=Plan(intent=Intent.REFUND, order_id="QH-1001", action_requested=True, queries=["refund"], milestones=[]),
        transcript=[
            TranscriptEntry(role="assistant", calls=[call]),
            TranscriptEntry(role="tool", call_id="call_1_1", content='{"ok": true}'),
        ],
        tool_names=["get_order", "calculate_refund", "search_knowledge"],
        turn=2,
    )


async def as_create_sends(gateway: ModelGateway, sent: httpx2.Request, kind: RequestKind) -> httpx2.Request:
    """What ``chat.completions.create`` sends for the messages (and tools) the gateway sent."""
    body = json.loads(sent.content)
    recorder = Recorder()
    client = openai.AsyncOpenAI(
        base_url=gateway.settings.base_url,
        api_key=gateway._secret or "x",
        timeout=gateway.settings.timeout_seconds,
        max_retries=0,
        http_client=recorder.client(),
    )
    options = gateway.profile.request_options(
        kind, max_tokens=gateway.settings.max_tokens[kind], tools=body.get("tools")
    )
    await client.chat.completions.create(
        model=gateway.settings.model, messages=body["messages"], timeout=gateway.settings.timeout_seconds, **options
    )
    return recorder.requests[0]


def same_request(ours: httpx2.Request, theirs: httpx2.Request) -> None:
    assert (ours.method, str(ours.url)) == (theirs.method, str(theirs.url))
    assert dict(ours.headers) == dict(theirs.headers)
    assert ours.content == theirs.content


@pytest.mark.parametrize("profile", sorted(PROFILES))
async def test_plan_request_is_what_create_sends(profile: str) -> None:
    recorder = Recorder()
    gateway = ModelGateway(settings_for(profile), recorder.client())
    plan = await gateway.plan(PlanRequest(case_id="c-1", question=QUESTION, language=Language.EN))
    assert plan.plan.order_id == "QH-1001"
    ours = recorder.requests[0]
    same_request(ours, await as_create_sends(gateway, ours, "plan"))
    assert ours.headers["authorization"].startswith("Bearer sk-test-")


@pytest.mark.parametrize("profile", sorted(PROFILES))
async def test_investigate_request_with_tools_is_what_create_sends(profile: str) -> None:
    recorder = Recorder()
    gateway = ModelGateway(settings_for(profile), recorder.client())
    await gateway.investigate(investigate_request())
    ours = recorder.requests[0]
    theirs = await as_create_sends(gateway, ours, "investigate")
    same_request(ours, theirs)
    assert b'"tools"' in ours.content and b'"tool_choice"' in ours.content

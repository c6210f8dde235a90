"""The model gateway against the scripted provider over real loopback HTTP, without Temporal.

What a broken or hostile endpoint sends must become one of the service's error classes (SPEC §8):
never a crash that Temporal would retry blindly, and never a message that contains the key.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from activities.model.model_gateway import ModelGateway
from activities.model.model_settings import REQUEST_TIMEOUT_SECONDS, load_model_settings
from contracts.errors import ConfigurationError, ContractError, SupportError, TransientError
from contracts.knowledge import Language
from contracts.model_io import Intent, InvestigateRequest, Plan, PlanRequest
from tests.adversarial.adversary import with_timeout
from tests.adversarial.provider import Reply, ScriptedProvider, http_error, json_reply

QUESTION = "Please refund QH-1001"
PLAN = Plan(intent=Intent.REFUND, order_id="QH-1001", action_requested=True, queries=[], milestones=[])


@pytest.fixture
async def gateway(provider: ScriptedProvider) -> AsyncIterator[ModelGateway]:
    gateway = ModelGateway(load_model_settings(provider.env()))
    yield gateway
    await gateway.aclose()


async def _plan(gateway: ModelGateway):
    return await gateway.plan(PlanRequest(case_id="wire", question=QUESTION, language=Language.EN))


async def _investigate(gateway: ModelGateway):
    request = InvestigateRequest(
        case_id="wire",
        question=QUESTION,
        language=Language.EN,
        plan=PLAN,
        transcript=[],
        tool_names=["get_order"],
        turn=1,
    )
    return await gateway.investigate(request)


def test_the_service_is_pointed_at_the_provider_exactly_as_a_user_would(provider: ScriptedProvider) -> None:
    settings = load_model_settings(provider.env())
    assert (settings.provider, settings.model, settings.base_url) == (
        "openai-compatible",
        provider.model,
        provider.base_url,
    )
    assert settings.timeout_seconds == REQUEST_TIMEOUT_SECONDS == 40.0
    assert provider.api_key not in settings.describe() and provider.api_key not in repr(settings)


async def test_every_request_is_recorded_with_its_kind_and_the_key_it_carried(
    gateway: ModelGateway, provider: ScriptedProvider
) -> None:
    result = await _plan(gateway)
    assert result.plan.order_id == "QH-1001"  # answered by the rehearsal rules
    await _investigate(gateway)
    assert provider.counts() == {"plan": 1, "investigate": 1, "compose": 0, "review": 0}
    assert [r.authorization for r in provider.requests] == [f"Bearer {provider.api_key}"] * 2
    assert provider.requests[0].body["model"] == provider.model
    assert provider.requests[1].body["tools"][0]["function"]["name"] == "get_order"


CUT_BODIES = {
    "cut_json": '{"id": "chatcmpl-cut", "object": "chat.completion", "choices": [{"index": 0, "message": {"ro',
    "empty": "",
    "not_a_completion": "[]",
    "no_choices": '{"object": "chat.completion"}',
    "null_message": '{"choices": [{"index": 0, "message": null, "finish_reason": "stop"}]}',
    "choices_not_a_list": '{"choices": "x"}',
}


@pytest.mark.parametrize("body", sorted(CUT_BODIES))
async def test_an_unreadable_reply_is_a_contract_error_not_a_crash(
    gateway: ModelGateway, provider: ScriptedProvider, body: str
) -> None:
    provider.script("plan", Reply(raw_body=CUT_BODIES[body]))
    with pytest.raises(ContractError) as raised:
        await _plan(gateway)
    assert raised.value.code == "truncated_or_malformed"


@pytest.mark.parametrize(
    "reply",
    [
        Reply(raw_body='{"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": "x"}}]}'),
        Reply(
            raw_body='{"choices": [{"index": 0, "message": {"role": "assistant", '
            '"tool_calls": [{"id": "a", "type": "function", "function": null}]}}]}'
        ),
        json_reply({"not": "a tool call"}, finish_reason="length"),
    ],
    ids=["tool_calls_not_a_list", "function_null", "finish_reason_length"],
)
async def test_an_unreadable_investigation_turn_is_a_contract_error(
    gateway: ModelGateway, provider: ScriptedProvider, reply: Reply
) -> None:
    provider.script("investigate", reply)
    with pytest.raises(ContractError) as raised:
        await _investigate(gateway)
    assert raised.value.code == "truncated_or_malformed"


@pytest.mark.parametrize(
    ("reply", "error_type", "code", "retry_after"),
    [
        (http_error(503), TransientError, "provider_unavailable", None),
        (http_error(502), TransientError, "provider_unavailable", None),
        (http_error(429, retry_after="7"), TransientError, "provider_rate_limited", 7.0),
        (http_error(401), ConfigurationError, "provider_auth_failed", None),
        (http_error(404), ConfigurationError, "model_not_found", None),
        (http_error(400), ContractError, "provider_rejected_request", None),
    ],
    ids=["503", "502", "429", "401", "404", "400"],
)
async def test_http_failures_map_to_error_classes_without_the_key(
    gateway: ModelGateway,
    provider: ScriptedProvider,
    reply: Reply,
    error_type: type[SupportError],
    code: str,
    retry_after: float | None,
) -> None:
    provider.script("plan", reply)
    with pytest.raises(SupportError) as raised:
        await _plan(gateway)
    assert type(raised.value) is error_type and raised.value.code == code
    assert raised.value.retry_after_seconds == retry_after
    assert provider.api_key not in str(raised.value)
    assert provider.count() == 1


async def test_a_provider_that_echoes_the_key_in_its_error_gets_it_redacted(
    gateway: ModelGateway, provider: ScriptedProvider
) -> None:
    provider.script("plan", http_error(400, message=f"bad request for key {provider.api_key}"))
    with pytest.raises(ContractError) as raised:
        await _plan(gateway)
    assert provider.api_key not in str(raised.value) and "[redacted]" in str(raised.value)


async def test_a_reply_slower_than_the_timeout_is_a_transient_timeout(provider: ScriptedProvider) -> None:
    provider.script("plan", Reply(delay=2.0, rehearsal=True))
    settings = with_timeout(load_model_settings(provider.env()), 0.5)
    gateway = ModelGateway(settings)
    try:
        with pytest.raises(TransientError) as raised:
            await _plan(gateway)
    finally:
        await gateway.aclose()
    assert raised.value.code == "provider_timeout"
    assert (
        str(raised.value)
        == f"provider_timeout: The openai-compatible request to model {provider.model!r} timed out after 0.5 s."
    )
    assert provider.count("plan") == 1

"""A model's malformed tool-call arguments, replayed through the real worker to a server that, like
llama-server, answers HTTP 500 "Failed to parse tool call arguments as JSON" to any request whose
transcript carries unparsable arguments.

The workflow refuses the call (``malformed_arguments``) and the model reads that refusal; later turns
carry the call with ``{}`` instead of the model's text, so the server parses every request and the
case goes on. Were such a 500 to come anyway, it is a rejected request: one request, never retried.
"""

from __future__ import annotations

import json

import httpx2
import openai
import pytest

from activities.model.provider_profiles import map_provider_error
from contracts.case import CaseStatus
from contracts.errors import ContractError
from tests.adversarial.adversary import ScriptedWorld
from tests.adversarial.provider import REHEARSAL, Reply, Request, call, http_error, tool_calls

pytestmark = pytest.mark.slow

REFUND = "Please refund QH-1001 and explain the amount and the policy"
MALFORMED = '{"order_id": "QH-1001", '
PARSE_FAILURE = "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] unexpected end"


def _unparsable_arguments(request: Request) -> bool:
    for message in request.body["messages"]:
        for tool_call in message.get("tool_calls") or []:
            try:
                json.loads(tool_call["function"]["arguments"])
            except ValueError:
                return True
    return False


def _as_llama_server(request: Request) -> Reply:
    return http_error(500, message=PARSE_FAILURE) if _unparsable_arguments(request) else REHEARSAL


async def test_malformed_arguments_are_refused_and_never_sent_back(adversary: ScriptedWorld) -> None:
    adversary.provider.script("investigate", tool_calls(call("get_order", MALFORMED, "bad-1")))
    adversary.provider.default("investigate", _as_llama_server)

    handle, view = await adversary.run(REFUND)

    assert 500 not in adversary.provider.statuses(), "every request carried arguments the server parses"
    later = [r for r in adversary.provider.requests if r.kind == "investigate"][1:]
    assert later, "the investigation went on after the refused call"
    assert all(MALFORMED not in json.dumps(r.body) for r in later)
    replayed = [
        c["function"]["arguments"]
        for m in later[0].body["messages"]
        for c in m.get("tool_calls") or []
        if c["id"] == "bad-1"
    ]
    assert replayed == ["{}"]
    [refusal] = [m["content"] for m in later[0].tool_messages if m["tool_call_id"] == "bad-1"]
    assert "malformed_arguments" in refusal
    assert "get_order: malformed_arguments" in await adversary.event_details(handle, "tool_refused")
    assert adversary.provider.count("compose") >= 1, "the case went on to its draft"
    assert view.status is not CaseStatus.FAILED
    assert view.budgets.model_requests == adversary.provider.count()


async def test_a_500_that_could_not_parse_the_request_is_one_request_not_retried(adversary: ScriptedWorld) -> None:
    adversary.provider.default("investigate", http_error(500, message=PARSE_FAILURE))

    handle, view = await adversary.run(REFUND)

    assert adversary.provider.statuses("investigate") == [500]
    assert await adversary.event_details(handle, "model_failed") == [
        "investigate_turn: contract: provider_rejected_request"
    ]
    assert view.status is CaseStatus.NEEDS_HUMAN
    adversary.assert_no_commerce_writes()


def test_the_parse_failure_is_classified_as_a_rejected_request() -> None:
    response = httpx2.Response(500, request=httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions"))
    body = {"error": {"message": PARSE_FAILURE, "type": "server_error"}}
    error = openai.InternalServerError(PARSE_FAILURE, response=response, body=body)
    mapped = map_provider_error(error, "local", "m", lambda text: text)
    assert isinstance(mapped, ContractError) and mapped.code == "provider_rejected_request"
    plain = openai.InternalServerError("boom", response=response, body={"error": {"message": "boom"}})
    assert map_provider_error(plain, "local", "m", lambda text: text).code == "provider_unavailable"

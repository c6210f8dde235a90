"""The rehearsal model on the wire: an ``httpx2`` transport that answers OpenAI Chat Completions.

The model gateway talks to it through the real ``openai`` SDK exactly as it talks to DeepSeek or
vLLM, so CI and the demo exercise the same adapter, validation and error code. The decisions live in
one rules module per request kind (:mod:`rehearsal._plan`, :mod:`rehearsal._investigate`,
:mod:`rehearsal._compose`, :mod:`rehearsal._review`); this module only speaks the protocol
(:func:`respond`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx2

from contracts.case import REHEARSAL_LABEL
from contracts.names import kind_of
from rehearsal._compose import compose
from rehearsal._investigate import Observation, investigate, read_observation
from rehearsal._plan import plan
from rehearsal._review import review

_CREATED = 1_788_998_400
"""A fixed ``created`` timestamp (2026-09-10): replies are byte-for-byte deterministic."""


class _BadRequest(ValueError):
    pass


class RehearsalTransport(httpx2.AsyncBaseTransport):
    """Answers ``POST …/chat/completions`` at any address; every other request gets an OpenAI-style 404."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return _error(404, "not_found_error", f"The rehearsal model does not serve {request.url.path}.")
        body = await request.aread()
        try:
            completion = respond(json.loads(body))
        except (_BadRequest, ValueError, KeyError, TypeError) as exc:
            return _error(400, "invalid_request_error", f"The rehearsal model cannot read the request: {exc}")
        return httpx2.Response(200, json=completion)


def rehearsal_http_client() -> httpx2.AsyncClient:
    """An HTTP client whose every request is answered in-process by :class:`RehearsalTransport`."""
    return httpx2.AsyncClient(transport=RehearsalTransport())


def respond(body: dict[str, Any]) -> dict[str, Any]:
    """The ``chat.completion`` object for one request body.

    It reads the kind marker of the system prompt, the JSON context of the first user message and, for
    investigation, the earlier assistant tool calls and tool results. The reply carries no ``usage``
    field: the rehearsal model has no tokens, so usage is recorded as unknown, never as zero. Its model
    name is ``rehearsal``.
    """
    messages: list[dict[str, Any]] = body["messages"]
    system = next((_text(m) for m in messages if m.get("role") == "system"), "")
    kind = kind_of(system)
    if kind is None:
        raise _BadRequest("the system prompt has no [kind: …] marker")
    context = _context(messages)

    tool_calls: list[dict[str, Any]] = []
    if kind == "investigate":
        offered = {tool["function"]["name"] for tool in body.get("tools") or []}
        turn = context.get("turn")
        if not isinstance(turn, int):
            turn = _rounds_so_far(messages) + 1
        calls, content = investigate(context, _observations(messages), offered)
        tool_calls = [
            {
                "id": f"call_{turn}_{n}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
            }
            for n, (name, arguments) in enumerate(calls, start=1)
        ]
    else:
        decide = {"plan": plan, "compose": compose, "review": review}[kind]
        content = json.dumps(decide(context), ensure_ascii=False)

    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]
    return {
        "id": f"chatcmpl-rehearsal-{digest}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": REHEARSAL_LABEL,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
                "logprobs": None,
            }
        ],
    }


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _context(messages: list[dict[str, Any]]) -> dict[str, Any]:
    first_user = next((m for m in messages if m.get("role") == "user"), None)
    if first_user is None:
        raise _BadRequest("there is no user message")
    context = json.loads(_text(first_user))
    if not isinstance(context, dict):
        raise _BadRequest("the user message is not a JSON object")
    return context


def _rounds_so_far(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))


def _observations(messages: list[dict[str, Any]]) -> list[list[Observation]]:
    """Earlier rounds: each assistant tool-call message with the results of its calls."""
    rounds: list[list[Observation]] = []
    results = {m.get("tool_call_id"): _text(m) for m in messages if m.get("role") == "tool"}
    for message in messages:
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        round_ = []
        for call in message["tool_calls"]:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                arguments = {}
            ok, result = read_observation(results.get(call.get("id"), ""))
            round_.append(
                Observation(
                    name=function.get("name", ""),
                    arguments=arguments if isinstance(arguments, dict) else {},
                    ok=ok,
                    result=result,
                )
            )
        rounds.append(round_)
    return rounds


def _error(status: int, error_type: str, message: str) -> httpx2.Response:
    return httpx2.Response(status, json={"error": {"message": message, "type": error_type, "code": None}})

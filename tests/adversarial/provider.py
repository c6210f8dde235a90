"""A scripted, adversarial OpenAI-compatible endpoint on loopback, for tests.

``ScriptedProvider`` is a real HTTP server (starlette + uvicorn in a background thread) listening on
``127.0.0.1`` and a free port. The service reaches it exactly as it reaches any provider:
``OPENAI_BASE_URL=http://127.0.0.1:PORT/v1``, ``OPENAI_API_KEY``, ``SUPPORT_MODEL`` (see
:meth:`ScriptedProvider.env`), through the real ``openai`` SDK in the model gateway, so a test scripts
only the hostile part of a case.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import rehearsal
from contracts.names import REQUEST_KINDS, kind_of

DEFAULT_MODEL = "scripted-adversary"
_CREATED = 1_788_998_400


@dataclass(frozen=True)
class Request:
    """One request the provider received."""

    index: int
    kind: str | None
    at: float
    """Arrival time, ``time.monotonic()`` of the provider's process."""
    authorization: str | None
    body: dict[str, Any]
    status: int = 0
    """The HTTP status the provider answered with (0 while the answer is pending)."""

    @property
    def context(self) -> dict[str, Any]:
        """The JSON context of the first user message (question, plan, evidence, …)."""
        user = next(m for m in self.body["messages"] if m.get("role") == "user")
        return json.loads(user["content"])

    @property
    def evidence_ids(self) -> list[str]:
        return [p["passage_id"] for p in self.context.get("evidence") or []]

    @property
    def tool_messages(self) -> list[dict[str, Any]]:
        return [m for m in self.body["messages"] if m.get("role") == "tool"]


@dataclass(frozen=True)
class Reply:
    """What to answer one request with."""

    status: int = 200
    content: str | None = None
    tool_calls: tuple[dict[str, Any], ...] = ()
    finish_reason: str | None = None
    """Default: ``tool_calls`` when there are calls, else ``stop``."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering (a slow provider)."""
    raw_body: str | None = None
    """Send this text as the HTTP body instead of a completion (e.g. a cut-off JSON document)."""
    usage: dict[str, int] | None = None
    rehearsal: bool = False
    """Answer as the rehearsal model would (after ``delay``)."""


REHEARSAL = Reply(rehearsal=True)
"""Answer this request as the rehearsal model would."""

Scripted = Reply | Callable[[Request], Reply]


# --- reply builders ------------------------------------------------------------------------------


def json_reply(value: Any, *, finish_reason: str = "stop") -> Reply:
    """A JSON-mode answer (plan, compose, review) whose content is ``value`` serialized."""
    return Reply(content=json.dumps(value, ensure_ascii=False), finish_reason=finish_reason)


def text_reply(text: str, *, finish_reason: str = "stop") -> Reply:
    """An answer whose content is exactly ``text`` (malformed or cut-off JSON, prose)."""
    return Reply(content=text, finish_reason=finish_reason)


def call(name: str, arguments: dict[str, Any] | str, call_id: str) -> dict[str, Any]:
    """One function tool call; ``arguments`` as a dict (serialized) or as raw text."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def tool_calls(*calls: dict[str, Any], content: str | None = None, finish_reason: str | None = None) -> Reply:
    """An investigate answer that requests ``calls``."""
    return Reply(content=content, tool_calls=tuple(calls), finish_reason=finish_reason)


def http_error(status: int, *, retry_after: str | None = None, message: str | None = None) -> Reply:
    """An OpenAI-style error response."""
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    error_type = {401: "authentication_error", 429: "rate_limit_error"}.get(status, "server_error")
    body = {"error": {"message": message or f"scripted HTTP {status}", "type": error_type, "code": None}}
    return Reply(status=status, headers=headers, raw_body=json.dumps(body))


def slow(seconds: float, then: Reply = REHEARSAL) -> Reply:
    """``then``, answered only after ``seconds``."""
    return replace(then, delay=seconds)


# --- the server ----------------------------------------------------------------------------------


class ScriptedProvider:
    """A loopback OpenAI-compatible endpoint whose answers a test scripts per request kind.

    It answers ``POST /v1/chat/completions`` by request kind, read from the ``[kind: …]`` marker on the
    first line of the system prompt (plan, investigate, compose, review):

    - each kind has a queue of scripted replies (:meth:`script`), consumed one per request of that kind;
    - when the queue is empty, the kind's default answers (:meth:`default`); the default default is the
      rehearsal model's rules (:func:`rehearsal.respond`), so a test scripts only the hostile part and
      the rest of the case behaves like a contract-following model.

    A reply is a :class:`Reply` (a completion, an HTTP error, a delay, a cut body) or a callable that
    builds one from the :class:`Request` (for replies that depend on what the service sent, e.g. citing
    passage ids that really were in the evidence). :data:`REHEARSAL` in a queue means "answer this one
    as the rehearsal model would".

    Every request is recorded (arrival time on a monotonic clock, kind, Authorization header, body and
    the status returned), so tests can count requests per kind and in total, check the key that was
    sent, and measure the gap between a 429 and the retry that followed.
    """

    def __init__(self, *, api_key: str = "sk-scripted-test", model: str = DEFAULT_MODEL) -> None:
        self.api_key = api_key
        self.model = model
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Scripted]] = {kind: deque() for kind in REQUEST_KINDS}
        self._defaults: dict[str, Scripted] = dict.fromkeys(REQUEST_KINDS, REHEARSAL)
        self._requests: list[Request] = []
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # configuration by the test

    def script(self, kind: str, *replies: Scripted) -> ScriptedProvider:
        """Queue ``replies`` for the next requests of ``kind``, in order."""
        self._check_kind(kind)
        with self._lock:
            self._queues[kind].extend(replies)
        return self

    def default(self, kind: str, reply: Scripted) -> ScriptedProvider:
        """What ``kind`` answers once its queue is empty (initially the rehearsal model)."""
        self._check_kind(kind)
        with self._lock:
            self._defaults[kind] = reply
        return self

    def default_all(self, reply: Scripted) -> ScriptedProvider:
        for kind in REQUEST_KINDS:
            self.default(kind, reply)
        return self

    # what the test reads

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self, **overrides: str) -> dict[str, str]:
        """The environment a user would set to point the service at this provider."""
        return {
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": self.api_key,
            "SUPPORT_MODEL": self.model,
        } | overrides

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def count(self, kind: str | None = None) -> int:
        """Requests received in total, or of one kind."""
        return sum(1 for r in self.requests if kind is None or r.kind == kind)

    def counts(self) -> dict[str, int]:
        return {kind: self.count(kind) for kind in REQUEST_KINDS}

    def statuses(self, kind: str | None = None) -> list[int]:
        return [r.status for r in self.requests if kind is None or r.kind == kind]

    def pending(self, kind: str) -> int:
        """Scripted replies of ``kind`` not consumed yet."""
        with self._lock:
            return len(self._queues[kind])

    # lifecycle

    def start(self) -> ScriptedProvider:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        app = Starlette(routes=[Route("/v1/chat/completions", self._handle, methods=["POST"])])
        config = uvicorn.Config(
            app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="scripted-provider", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the scripted provider did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> ScriptedProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # request handling (runs on the server's thread)

    async def _handle(self, http_request: HttpRequest) -> Response:
        arrived = time.monotonic()
        raw = await http_request.body()
        try:
            body = json.loads(raw)
            system = next((m.get("content") or "" for m in body["messages"] if m.get("role") == "system"), "")
            kind = kind_of(system if isinstance(system, str) else "")
        except (ValueError, KeyError, TypeError):
            body, kind = {"unreadable": raw.decode("utf-8", "replace")}, None
        with self._lock:
            index = len(self._requests)
            request = Request(
                index=index,
                kind=kind,
                at=arrived,
                authorization=http_request.headers.get("authorization"),
                body=body,
            )
            self._requests.append(request)
            if kind is None:
                scripted: Scripted = http_error(400, message="no [kind: …] marker in the system prompt")
            elif self._queues[kind]:
                scripted = self._queues[kind].popleft()
            else:
                scripted = self._defaults[kind]
        reply = scripted(request) if callable(scripted) else scripted
        if reply.delay:
            await asyncio.sleep(reply.delay)
        response = self._response(reply, request)
        with self._lock:
            self._requests[index] = replace(request, status=response.status_code)
        return response

    def _response(self, reply: Reply, request: Request) -> Response:
        if reply.rehearsal:
            rehearsed = rehearsal.respond(request.body)
            rehearsed["model"] = self.model
            return JSONResponse(rehearsed)
        if reply.raw_body is not None:
            return Response(
                reply.raw_body, status_code=reply.status, headers=reply.headers, media_type="application/json"
            )
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = list(reply.tool_calls)
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        completion: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{request.index}",
            "object": "chat.completion",
            "created": _CREATED,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        }
        if reply.usage is not None:
            completion["usage"] = reply.usage
        return JSONResponse(completion, status_code=reply.status, headers=reply.headers)

    @staticmethod
    def _check_kind(kind: str) -> None:
        if kind not in REQUEST_KINDS:
            raise ValueError(f"unknown request kind {kind!r}; expected one of {', '.join(REQUEST_KINDS)}")

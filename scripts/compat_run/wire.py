"""The wire checks: the recorded requests sent again, through the project's own adapter, to the server.

Each captured request goes through :class:`activities.model.model_gateway.ModelGateway` pointed at the real
server, with httpx2 event hooks recording the body sent and the status and reply that came back; a row
says what the body carried, whether it was accepted, the tool calls returned and what the adapter made of
the reply. Then the investigate body is sent once per offered tool with ``tool_choice`` naming it, so
that every tool schema is compiled into a grammar.
"""

from __future__ import annotations

import copy
import json
import re
import time
from dataclasses import dataclass
from typing import Any

import httpx2

from activities.model.model_gateway import ModelGateway
from activities.model.model_settings import load_model_settings
from activities.model.provider_profiles import profile
from contracts.errors import SupportError

from .capture import Captured
from .common import _short, say
from .server import LlamaServer, model_env


@dataclass
class Exchange:
    body: dict[str, Any]
    status: int | None = None
    reply: str = ""


@dataclass
class WireRow:
    check: str
    request: str
    http: str
    accepted: bool
    tool_calls: str
    result: str
    seconds: float
    server_alive: bool
    tokens: str = "-"
    timed_out: bool = False
    """The client gave up at its timeout: the server was slow, which is not a wire rejection."""

    @property
    def passed(self) -> bool:
        return self.accepted and self.server_alive

    @property
    def verdict(self) -> str:
        """The report's *accepted* cell: yes, a client timeout, or a rejection."""
        if self.passed:
            return "yes"
        if not self.server_alive:
            return "**NO** (server died)"
        return f"no reply: client timeout after {self.seconds:.0f} s" if self.timed_out else "**NO**"


class Recorder:
    """httpx2 event hooks: every request body the SDK sends and the status that came back."""

    def __init__(self) -> None:
        self.exchanges: list[Exchange] = []

    async def on_request(self, request: httpx2.Request) -> None:
        try:
            body = json.loads(request.content)
        except (ValueError, TypeError):
            body = {}
        self.exchanges.append(Exchange(body))

    async def on_response(self, response: httpx2.Response) -> None:
        if self.exchanges:
            self.exchanges[-1].status = response.status_code
            await response.aread()
            self.exchanges[-1].reply = response.text[:4000]

    def client(self, timeout_s: float) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            timeout=timeout_s, event_hooks={"request": [self.on_request], "response": [self.on_response]}
        )


def describe_body(body: dict[str, Any]) -> str:
    """What a request carried that matters to a server's dialect, in a few words."""
    parts: list[str] = []
    rf = body.get("response_format")
    if rf:
        kind = rf.get("type", "?")
        if kind == "json_object" and "schema" in rf:
            kind += "+schema"
        elif kind == "json_schema":
            kind += " strict" if rf.get("json_schema", {}).get("strict") else ""
        parts.append(f"response_format={kind}")
    if body.get("tools"):
        parts.append(f"tools={len(body['tools'])}")
        choice = body.get("tool_choice")
        parts.append(f"tool_choice={json.dumps(choice) if isinstance(choice, dict) else choice}")
    for key in ("max_tokens", "max_completion_tokens", "temperature", "seed"):
        if key in body:
            parts.append(f"{key}={body[key]}")
    messages = body.get("messages", [])
    roles = [m.get("role") for m in messages]
    parts.append(f"{len(messages)} msgs ({', '.join(f'{r}x{roles.count(r)}' for r in dict.fromkeys(roles))})")
    if any(m.get("content", "") is None for m in messages):
        parts.append("NULL content")
    patterns = re.findall(r'"pattern":\s*"([^"]*)"', json.dumps(body.get("tools", [])))
    if any("\\d" in p for p in patterns):
        parts.append("\\d in tool schema")
    return "; ".join(parts)


async def wire_checks(
    captured: Captured, server: LlamaServer, model_id: str, timeout_s: float, log: list[dict[str, Any]]
) -> tuple[list[WireRow], dict[str, Any] | None]:
    env = model_env(server, model_id, timeout_s)
    settings = load_model_settings(env)
    rows: list[WireRow] = []
    investigate_body: dict[str, Any] | None = None

    first_turn = next((r for r in captured.investigate if not r.transcript), None)
    replay = max(captured.investigate, key=lambda r: len(r.transcript), default=None)
    checks: list[tuple[str, str, Any]] = []
    if captured.plan:
        checks.append(("plan", "plan: the case's question", captured.plan[0]))
    if first_turn is not None:
        checks.append(
            ("investigate", f"investigate turn {first_turn.turn}: {len(first_turn.tool_names)} tools", first_turn)
        )
    if replay is not None and replay.transcript:
        checks.append(
            (
                "investigate",
                f"investigate turn {replay.turn}: replays {len(replay.transcript)} transcript entries "
                "(assistant tool calls + tool results)",
                replay,
            )
        )
    if captured.compose:
        checks.append(("compose", f"compose: {len(captured.compose[0].evidence)} passages, quote", captured.compose[0]))
    if captured.review:
        checks.append(("review", "review: the draft, facts, quote", captured.review[0]))

    for kind, label, request in checks:
        recorder = Recorder()
        gateway = ModelGateway(settings, http_client=recorder.client(timeout_s + 5))
        say(f"wire check: {label}")
        started = time.monotonic()
        result: Any = None
        error: str | None = None
        timed_out = False
        try:
            result = await getattr(gateway, kind)(request)
        except SupportError as exc:
            error = f"{type(exc).__name__} {getattr(exc, 'code', '')}: {exc}"
            timed_out = getattr(exc, "code", "") == "provider_timeout"
        except Exception as exc:
            error = f"unexpected {type(exc).__name__}: {exc}"
        finally:
            await gateway.aclose()
        seconds = time.monotonic() - started
        alive = server.check(f"wire check {label}")
        exchange = recorder.exchanges[-1] if recorder.exchanges else Exchange({})
        if kind == "investigate" and investigate_body is None:
            investigate_body = exchange.body
        http = str(exchange.status) if exchange.status is not None else "no reply"
        tools = "-"
        tokens = "-"
        if result is not None:
            usage = getattr(result.meta, "usage", None)
            tokens = f"{usage.prompt_tokens}+{usage.completion_tokens}" if usage else "unknown"
        if kind == "investigate":
            if result is not None:
                names = [call.name for call in result.calls]
                tools = (
                    f"{len(names)} tool_calls: {', '.join(names)}"
                    if names
                    else f"none (prose: {_short(result.content, 40)!r})"
                )
            else:
                tools = "n/a"
        if error is not None:
            outcome = _short(error, 110) + _reply_facts(exchange.reply)
            tokens = _reply_tokens(exchange.reply)
        elif kind == "plan":
            outcome = f"valid plan: intent={result.plan.intent.value} order={result.plan.order_id}"
        elif kind == "investigate":
            outcome = f"valid reply, finish_reason={result.finish_reason}"
        elif kind == "compose":
            answer = result.answer
            outcome = f"valid draft: next_action={answer.next_action.value}, {len(answer.citations)} citations"
        else:
            outcome = f"valid verdict: {result.verdict.verdict.value}"
        accepted = exchange.status is not None and 200 <= exchange.status < 300
        rows.append(
            WireRow(
                kind,
                f"{label} — {describe_body(exchange.body)}",
                http,
                accepted,
                tools,
                outcome,
                seconds,
                alive,
                tokens,
                timed_out,
            )
        )
        log.append(
            {
                "check": label,
                "body": exchange.body,
                "status": exchange.status,
                "reply": exchange.reply,
                "error": error,
                "seconds": seconds,
            }
        )
        say(f"  -> HTTP {http}, {outcome} ({seconds:.1f}s)")
    return rows, investigate_body


def _reply_facts(reply: str) -> str:
    """What the raw reply says about a reply the adapter refused: finish_reason and how it begins."""
    try:
        choice = json.loads(reply)["choices"][0]
        content = choice["message"].get("content") or ""
        return f" [finish_reason={choice.get('finish_reason')}, content begins {_short(content, 50)!r}]"
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return ""


def _reply_tokens(reply: str) -> str:
    try:
        usage = json.loads(reply)["usage"]
        return f"{usage['prompt_tokens']}+{usage['completion_tokens']}"
    except (ValueError, KeyError, TypeError):
        return "-"


async def tool_schema_checks(
    body: dict[str, Any], server: LlamaServer, model_id: str, timeout_s: float, log: list[dict[str, Any]]
) -> list[WireRow]:
    """The adapter's investigate body, once per offered tool with ``tool_choice`` naming it: the server
    must build a grammar from that tool's schema and answer with a tool call (the llama.cpp server
    segfaulted on ``\\d`` patterns once a tool was chosen). The tool is forced in the form the server's
    provider profile honours (:meth:`activities.model.provider_profiles.ProviderProfile.forced_tool`: the
    object form, or ``required`` with only that tool for llama-server, which ignores the object)."""
    dialect = profile(load_model_settings(model_env(server, model_id, timeout_s)).profile)
    rows: list[WireRow] = []
    async with httpx2.AsyncClient(timeout=timeout_s + 5) as client:
        for tool in body.get("tools", []):
            name = tool["function"]["name"]
            forced = copy.deepcopy(body) | dialect.forced_tool(copy.deepcopy(body["tools"]), name)
            forced["max_tokens"] = min(int(forced.get("max_tokens") or 256), 256)
            if server.forced_call_prefill:
                forced["messages"].append({"role": "assistant", "content": server.forced_call_prefill})
                forced["parallel_tool_calls"] = False
            started = time.monotonic()
            status: int | None = None
            outcome = ""
            calls = "n/a"
            tokens = "-"
            timed_out = False
            try:
                reply = await client.post(f"{server.base_url}/chat/completions", json=forced)
                status = reply.status_code
                if reply.status_code == 200:
                    data = reply.json()
                    message = data["choices"][0]["message"]
                    returned = message.get("tool_calls") or []
                    usage = data.get("usage") or {}
                    tokens = f"{usage.get('prompt_tokens', '?')}+{usage.get('completion_tokens', '?')}"
                    finish = data["choices"][0].get("finish_reason")
                    if returned:
                        fn = returned[0]["function"]
                        try:
                            args = json.loads(fn["arguments"])
                            parsed = "arguments: JSON object" if isinstance(args, dict) else "arguments: not an object"
                        except ValueError:
                            parsed = "arguments not JSON"
                        calls = f"{len(returned)} tool_calls: {fn['name']}"
                        outcome = f"{parsed} (finish_reason={finish}): {_short(fn['arguments'], 50)}"
                    else:
                        calls = "none"
                        outcome = f"no tool_calls (content {_short(message.get('content'), 40)!r})"
                else:
                    outcome = _short(reply.text, 100)
            except httpx2.HTTPError as exc:
                outcome = f"{type(exc).__name__}: {_short(str(exc), 80)}"
                timed_out = isinstance(exc, httpx2.TimeoutException)
            seconds = time.monotonic() - started
            alive = server.check(f"forced tool {name}")
            accepted = status == 200 and "tool_calls:" in calls
            rows.append(
                WireRow(
                    "tool schema",
                    (
                        f"investigate body, tool_choice={name}"
                        if isinstance(forced["tool_choice"], dict)
                        else f"investigate body, tools=[{name}], tool_choice={forced['tool_choice']}"
                    )
                    + (
                        f", assistant prefill {server.forced_call_prefill.strip()!r}, parallel_tool_calls=false"
                        if server.forced_call_prefill
                        else ""
                    ),
                    str(status) if status is not None else "no reply",
                    accepted,
                    calls,
                    outcome,
                    seconds,
                    alive,
                    tokens,
                    timed_out,
                )
            )
            log.append({"check": f"forced {name}", "status": status, "outcome": outcome, "seconds": seconds})
            say(f"tool schema check {name}: HTTP {status}, {calls} ({seconds:.1f}s)")
    return rows

"""The exact JSON the adapter sends, for every request kind under every provider profile.

Each rule here is one a real server enforced: tools without ``tool_choice`` are ignored by
llama-cpp-python; ``\\d`` in a schema crashes llama.cpp's grammar; a replayed assistant turn with
``"content": null`` is an HTTP 500; a request without a token limit ran to the context limit; DeepSeek
needs thinking disabled explicitly; each server takes its own kind of ``response_format``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import openai
import pytest

from activities.model.model_gateway import ModelGateway
from activities.model.model_sampling import DEFAULT_SEED
from activities.model.model_settings import load_model_settings
from activities.model.provider_profiles import DEFAULT_MAX_TOKENS, PROFILE_NAMES, PROFILES
from activities.model.reply_schemas import RESPONSE_SCHEMAS, STRING_LENGTH_KEYWORDS, with_string_span, without_keywords
from contracts.knowledge import Language
from contracts.model_io import (
    ComposedAnswer,
    ComposeRequest,
    Intent,
    InvestigateRequest,
    NextAction,
    Plan,
    PlanRequest,
    PlanResult,
    ProposedToolCall,
    ReviewRequest,
    TranscriptEntry,
)
from contracts.names import REQUEST_KINDS, RequestKind
from contracts.tools import INVESTIGATION_TOOLS
from tests.case_data import passage

QUESTION = "Please refund QH-1001 and explain the amount and the policy"
PLAN = Plan(intent=Intent.REFUND, order_id="QH-1001", action_requested=True, queries=["refund"], milestones=[])
PASSAGE = passage("RETURNS:p02:en:0", title="Window", text="Thirty days.")
REPLIES: dict[str, dict[str, Any]] = {
    "plan": {
        "content": json.dumps(
            {"intent": "refund", "order_id": "QH-1001", "action_requested": True, "queries": [], "milestones": []}
        )
    },
    "investigate": {
        "content": None,
        "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "QH-1001"}'}}
        ],
    },
    "compose": {
        "content": json.dumps({"answer": "Thirty days.", "citations": ["RETURNS:p02:en:0"], "next_action": "answer"})
    },
    "review": {"content": json.dumps({"verdict": "pass", "problems": []})},
}
TRANSCRIPT = [
    TranscriptEntry(
        role="assistant",
        calls=[
            ProposedToolCall(
                call_id="c1",
                name="get_order",
                arguments={"order_id": "QH-1001"},
                raw_arguments='{"order_id":"QH-1001"}',
            )
        ],
    ),
    TranscriptEntry(role="tool", call_id="c1", content='{"ok": true}'),
    TranscriptEntry(role="assistant", content=""),
]


class Capture:
    """A MockTransport handler: records each body and timeout, answers the kind's valid reply."""

    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []
        self.bodies: list[dict[str, Any]] = []
        self.timeouts: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        body = json.loads(request.content)
        self.bodies.append(body)
        self.timeouts.append(dict(request.extensions.get("timeout") or {}))
        kind = body["messages"][0]["content"].split("]")[0].removeprefix("[kind: ")
        message = {"role": "assistant"} | REPLIES[kind]
        finish = "tool_calls" if "tool_calls" in message else "stop"
        return httpx2.Response(
            200,
            json={
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            },
        )

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))


def _gateway(capture: Capture, env: dict[str, str]) -> ModelGateway:
    base = {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "SUPPORT_MODEL": "m"}
    settings = load_model_settings(base | env)
    return ModelGateway(settings, capture.client())


def _call(gateway: ModelGateway, kind: str) -> Callable[[], Awaitable[object]]:
    common: dict[str, Any] = {"case_id": "c-1", "question": QUESTION, "language": Language.EN}
    if kind == "plan":
        return lambda: gateway.plan(PlanRequest(**common))
    if kind == "investigate":
        request = InvestigateRequest(
            **common, plan=PLAN, transcript=TRANSCRIPT, tool_names=list(INVESTIGATION_TOOLS), turn=2
        )
        return lambda: gateway.investigate(request)
    if kind == "compose":
        compose = ComposeRequest(**common, plan=PLAN, facts={}, evidence=[PASSAGE], quote=None)
        return lambda: gateway.compose(compose)
    candidate = ComposedAnswer(answer="Thirty days.", citations=["RETURNS:p02:en:0"], next_action=NextAction.ANSWER)
    review = ReviewRequest(**common, facts={}, evidence=[PASSAGE], quote=None, candidate=candidate)
    return lambda: gateway.review(review)


def _nulls(value: Any, path: str = "$") -> list[str]:
    if value is None:
        return [path]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _nulls(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in _nulls(item, f"{path}[{index}]")]
    return []


SEEDLESS = {"generic", "deepseek"}
"""DeepSeek's API documents no seed; an unknown server is not sent one."""
EXPECTED_FORMAT = {
    "generic": "json_object",
    "deepseek": "json_object",
    "llama-cpp-python": "json_object_with_schema",
    "openai": "json_schema",
    "vllm": "json_schema",
    "ollama": "json_schema",
    "llama.cpp": "json_schema",
}


@pytest.mark.parametrize("kind", REQUEST_KINDS)
@pytest.mark.parametrize("profile", PROFILE_NAMES)
async def test_every_request_kind_under_every_profile_follows_the_wire_rules(profile: str, kind: RequestKind) -> None:
    capture = Capture()
    gateway = _gateway(capture, {"SUPPORT_MODEL_PROFILE": profile, "SUPPORT_MODEL_TIMEOUT_SECONDS": "23"})
    await _call(gateway, kind)()
    (body,) = capture.bodies
    text = json.dumps(body)

    assert "\\\\d" not in text and "\\d" not in text, "no \\d anywhere: grammar engines mistranslate it"
    assert _nulls(body) == [], "no null anywhere in a request (content null is an HTTP 500 on llama-cpp-python)"
    assert all(isinstance(m.get("content"), str) for m in body["messages"])
    limit_field = "max_completion_tokens" if profile == "openai" else "max_tokens"
    assert body[limit_field] == DEFAULT_MAX_TOKENS[kind]
    assert {"max_tokens", "max_completion_tokens"} & set(body) == {limit_field}
    assert capture.timeouts[0]["read"] == 23.0
    assert body["temperature"] == 0, "deterministic by default, every kind"
    if profile in SEEDLESS:
        assert "seed" not in body
    else:
        assert body["seed"] == DEFAULT_SEED
    if profile == "deepseek":
        assert body["thinking"] == {"type": "disabled"}
    else:
        assert "thinking" not in body

    if kind == "investigate":
        assert body["tool_choice"] == "auto"
        assert [t["function"]["name"] for t in body["tools"]] == list(INVESTIGATION_TOOLS)
        assert "response_format" not in body
        assistants = [m for m in body["messages"] if m["role"] == "assistant"]
        assert [m["content"] for m in assistants] == ["", ""]
        return
    assert "tools" not in body and "tool_choice" not in body
    response_format = body["response_format"]
    expected = EXPECTED_FORMAT[profile]
    if expected == "json_object":
        assert response_format == {"type": "json_object"}
    elif expected == "json_object_with_schema":
        # llama-cpp-python's grammar compiles at most 1000 optional characters per string.
        assert response_format == {"type": "json_object", "schema": with_string_span(RESPONSE_SCHEMAS[kind], 1000)}
    else:
        # OpenAI's strict mode documents no string lengths: its schemas are the same less those.
        schema = RESPONSE_SCHEMAS[kind]
        if profile == "openai":
            schema = without_keywords(schema, STRING_LENGTH_KEYWORDS)
            assert "minLength" not in json.dumps(schema) and "maxItems" in json.dumps(schema)
        else:
            assert '"minLength": 1' in json.dumps(schema)
        assert response_format == {
            "type": "json_schema",
            "json_schema": {"name": f"{kind}_reply", "strict": True, "schema": schema},
        }


def test_profiles_are_detected_and_a_wrong_name_is_a_configuration_error() -> None:
    from contracts.errors import ConfigurationError

    assert load_model_settings({"DEEPSEEK_API_KEY": "k"}).profile == "deepseek"
    assert load_model_settings({"OPENAI_API_KEY": "k", "SUPPORT_MODEL": "gpt-4o-mini"}).profile == "openai"
    local = {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "SUPPORT_MODEL": "m"}
    assert load_model_settings(local).profile == "generic"
    assert load_model_settings(local | {"SUPPORT_MODEL_PROFILE": "LLAMA-CPP-PYTHON"}).profile == "llama-cpp-python"
    assert load_model_settings(local | {"SUPPORT_MODEL_PROFILE": "llama-server"}).profile == "llama.cpp"
    with pytest.raises(ConfigurationError) as raised:
        load_model_settings(local | {"SUPPORT_MODEL_PROFILE": "gpt5"})
    assert raised.value.code == "invalid_model_profile"


def test_token_limits_and_timeout_are_configurable_within_bounds() -> None:
    from contracts.errors import ConfigurationError

    local = {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "SUPPORT_MODEL": "m"}
    settings = load_model_settings(
        local | {"SUPPORT_MODEL_MAX_TOKENS": "300", "SUPPORT_MODEL_MAX_TOKENS_COMPOSE": "900"}
    )
    assert settings.max_tokens == {"plan": 300, "investigate": 300, "compose": 900, "review": 300}
    assert load_model_settings(local).timeout_seconds == 40.0
    for bad in ({"SUPPORT_MODEL_MAX_TOKENS": "lots"}, {"SUPPORT_MODEL_MAX_TOKENS_PLAN": "0"}):
        with pytest.raises(ConfigurationError):
            load_model_settings(local | bad)
    for seconds in ("0", "601", "soon", "nan"):
        with pytest.raises(ConfigurationError, match="SUPPORT_MODEL_TIMEOUT_SECONDS must be"):
            load_model_settings(local | {"SUPPORT_MODEL_TIMEOUT_SECONDS": seconds})
    with pytest.raises(ConfigurationError, match="SUPPORT_MODEL_TIMEOUT_SECONDS_COMPOSE must be"):
        load_model_settings(local | {"SUPPORT_MODEL_TIMEOUT_SECONDS_COMPOSE": "900"})
    slow = load_model_settings(
        local | {"SUPPORT_MODEL_TIMEOUT_SECONDS": "120", "SUPPORT_MODEL_TIMEOUT_SECONDS_COMPOSE": "600"}
    )
    assert slow.timeouts == {"plan": 120.0, "investigate": 120.0, "compose": 600.0, "review": 120.0}
    assert "timeout=plan 120s, investigate 120s, compose 600s, review 120s" in slow.describe()
    assert "timeout=40s" in load_model_settings(local).describe()


async def test_each_request_kind_is_sent_with_its_own_timeout() -> None:
    """The timeout the gateway gives the HTTP client is the request kind's (httpx reads it per request)."""
    capture = Capture()
    gateway = _gateway(capture, {"SUPPORT_MODEL_TIMEOUT_SECONDS_PLAN": "450"})
    try:
        for kind in REQUEST_KINDS:
            await _call(gateway, kind)()
    finally:
        await gateway.aclose()
    assert [t["read"] for t in capture.timeouts] == [450.0, 40.0, 40.0, 40.0]


def test_response_and_tool_schemas_use_only_portable_constructs() -> None:
    schemas = [*RESPONSE_SCHEMAS.values(), *(spec.openai_schema() for spec in INVESTIGATION_TOOLS.values())]
    text = json.dumps(schemas)
    assert "\\d" not in text and "\\w" not in text and "\\s" not in text
    patterns = [
        prop["pattern"]
        for spec in INVESTIGATION_TOOLS.values()
        for prop in spec.openai_schema()["function"]["parameters"]["properties"].values()
        if "pattern" in prop
    ]
    assert len(patterns) == 7 and all(p.startswith("^") and p.endswith("$") for p in patterns)


async def _what_create_sends(
    gateway: ModelGateway, sent: httpx2.Request, kind: RequestKind, key: str
) -> httpx2.Request:
    """What ``chat.completions.create`` sends for the messages (and tools) the gateway sent."""
    body = json.loads(sent.content)
    capture = Capture()
    client = openai.AsyncOpenAI(
        base_url=gateway.settings.base_url,
        api_key=key,
        timeout=gateway.settings.timeout_seconds,
        max_retries=0,
        http_client=capture.client(),
    )
    options = gateway.profile.request_options(
        kind,
        max_tokens=gateway.settings.max_tokens[kind],
        tools=body.get("tools"),
        temperature=gateway.settings.temperatures[kind],
        seed=gateway.settings.seed,
    )
    await client.chat.completions.create(
        model=gateway.settings.model, messages=body["messages"], timeout=gateway.settings.timeout_seconds, **options
    )
    return capture.requests[0]


@pytest.mark.parametrize("kind", ["plan", "investigate"])
@pytest.mark.parametrize("profile", PROFILE_NAMES)
async def test_the_gateway_posts_exactly_what_create_would_send(profile: str, kind: RequestKind) -> None:
    """``chat_completion_body`` replaces the SDK's ``create`` (to skip its request transform): same bytes."""
    key = "sk-test-2"
    capture = Capture()
    gateway = _gateway(capture, {"SUPPORT_MODEL_PROFILE": profile, "OPENAI_API_KEY": key})
    result = await _call(gateway, kind)()
    (ours,) = capture.requests
    theirs = await _what_create_sends(gateway, ours, kind, key)
    assert (ours.method, str(ours.url)) == (theirs.method, str(theirs.url))
    assert dict(ours.headers) == dict(theirs.headers)
    assert ours.content == theirs.content
    assert ours.headers["authorization"] == f"Bearer {key}"
    if kind == "plan":
        assert isinstance(result, PlanResult) and result.plan.order_id == "QH-1001"
    else:
        assert b'"tools"' in ours.content and b'"tool_choice"' in ours.content


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_a_forced_tool_is_asked_for_in_the_form_the_profiles_server_honours(profile: str) -> None:
    """llama-server reads ``tool_choice`` as a string only (an object becomes ``auto``): it is offered the
    one tool with ``required``; every other profile names the tool in OpenAI's object form."""
    tools = [spec.openai_schema() for spec in INVESTIGATION_TOOLS.values()]
    forced = PROFILES[profile].forced_tool(tools, "get_invoice")  # type: ignore[index]
    if profile == "llama.cpp":
        assert forced["tool_choice"] == "required"
        assert [t["function"]["name"] for t in forced["tools"]] == ["get_invoice"]
    else:
        assert forced["tool_choice"] == {"type": "function", "function": {"name": "get_invoice"}}
        assert forced["tools"] == tools


async def test_sampling_is_configurable_per_kind_and_default_sends_none() -> None:
    capture = Capture()
    env = {
        "SUPPORT_MODEL_PROFILE": "vllm",
        "SUPPORT_MODEL_TEMPERATURE": "0.2",
        "SUPPORT_MODEL_TEMPERATURE_COMPOSE": "0.7",
        "SUPPORT_MODEL_TEMPERATURE_REVIEW": "default",
        "SUPPORT_MODEL_SEED": "1234",
    }
    gateway = _gateway(capture, env)
    try:
        for kind in REQUEST_KINDS:
            await _call(gateway, kind)()
    finally:
        await gateway.aclose()
    assert [b.get("temperature") for b in capture.bodies] == [0.2, 0.2, 0.7, None]
    assert "temperature" not in capture.bodies[3]
    assert [b["seed"] for b in capture.bodies] == [1234] * 4
    assert "temperature=plan 0.2, investigate 0.2, compose 0.7, review default seed=1234" in gateway.settings.describe()
    unseeded = load_model_settings({"DEEPSEEK_API_KEY": "k", "SUPPORT_MODEL_SEED": "default"})
    assert unseeded.seed is None and unseeded.describe().endswith("temperature=0")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SUPPORT_MODEL_TEMPERATURE", "warm"),
        ("SUPPORT_MODEL_TEMPERATURE", "-0.1"),
        ("SUPPORT_MODEL_TEMPERATURE_PLAN", "2.5"),
        ("SUPPORT_MODEL_TEMPERATURE_INVESTIGATE", "nan"),
        ("SUPPORT_MODEL_SEED", "-1"),
        ("SUPPORT_MODEL_SEED", "2147483648"),
        ("SUPPORT_MODEL_SEED", "1.5"),
    ],
)
def test_a_bad_sampling_value_is_one_configuration_error_line_naming_the_variable(variable: str, value: str) -> None:
    from contracts.errors import ConfigurationError

    for env in ({"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "SUPPORT_MODEL": "m"}, {}):  # rehearsal too
        with pytest.raises(ConfigurationError) as raised:
            load_model_settings(env | {variable: value})
        line = str(raised.value)  # what the worker prints: "worker: configuration error: <line>"
        assert raised.value.code in ("invalid_model_temperature", "invalid_model_seed")
        assert raised.value.message.startswith(f"{variable} must be ") and "\n" not in line

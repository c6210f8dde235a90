"""Provider dialects: what each OpenAI-compatible server needs to see in a request.

Every server speaks "the OpenAI protocol", but not the same parts of it. A profile decides, for the
four request kinds, what the model gateway adds to the messages (the table is at :data:`PROFILES`);
this module also says which provider errors are transient and what a JSON reply must look like.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import httpx2
import openai

from contracts.case import (
    MAX_CITATIONS,
    MAX_MILESTONES,
    MAX_PROBLEMS,
    MAX_QUERIES,
    Intent,
    NextAction,
    Verdict,
)
from contracts.commerce import ORDER_ID_SCHEMA_PATTERN
from contracts.errors import ConfigurationError, ContractError, SupportError, TransientError
from contracts.names import RequestKind

ProfileName = Literal["generic", "openai", "deepseek", "vllm", "ollama", "llama.cpp", "llama-cpp-python"]
PROFILE_NAMES: tuple[ProfileName, ...] = (
    "generic",
    "openai",
    "deepseek",
    "vllm",
    "ollama",
    "llama.cpp",
    "llama-cpp-python",
)
StructuredOutput = Literal["json_schema", "json_object_with_schema", "json_object"]

MAX_RETRY_AFTER_SECONDS = 600.0
DEFAULT_MAX_TOKENS: Mapping[RequestKind, int] = MappingProxyType(
    {"plan": 600, "investigate": 800, "compose": 2500, "review": 800}
)
"""Completion-token limits per request kind: room for the largest valid reply, not for a runaway one."""

_INVALID_REQUEST = re.compile(
    r"input should be|validation error|field required|invalid (request|argument|parameter|value|input|type)"
    r"|unprocessable|is not valid|not a valid",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ProviderProfile:
    """One server's dialect.

    ``tool_choice`` is always sent with tools: llama-cpp-python's ``chatml-function-calling`` handler
    ignores tools without it (HTTP 200, prose). It is ``auto``, never ``required``: an investigation
    ends when the model calls no tool, so a model forced to call one could never say it is done.
    """

    name: ProfileName
    structured_output: StructuredOutput = "json_object"
    tool_choice: Literal["auto", "required"] = "auto"
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    extra_body: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def response_format(self, kind: RequestKind) -> dict[str, Any]:
        """The ``response_format`` of a JSON request (plan, compose, review)."""
        schema = RESPONSE_SCHEMAS[kind]
        if self.structured_output == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": f"{kind}_reply", "strict": True, "schema": schema}}
        if self.structured_output == "json_object_with_schema":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_object"}

    def request_options(
        self,
        kind: RequestKind,
        *,
        max_tokens: int,
        tools: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments (besides model and messages) of one chat completion request."""
        options: dict[str, Any] = {self.max_tokens_field: max_tokens}
        if kind == "investigate":
            if tools:
                options["tools"] = tools
                options["tool_choice"] = self.tool_choice
        else:
            options["response_format"] = self.response_format(kind)
        if self.extra_body:
            options["extra_body"] = _plain(self.extra_body)
        return options


PROFILES: Mapping[ProfileName, ProviderProfile] = MappingProxyType(
    {
        "generic": ProviderProfile("generic"),
        "openai": ProviderProfile("openai", structured_output="json_schema", max_tokens_field="max_completion_tokens"),
        "deepseek": ProviderProfile(
            "deepseek", extra_body=MappingProxyType({"thinking": MappingProxyType({"type": "disabled"})})
        ),
        "vllm": ProviderProfile("vllm", structured_output="json_schema"),
        "ollama": ProviderProfile("ollama", structured_output="json_schema"),
        "llama.cpp": ProviderProfile("llama.cpp", structured_output="json_schema"),
        "llama-cpp-python": ProviderProfile("llama-cpp-python", structured_output="json_object_with_schema"),
    }
)
"""Every profile by name:

================  ==========================  ===========  ===========================  ==================
profile           JSON replies                tool_choice  token limit field            extra body
================  ==========================  ===========  ===========================  ==================
generic           ``json_object``             auto         ``max_tokens``               none
openai            ``json_schema`` (strict)    auto         ``max_completion_tokens``    none
deepseek          ``json_object``             auto         ``max_tokens``               thinking disabled
vllm              ``json_schema`` (strict)    auto         ``max_tokens``               none
ollama            ``json_schema`` (strict)    auto         ``max_tokens``               none
llama.cpp         ``json_schema`` (strict)    auto         ``max_tokens``               none
llama-cpp-python  ``json_object`` + schema    auto         ``max_tokens``               none
================  ==========================  ===========  ===========================  ==================
"""


def profile(name: ProfileName) -> ProviderProfile:
    return PROFILES[name]


def is_invalid_request(status: int, message: str) -> bool:
    """An HTTP 500 whose message says the request itself is invalid (not the server being down).

    llama-cpp-python answers a message it cannot validate that way (e.g. ``Input should be a valid
    string``). That is not transient: repeating the same request cannot help, so the gateway reports it
    as a rejected request.
    """
    return status == 500 and bool(_INVALID_REQUEST.search(message))


def map_provider_error(
    exc: openai.OpenAIError, provider: str, model: str, redact: Callable[[str], str]
) -> SupportError:
    """The service's error for a failed provider request:

    ==========================================  ============================================  ==========
    what happened                               error                                         retried
    ==========================================  ============================================  ==========
    timeout, connection failure                 TransientError provider_timeout/_unreachable  yes
    HTTP 408, 409, 5xx                          TransientError provider_unavailable           yes
    HTTP 500 saying the request is invalid      ContractError provider_rejected_request       no
    HTTP 429                                    TransientError provider_rate_limited,         yes, after
                                                ``retry_after_seconds`` from Retry-After      that delay
    HTTP 401, 403                               ConfigurationError provider_auth_failed       no
    HTTP 402 (e.g. DeepSeek balance)            ConfigurationError provider_billing           no
    HTTP 404                                    ConfigurationError model_not_found            no
    other 4xx (400, 413, 422, ...)              ContractError provider_rejected_request       no
    unreadable body, no choices, truncated,     ContractError truncated_or_malformed          no
    a reply of the wrong shape
    ==========================================  ============================================  ==========

    A 4xx other than those means the provider refused this request as built (an unsupported parameter,
    an oversized context): repeating it cannot help, and the workflow decides what follows.
    """
    if isinstance(exc, openai.APITimeoutError):
        return TransientError("provider_timeout", f"The {provider} request timed out.")
    if isinstance(exc, openai.APIConnectionError):
        return TransientError("provider_unreachable", f"The {provider} endpoint could not be reached.")
    if not isinstance(exc, openai.APIStatusError):
        return ContractError("truncated_or_malformed", f"The {provider} reply could not be read.")
    status = exc.status_code
    if status == 429:
        return TransientError(
            "provider_rate_limited",
            f"The {provider} endpoint is rate limiting requests (HTTP 429).",
            retry_after_seconds=retry_after_seconds(exc.response.headers),
        )
    if is_invalid_request(status, f"{exc.message} {json.dumps(exc.body, default=str)[:4000]}"):
        return ContractError(
            "provider_rejected_request",
            f"The {provider} endpoint rejected the request as invalid (HTTP {status}): {redact(exc.message)}",
        )
    if status in (408, 409) or status >= 500:
        return TransientError(
            "provider_unavailable",
            f"The {provider} endpoint is temporarily unavailable (HTTP {status}).",
            retry_after_seconds=retry_after_seconds(exc.response.headers),
        )
    if status in (401, 403):
        return ConfigurationError(
            "provider_auth_failed",
            f"The {provider} endpoint rejected the API key (HTTP {status}); check "
            f"{'DEEPSEEK_API_KEY' if provider == 'deepseek' else 'OPENAI_API_KEY'}.",
        )
    if status == 402:
        return ConfigurationError("provider_billing", f"The {provider} account cannot pay for requests (HTTP 402).")
    if status == 404:
        variable = "DEEPSEEK_MODEL" if provider == "deepseek" else "SUPPORT_MODEL or OPENAI_BASE_URL"
        return ConfigurationError(
            "model_not_found",
            f"The {provider} endpoint has no model {model!r} (HTTP 404); check {variable}.",
        )
    return ContractError(
        "provider_rejected_request",
        f"The {provider} endpoint rejected the request (HTTP {status}): {redact(exc.message)}",
    )


def retry_after_seconds(headers: httpx2.Headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date), capped."""
    seconds: float | None = None
    try:
        if "retry-after-ms" in headers:
            seconds = float(headers["retry-after-ms"]) / 1000
        elif "retry-after" in headers:
            value = headers["retry-after"]
            try:
                seconds = float(value)
            except ValueError:
                parsed = email.utils.parsedate_to_datetime(value)
                seconds = parsed.timestamp() - time.time()
    except (ValueError, TypeError):
        return None
    if seconds is None or seconds <= 0:
        return None
    return min(seconds, MAX_RETRY_AFTER_SECONDS)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _strings(max_items: int) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "maxItems": max_items}


def _enum(values: type[Intent] | type[NextAction] | type[Verdict]) -> dict[str, Any]:
    return {"type": "string", "enum": [member.value for member in values]}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


RESPONSE_SCHEMAS: Mapping[RequestKind, dict[str, Any]] = MappingProxyType(
    {
        "plan": _object(
            {
                "intent": _enum(Intent),
                "order_id": {"anyOf": [{"type": "string", "pattern": ORDER_ID_SCHEMA_PATTERN}, {"type": "null"}]},
                "action_requested": {"type": "boolean"},
                "queries": _strings(MAX_QUERIES),
                "milestones": _strings(MAX_MILESTONES),
            }
        ),
        "investigate": {},
        "compose": _object(
            {
                "answer": {"type": "string"},
                "citations": _strings(MAX_CITATIONS),
                "next_action": _enum(NextAction),
            }
        ),
        "review": _object({"verdict": _enum(Verdict), "problems": _strings(MAX_PROBLEMS)}),
    }
)
"""The JSON reply of each JSON request kind (``investigate`` replies with tool calls, not JSON).

These schemas and the tool schemas of :mod:`contracts.tools` use only constructs every grammar engine
takes (types, enums, ``anyOf``, anchored patterns with ``[0-9]``, never ``\\d``)."""

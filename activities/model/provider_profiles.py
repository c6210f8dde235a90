"""Provider dialects: what each OpenAI-compatible server needs to see in a request.

Every server speaks "the OpenAI protocol", but not the same parts of it. A profile decides, for the
four request kinds, what the model gateway adds to the messages (the table is at :data:`PROFILES`);
this module also says which provider errors are transient. What a JSON reply must look like is
:mod:`activities.model.reply_schemas`.
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

from activities.model.codes import ModelErrorCode
from activities.model.reply_schemas import RESPONSE_SCHEMAS, STRING_LENGTH_KEYWORDS, with_string_span, without_keywords
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
ForcedToolChoice = Literal["object", "required"]

MAX_RETRY_AFTER_SECONDS = 600.0
DEFAULT_MAX_TOKENS: Mapping[RequestKind, int] = MappingProxyType(
    {"plan": 600, "investigate": 800, "compose": 2500, "review": 800}
)
"""Completion-token limits per request kind: room for the largest valid reply, not for a runaway one."""

_INVALID_REQUEST = re.compile(
    r"input should be|validation error|field required|invalid (request|argument|parameter|value|input|type)"
    r"|unprocessable|is not valid|not a valid|(failed|unable|could not|cannot)( to)? parse",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ProviderProfile:
    """One server's dialect.

    ``tool_choice`` is always sent with tools: llama-cpp-python's ``chatml-function-calling`` handler
    ignores tools without it (HTTP 200, prose). It is ``auto``, never ``required``: an investigation
    ends when the model calls no tool, so a model forced to call one could never say it is done.
    ``forced_tool_choice`` is how the server is made to call one named tool (the compat script's
    tool-schema checks, :meth:`forced_tool`): OpenAI's object form, or ``required`` with only that tool
    offered, for a server that reads ``tool_choice`` as a string only (llama-server turns the object into
    ``auto``). ``sends_seed``: the server takes a ``seed`` (DeepSeek's API documents none, and an unknown
    ``generic`` server is sent only the temperature). ``schema_omits``: keywords left out of the reply
    schemas (:mod:`activities.model.reply_schemas`) for a server whose strict mode refuses them: OpenAI's strict
    structured outputs document no string lengths, so the validator drops blank list items and refuses an
    empty answer there. ``string_span``: the most characters a string of a reply schema may run past its
    ``minLength`` (None: no limit): llama-cpp-python's schema converter nests one optional group per
    character and llama.cpp's grammar parser refuses more than 1000 of them, after which llama-cpp-python
    0.3.36 samples with no grammar and the server process dies of SIGSEGV (the compose answer's 4000,
    2026-12-04; llama-server's converter writes ``{1,4000}`` and compiles it). A longer ``maxLength``
    is lowered (:func:`activities.model.reply_schemas.with_string_span`): the schema then asks for less than
    the validator allows.
    """

    name: ProfileName
    structured_output: StructuredOutput = "json_object"
    tool_choice: Literal["auto", "required"] = "auto"
    forced_tool_choice: ForcedToolChoice = "object"
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    sends_seed: bool = True
    schema_omits: frozenset[str] = frozenset()
    string_span: int | None = None
    extra_body: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def response_format(self, kind: RequestKind) -> dict[str, Any]:
        """The ``response_format`` of a JSON request (plan, compose, review)."""
        schema = RESPONSE_SCHEMAS[kind]
        if self.schema_omits:
            schema = without_keywords(schema, self.schema_omits)
        if self.string_span is not None:
            schema = with_string_span(schema, self.string_span)
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
        temperature: float | None = None,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments (besides model and messages) of one chat completion request; a
        ``temperature`` or ``seed`` of None is not sent, and the seed only where the server takes one."""
        options: dict[str, Any] = {self.max_tokens_field: max_tokens}
        if kind == "investigate":
            if tools:
                options["tools"] = tools
                options["tool_choice"] = self.tool_choice
        else:
            options["response_format"] = self.response_format(kind)
        if temperature is not None:
            options["temperature"] = temperature
        if seed is not None and self.sends_seed:
            options["seed"] = seed
        if self.extra_body:
            options["extra_body"] = _plain(self.extra_body)
        return options

    def forced_tool(self, tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
        """``tools`` and ``tool_choice`` that make the model call the tool ``name``, in this server's form."""
        if self.forced_tool_choice == "required":
            return {"tools": [tool for tool in tools if tool["function"]["name"] == name], "tool_choice": "required"}
        return {"tools": tools, "tool_choice": {"type": "function", "function": {"name": name}}}


PROFILES: Mapping[ProfileName, ProviderProfile] = MappingProxyType(
    {
        "generic": ProviderProfile("generic", sends_seed=False),
        "openai": ProviderProfile(
            "openai",
            structured_output="json_schema",
            max_tokens_field="max_completion_tokens",
            schema_omits=STRING_LENGTH_KEYWORDS,
        ),
        "deepseek": ProviderProfile(
            "deepseek",
            sends_seed=False,
            extra_body=MappingProxyType({"thinking": MappingProxyType({"type": "disabled"})}),
        ),
        "vllm": ProviderProfile("vllm", structured_output="json_schema"),
        "ollama": ProviderProfile("ollama", structured_output="json_schema"),
        "llama.cpp": ProviderProfile("llama.cpp", structured_output="json_schema", forced_tool_choice="required"),
        "llama-cpp-python": ProviderProfile(
            "llama-cpp-python", structured_output="json_object_with_schema", string_span=1000
        ),
    }
)
"""Every profile by name (``llama-server`` is another name of ``llama.cpp``, :data:`PROFILE_ALIASES`):

================  ========================  ===========  ============  =====================  ====  =================
profile           JSON replies              tool_choice  forced tool   token limit field      seed  extra body
================  ========================  ===========  ============  =====================  ====  =================
generic           ``json_object``           auto         object        max_tokens             no    none
openai            ``json_schema`` (strict)  auto         object        max_completion_tokens  yes   none
deepseek          ``json_object``           auto         object        max_tokens             no    thinking disabled
vllm              ``json_schema`` (strict)  auto         object        max_tokens             yes   none
ollama            ``json_schema`` (strict)  auto         object        max_tokens             yes   none
llama.cpp         ``json_schema`` (strict)  auto         ``required``  max_tokens             yes   none
llama-cpp-python  ``json_object`` + schema  auto         object        max_tokens             yes   none
================  ========================  ===========  ============  =====================  ====  =================

Every request also carries its kind's ``temperature`` (:mod:`activities.model.model_sampling`: 0 unless
configured). *forced tool* is :meth:`ProviderProfile.forced_tool`: ``object`` names the tool in OpenAI's
``{"type": "function", "function": {"name": ...}}``; ``required`` offers only that tool. The
``llama-cpp-python`` schemas let no string run more than 1000 characters past its ``minLength``
(``string_span``): its compose answer is at most 1001 characters there, 4000 elsewhere.
"""

PROFILE_ALIASES: Mapping[str, ProfileName] = MappingProxyType({"llama-server": "llama.cpp"})
"""Other names ``SUPPORT_MODEL_PROFILE`` takes: llama-server is the C++ server of llama.cpp."""


def profile(name: ProfileName) -> ProviderProfile:
    return PROFILES[name]


def is_invalid_request(status: int, message: str) -> bool:
    """An HTTP 500 whose message says the request itself is invalid (not the server being down).

    llama-cpp-python answers a message it cannot validate that way (e.g. ``Input should be a valid
    string``), and llama-server a request whose tool-call arguments are not JSON (``Failed to parse tool
    call arguments as JSON``). That is not transient: repeating the same request cannot help, so the
    gateway reports it as a rejected request.
    """
    return status == 500 and bool(_INVALID_REQUEST.search(message))


def map_provider_error(
    exc: openai.OpenAIError,
    provider: str,
    model: str,
    redact: Callable[[str], str],
    *,
    timeout_seconds: float | None = None,
) -> SupportError:
    """The service's error for a failed provider request:

    ==========================================  ============================================  ==========
    what happened                               error                                         retried
    ==========================================  ============================================  ==========
    timeout, connection failure                 TransientError provider_timeout/_unreachable  yes
    HTTP 408, 409, 5xx                          TransientError provider_unavailable           yes
    HTTP 500 saying the request is invalid      ContractError provider_rejected_request       no
    or could not be parsed (``Failed to
    parse tool call arguments as JSON``)
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
        after = f" after {timeout_seconds:g} s" if timeout_seconds is not None else ""
        return TransientError(
            ModelErrorCode.PROVIDER_TIMEOUT, f"The {provider} request to model {model!r} timed out{after}."
        )
    if isinstance(exc, openai.APIConnectionError):
        return TransientError(ModelErrorCode.PROVIDER_UNREACHABLE, f"The {provider} endpoint could not be reached.")
    if not isinstance(exc, openai.APIStatusError):
        return ContractError(ModelErrorCode.TRUNCATED_OR_MALFORMED, f"The {provider} reply could not be read.")
    status = exc.status_code
    if status == 429:
        return TransientError(
            ModelErrorCode.PROVIDER_RATE_LIMITED,
            f"The {provider} endpoint is rate limiting requests (HTTP 429).",
            retry_after_seconds=retry_after_seconds(exc.response.headers),
        )
    if is_invalid_request(status, f"{exc.message} {json.dumps(exc.body, default=str)[:4000]}"):
        return ContractError(
            ModelErrorCode.PROVIDER_REJECTED_REQUEST,
            f"The {provider} endpoint rejected the request as invalid (HTTP {status}): {redact(exc.message)}",
        )
    if status in (408, 409) or status >= 500:
        return TransientError(
            ModelErrorCode.PROVIDER_UNAVAILABLE,
            f"The {provider} endpoint is temporarily unavailable (HTTP {status}).",
            retry_after_seconds=retry_after_seconds(exc.response.headers),
        )
    if status in (401, 403):
        return ConfigurationError(
            ModelErrorCode.PROVIDER_AUTH_FAILED,
            f"The {provider} endpoint rejected the API key (HTTP {status}); check "
            f"{'DEEPSEEK_API_KEY' if provider == 'deepseek' else 'OPENAI_API_KEY'}.",
        )
    if status == 402:
        return ConfigurationError(
            ModelErrorCode.PROVIDER_BILLING, f"The {provider} account cannot pay for requests (HTTP 402)."
        )
    if status == 404:
        variable = "DEEPSEEK_MODEL" if provider == "deepseek" else "SUPPORT_MODEL or OPENAI_BASE_URL"
        return ConfigurationError(
            ModelErrorCode.MODEL_NOT_FOUND,
            f"The {provider} endpoint has no model {model!r} (HTTP 404); check {variable}.",
        )
    return ContractError(
        ModelErrorCode.PROVIDER_REJECTED_REQUEST,
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

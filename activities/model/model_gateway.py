"""The one adapter between the service and an OpenAI-compatible Chat Completions endpoint.

``ModelGateway`` builds the messages for the four request kinds, sends them through ``AsyncOpenAI``
(``max_retries=0``: retries belong to Temporal; each kind's timeout, 40 s unless configured) in the
dialect of the settings' provider profile (:mod:`activities.model.provider_profiles`: response format,
``tool_choice``, token limit, temperature and seed, extra body fields) and validates every reply with
:mod:`activities.model.model_validation`.
Review requests go to the separate reviewer model when one is configured. The endpoint and key come
from the settings; the HTTP client may be injected: the worker hands in the rehearsal model's
in-process client when no provider is configured, so the stand-in runs through this same code and
there is no second code path.

Provider failures become the service's error classes (SPEC §8) in
:func:`activities.model.provider_profiles.map_provider_error`, which holds the table. No error message ever
contains the API key. A failure after the provider answered carries the model's name and, when the
provider reported it, the token usage, so a refused reply is still counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.chat_completion import Choice

from activities.model import model_validation, prompts
from activities.model.codes import ModelErrorCode
from activities.model.model_prices import ModelPrices
from activities.model.model_settings import KEYLESS_PLACEHOLDER_KEY, ModelSettings
from activities.model.provider_profiles import map_provider_error, profile
from activities.model.provider_profiles import retry_after_seconds as retry_after_seconds
from contracts.errors import ContractError, SupportError
from contracts.knowledge import Passage
from contracts.model_io import (
    ComposeRequest,
    ComposeResult,
    InvestigateRequest,
    InvestigateResult,
    ModelCallMeta,
    ModelUsage,
    PlanRequest,
    PlanResult,
    ProposedToolCall,
    ReviewRequest,
    ReviewResult,
    TranscriptEntry,
)
from contracts.names import RequestKind
from contracts.tools import INVESTIGATION_TOOLS

MAX_CONTEXT_CHARS = 36_000
"""Budget for the serialized messages of one request; older tool exchanges are dropped first."""
MAX_TOOL_RESULT_CHARS = 8_000
_NOT_EXECUTED = json.dumps(
    {"ok": False, "error_code": "not_executed", "error_message": "No result was recorded for this call."}
)


class ModelGateway:
    """The four model requests on the provider ``settings`` name, through ``http_client`` when given
    (else the SDK's own ``httpx2`` client); each reply's meta carries its price from ``prices``
    (default: the table ``SUPPORT_MODEL_PRICES`` names, :mod:`activities.model.model_prices`)."""

    def __init__(
        self,
        settings: ModelSettings,
        http_client: httpx2.AsyncClient | None = None,
        *,
        reviewer_http_client: httpx2.AsyncClient | None = None,
        prices: ModelPrices | None = None,
    ) -> None:
        self.settings = settings
        self.profile = profile(settings.profile)
        self.prices = prices if prices is not None else ModelPrices.from_environment()
        self.reviewer = (
            ModelGateway(settings.reviewer, reviewer_http_client, prices=self.prices) if settings.reviewer else None
        )
        self._secret = settings.api_key.get_secret_value() if settings.api_key else None
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=self._secret or KEYLESS_PLACEHOLDER_KEY,
            timeout=settings.timeout_seconds,
            max_retries=0,
            http_client=http_client,
        )

    async def aclose(self) -> None:
        await self._client.close()
        if self.reviewer is not None:
            await self.reviewer.aclose()

    async def plan(self, request: PlanRequest, *, attempt: int = 1) -> PlanResult:
        messages = _opening("plan", prompts.plan_payload(request))
        completion = await self._complete("plan", messages)
        with self._reading_reply("plan", completion):
            data = self._json(completion, "plan")
            return PlanResult(
                plan=model_validation.validate_plan(data, request.question), meta=self._meta(completion, attempt)
            )

    async def investigate(self, request: InvestigateRequest, *, attempt: int = 1) -> InvestigateResult:
        unknown = [name for name in request.tool_names if name not in INVESTIGATION_TOOLS]
        if unknown:
            raise ContractError(ModelErrorCode.UNKNOWN_TOOL_OFFERED, f"Not investigation tools: {', '.join(unknown)}.")
        opening = _opening("investigate", prompts.investigate_payload(request))
        messages = opening + fit_transcript(request.transcript, MAX_CONTEXT_CHARS - _size(opening))
        tools = [INVESTIGATION_TOOLS[name].openai_schema() for name in request.tool_names]
        completion = await self._complete("investigate", messages, tools=tools)
        with self._reading_reply("investigate", completion):
            choice = _first_choice(completion, "investigate")
            if choice.finish_reason == "length":
                raise ContractError(
                    ModelErrorCode.TRUNCATED_OR_MALFORMED, "The investigate reply was cut off (finish_reason=length)."
                )
            return InvestigateResult(
                calls=model_validation.parse_tool_calls(choice.message.tool_calls),
                content=choice.message.content,
                finish_reason=choice.finish_reason,
                meta=self._meta(completion, attempt),
            )

    async def compose(self, request: ComposeRequest, *, attempt: int = 1) -> ComposeResult:
        evidence = _fit_evidence(lambda ev: prompts.compose_payload(request, ev), request.evidence)
        messages = _opening("compose", prompts.compose_payload(request, evidence))
        completion = await self._complete("compose", messages)
        shown = {passage.passage_id for passage in evidence}
        with self._reading_reply("compose", completion):
            data = self._json(completion, "compose")
            return ComposeResult(
                answer=model_validation.validate_composed(data, shown, request), meta=self._meta(completion, attempt)
            )

    async def review(self, request: ReviewRequest, *, attempt: int = 1) -> ReviewResult:
        if self.reviewer is not None:
            return await self.reviewer.review(request, attempt=attempt)
        evidence = _fit_evidence(lambda ev: prompts.review_payload(request, ev), request.evidence)
        messages = _opening("review", prompts.review_payload(request, evidence))
        completion = await self._complete("review", messages)
        with self._reading_reply("review", completion):
            data = self._json(completion, "review")
            return ReviewResult(verdict=model_validation.validate_review(data), meta=self._meta(completion, attempt))

    async def _complete(
        self,
        kind: RequestKind,
        messages: list[ChatCompletionMessageParam],
        *,
        tools: list[dict[str, Any]] | None = None,
    ) -> ChatCompletion:
        body, extra_body = chat_completion_body(
            self.settings.model,
            messages,
            self.profile.request_options(
                kind,
                max_tokens=self.settings.max_tokens[kind],
                tools=tools,
                temperature=self.settings.temperatures[kind],
                seed=self.settings.seed,
            ),
        )
        try:
            completion = await self._client.post(
                "/chat/completions",
                cast_to=ChatCompletion,
                body=body,
                options={
                    "timeout": self.settings.timeouts[kind],
                    "security": {"bearer_auth": True},
                    **({"extra_json": extra_body} if extra_body is not None else {}),
                },
            )
        except openai.OpenAIError as exc:
            error = map_provider_error(
                exc,
                self.settings.provider,
                self.settings.model,
                self._redact,
                timeout_seconds=self.settings.timeouts[kind],
            )
            if isinstance(exc, openai.APIStatusError):  # the request reached the model's server
                error = error.naming_model(self.settings.model, self.settings.provider)
            raise error from None
        except json.JSONDecodeError:
            # a 2xx whose body is not JSON at all (cut off, empty): the SDK raises the decoder's error
            raise ContractError(
                ModelErrorCode.TRUNCATED_OR_MALFORMED, "The provider's reply is not valid JSON."
            ) from None
        if not isinstance(completion, ChatCompletion):
            raise ContractError(ModelErrorCode.TRUNCATED_OR_MALFORMED, "The provider's reply is not a chat completion.")
        return completion

    @contextmanager
    def _reading_reply(self, kind: str, completion: ChatCompletion) -> Iterator[None]:
        """Read a reply; a refused reply keeps the model's name and the usage the provider reported."""
        try:
            with _reading_reply(kind):
                yield
        except SupportError as error:
            model = completion.model if isinstance(completion.model, str) else self.settings.model
            try:
                usage = _usage(completion)
            except (AttributeError, TypeError, ValueError):  # a usage object of the wrong shape
                usage = None
            named = error.naming_model(model, self.settings.provider, usage.model_dump() if usage else None)
            raise named from error.__cause__

    def _json(self, completion: ChatCompletion, kind: str) -> dict[str, Any]:
        choice = _first_choice(completion, kind)
        return model_validation.parse_json_object(choice.message.content, choice.finish_reason, kind=kind)

    def _meta(self, completion: ChatCompletion, attempt: int) -> ModelCallMeta:
        model = completion.model or self.settings.model
        return ModelCallMeta(
            provider=self.settings.provider,
            model=model,
            attempt=attempt,
            usage=_usage(completion),
            price=self.prices.price(self.settings.provider, model),
        )

    def _redact(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "[redacted]")
        return " ".join(text.split())[:300]


CREATE_BODY_ORDER = (
    "max_completion_tokens",
    "max_tokens",
    "response_format",
    "seed",
    "temperature",
    "tool_choice",
    "tools",
)
"""Where ``chat.completions.create`` puts the request options we send, after ``model`` and ``messages``."""


def chat_completion_body(
    model: str, messages: list[ChatCompletionMessageParam], options: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The JSON body that ``chat.completions.create(model=, messages=, **options)`` sends, and its extra body.

    :meth:`ModelGateway._complete` posts it with the SDK's own ``post`` instead of calling ``create``,
    which walks every message and tool schema against the SDK's TypedDict unions before sending (a
    transform that leaves plain JSON like ours as it is, and was the largest CPU cost of a model call:
    about 2 ms each). Same keys in the same order, same headers, same reply parsing; the extra body is
    merged last, as ``create`` merges it (tests/activities/test_request_shapes.py compares the two).
    """
    extra_body = options.get("extra_body")
    known = [key for key in CREATE_BODY_ORDER if key in options]
    ordered = known + [key for key in options if key not in known and key != "extra_body"]
    return {"model": model, "messages": messages, **{key: options[key] for key in ordered}}, extra_body


def fit_transcript(transcript: list[TranscriptEntry], budget: int) -> list[ChatCompletionMessageParam]:
    """Transcript entries as messages; the oldest complete assistant/tool groups go first when over budget.

    Every assistant tool call is answered by exactly one tool message (a missing result is reported as
    ``not_executed``); a tool entry that answers no call of its assistant message is dropped, because
    the API refuses orphan tool messages.
    """
    groups = [_group_messages(group) for group in _groups(transcript)]
    while len(groups) > 1 and sum(_size(g) for g in groups) > budget:
        groups.pop(0)
    return [message for group in groups for message in group]


def _groups(transcript: list[TranscriptEntry]) -> list[tuple[TranscriptEntry, list[TranscriptEntry]]]:
    groups: list[tuple[TranscriptEntry, list[TranscriptEntry]]] = []
    for entry in transcript:
        if entry.role == "assistant":
            groups.append((entry, []))
        elif groups:
            groups[-1][1].append(entry)
    return groups


def _group_messages(group: tuple[TranscriptEntry, list[TranscriptEntry]]) -> list[ChatCompletionMessageParam]:
    assistant, results = group
    if not assistant.calls:
        return [{"role": "assistant", "content": assistant.content or ""}]
    by_id: dict[str | None, list[str]] = {}
    for entry in results:
        by_id.setdefault(entry.call_id, []).append(entry.content)
    messages: list[ChatCompletionMessageParam] = [
        {
            "role": "assistant",
            "content": assistant.content or "",  # never null: llama-cpp-python answers that with HTTP 500
            "tool_calls": [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _replayed_arguments(call)},
                }
                for call in assistant.calls
            ],
        }
    ]
    for call in assistant.calls:
        # results come in call order; two calls that share an id each get their own result
        pending = by_id.get(call.call_id)
        content = pending.pop(0) if pending else _NOT_EXECUTED
        if len(content) > MAX_TOOL_RESULT_CHARS:
            content = content[:MAX_TOOL_RESULT_CHARS] + " …[truncated]"
        messages.append({"role": "tool", "tool_call_id": call.call_id, "content": content})
    return messages


def _replayed_arguments(call: ProposedToolCall) -> str:
    """A call's arguments as later turns carry them: the parsed object re-serialised, or ``{}`` for
    arguments that were not a JSON object. The model's raw text is never sent back: llama-server answers
    unparsable arguments with HTTP 500, and the call's tool message already says it was refused
    (``malformed_arguments``)."""
    if call.arguments is None:
        return "{}"
    return json.dumps(call.arguments, ensure_ascii=False)


def _opening(kind: RequestKind, payload: dict[str, Any]) -> list[ChatCompletionMessageParam]:
    return [
        {"role": "system", "content": prompts.system_prompt(kind)},
        {"role": "user", "content": prompts.render(payload)},
    ]


def _fit_evidence(build: Callable[[list[Passage]], dict[str, Any]], evidence: list[Passage]) -> list[Passage]:
    """The longest prefix of ``evidence`` (it is ranked) whose context fits the budget."""
    budget = MAX_CONTEXT_CHARS - 4_000  # room for the system prompt
    kept: list[Passage] = []
    for passage in evidence:
        if len(prompts.render(build([*kept, passage]))) > budget:
            break
        kept.append(passage)
    return kept


@contextmanager
def _reading_reply(kind: str) -> Iterator[None]:
    """Read a reply; a reply of the wrong shape is a contract error, never a crash that Temporal retries.

    The SDK builds its objects from the provider's JSON without validating them, so a ``message`` that
    is null or a ``tool_calls`` that is a string surfaces as an AttributeError or TypeError here.
    """
    try:
        yield
    except SupportError:
        raise
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
        raise ContractError(
            ModelErrorCode.TRUNCATED_OR_MALFORMED, f"The {kind} reply has an unexpected shape ({type(exc).__name__})."
        ) from None


def _first_choice(completion: ChatCompletion, kind: str) -> Choice:
    if not completion.choices:
        raise ContractError(ModelErrorCode.TRUNCATED_OR_MALFORMED, f"The {kind} reply has no choices.")
    return completion.choices[0]


def _usage(completion: ChatCompletion) -> ModelUsage | None:
    """Token counts when the provider reported all three; None (recorded as "unknown") otherwise."""
    usage = completion.usage
    if usage is None:
        return None
    counts = (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
    if not all(isinstance(count, int) for count in counts):
        return None
    return ModelUsage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
    )


def _size(messages: list[ChatCompletionMessageParam]) -> int:
    return len(json.dumps(messages, ensure_ascii=False, default=str))

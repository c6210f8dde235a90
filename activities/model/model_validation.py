"""Field-by-field validation of model output into the shared contracts (SPEC §6).

A model proposes; nothing it writes is trusted. JSON replies must be exactly one JSON object with
exactly the contract's fields, of the right types, lengths and enum values, or a
:class:`~contracts.errors.ContractError` names the first offending field: ``truncated_or_malformed``
(cut off, empty, not JSON, not an object), ``contract_violation`` (a missing, extra, duplicated,
mistyped, over-long or out-of-enum field; a blank list item is dropped instead),
``order_id_not_in_question`` (an order id the customer never wrote), ``duplicate_citations`` /
``citation_not_in_context`` (a passage the model was not shown), and the draft checks of
:mod:`activities.model.draft_checks` on a compose answer. The bounds are those of the contract models, which
are also the schemas sent (:mod:`activities.model.reply_schemas`). Tool calls are not judged here: each is
passed on with its arguments parsed (or None), and the workflow decides what a bad call means.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from enum import StrEnum
from typing import Any, TypeVar

from openai.types.chat import ChatCompletionMessageToolCallUnion

from activities.model.codes import ModelErrorCode
from activities.model.draft_checks import DraftContext, check_draft
from contracts.commerce import ORDER_ID_FORMAT, order_ids_in
from contracts.errors import ContractError
from contracts.model_io import (
    MAX_ANSWER_CHARS,
    MAX_CITATION_CHARS,
    MAX_CITATIONS,
    MAX_MILESTONE_CHARS,
    MAX_MILESTONES,
    MAX_PROBLEM_CHARS,
    MAX_PROBLEMS,
    MAX_QUERIES,
    MAX_QUERY_CHARS,
    MAX_RAW_ARGUMENT_CHARS,
    ComposedAnswer,
    ComposeRequest,
    Intent,
    NextAction,
    Plan,
    ProposedToolCall,
    ReviewVerdict,
    Verdict,
)

PLAN_FIELDS = ("intent", "order_id", "action_requested", "queries", "milestones")
COMPOSE_FIELDS = ("answer", "citations", "next_action")
REVIEW_FIELDS = ("verdict", "problems")


E = TypeVar("E", bound=StrEnum)

_ORDER_ID = re.compile(ORDER_ID_FORMAT)


def parse_json_object(content: str | None, finish_reason: str | None, *, kind: str) -> dict[str, Any]:
    """The reply as a JSON object, or ContractError("truncated_or_malformed")."""
    if finish_reason == "length":
        raise ContractError(
            ModelErrorCode.TRUNCATED_OR_MALFORMED, f"The {kind} reply was cut off (finish_reason=length)."
        )
    if not content or not content.strip():
        raise ContractError(ModelErrorCode.TRUNCATED_OR_MALFORMED, f"The {kind} reply is empty.")
    try:
        data = json.loads(content, object_pairs_hook=_reject_duplicate_keys)
    except _DuplicateKey as exc:
        raise ContractError(ModelErrorCode.CONTRACT_VIOLATION, f"{kind}.{exc.key}: the field appears twice.") from None
    except ValueError:
        raise ContractError(ModelErrorCode.TRUNCATED_OR_MALFORMED, f"The {kind} reply is not valid JSON.") from None
    if not isinstance(data, dict):
        raise ContractError(ModelErrorCode.TRUNCATED_OR_MALFORMED, f"The {kind} reply is JSON but not an object.")
    return data


def validate_plan(data: dict[str, Any], question: str) -> Plan:
    _exact_fields(data, "plan", PLAN_FIELDS)
    intent = _enum(data, "plan", "intent", Intent)
    order_id = data["order_id"]
    if order_id is not None:
        order_id = _text(data, "plan", "order_id", max_chars=20).upper()  # qh-1001 names QH-1001
        if not _ORDER_ID.match(order_id):
            raise ContractError(ModelErrorCode.CONTRACT_VIOLATION, "plan.order_id: expected an order id like QH-1001.")
        if order_id not in order_ids_in(question):
            raise ContractError(
                ModelErrorCode.ORDER_ID_NOT_IN_QUESTION, f"plan.order_id {order_id!r} does not occur in the question."
            )
    return Plan(
        intent=intent,
        order_id=order_id,
        action_requested=_bool(data, "plan", "action_requested"),
        queries=_text_list(data, "plan", "queries", max_items=MAX_QUERIES, max_chars=MAX_QUERY_CHARS),
        milestones=_text_list(data, "plan", "milestones", max_items=MAX_MILESTONES, max_chars=MAX_MILESTONE_CHARS),
    )


def validate_composed(
    data: dict[str, Any], evidence_ids: Collection[str], request: ComposeRequest | None = None
) -> ComposedAnswer:
    """``evidence_ids`` are the passage ids the model was actually shown. With the ``request`` the draft
    was composed for, the answer must also pass the code checks of :mod:`activities.model.draft_checks`."""
    _exact_fields(data, "compose", COMPOSE_FIELDS)
    answer = _text(data, "compose", "answer", max_chars=MAX_ANSWER_CHARS)
    citations = _text_list(data, "compose", "citations", max_items=MAX_CITATIONS, max_chars=MAX_CITATION_CHARS)
    if len(set(citations)) != len(citations):
        repeated = sorted({c for c in citations if citations.count(c) > 1})
        raise ContractError(ModelErrorCode.DUPLICATE_CITATIONS, f"compose.citations repeats {', '.join(repeated)}.")
    unknown = [c for c in citations if c not in evidence_ids]
    if unknown:
        raise ContractError(
            ModelErrorCode.CITATION_NOT_IN_CONTEXT,
            f"compose.citations names passages that were not in the evidence: {', '.join(unknown)}.",
        )
    next_action = _enum(data, "compose", "next_action", NextAction)
    if request is not None:
        shown = tuple(passage for passage in request.evidence if passage.passage_id in evidence_ids)
        context = DraftContext(request.language, request.plan.order_id, request.facts, request.quote, shown)
        check_draft(answer, context)
    return ComposedAnswer(answer=answer, citations=citations, next_action=next_action)


def validate_review(data: dict[str, Any]) -> ReviewVerdict:
    _exact_fields(data, "review", REVIEW_FIELDS)
    return ReviewVerdict(
        verdict=_enum(data, "review", "verdict", Verdict),
        problems=_text_list(data, "review", "problems", max_items=MAX_PROBLEMS, max_chars=MAX_PROBLEM_CHARS),
    )


def parse_tool_calls(
    tool_calls: Sequence[ChatCompletionMessageToolCallUnion] | None,
) -> list[ProposedToolCall]:
    """Every requested call, arguments parsed to a dict or None; never raises on a bad call."""
    proposed = []
    for call in tool_calls or []:
        if call.type == "function":
            name, raw = call.function.name, call.function.arguments or ""
        else:
            name, raw = call.custom.name, call.custom.input or ""
        proposed.append(
            ProposedToolCall(
                call_id=call.id,
                name=name,
                arguments=_arguments(raw) if call.type == "function" else None,
                raw_arguments=raw[:MAX_RAW_ARGUMENT_CHARS],
            )
        )
    return proposed


def _arguments(raw: str) -> dict[str, Any] | None:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _violation(kind: str, field: str, problem: str) -> ContractError:
    return ContractError(ModelErrorCode.CONTRACT_VIOLATION, f"{kind}.{field}: {problem}")


def _exact_fields(data: dict[str, Any], kind: str, expected: tuple[str, ...]) -> None:
    for field in expected:
        if field not in data:
            raise _violation(kind, field, "missing field.")
    extra = sorted(set(data) - set(expected))
    if extra:
        raise _violation(kind, extra[0], f"unexpected field (allowed: {', '.join(expected)}).")


def _text(data: dict[str, Any], kind: str, field: str, *, max_chars: int) -> str:
    value = data[field]
    if not isinstance(value, str):
        raise _violation(kind, field, f"expected a string, got {type(value).__name__}.")
    return _checked_text(value, kind, field, max_chars)


def _checked_text(value: str, kind: str, field: str, max_chars: int) -> str:
    if not value.strip():
        raise _violation(kind, field, "empty text.")
    if len(value) > max_chars:
        raise _violation(kind, field, f"{len(value)} characters; the limit is {max_chars}.")
    return value


def _text_list(data: dict[str, Any], kind: str, field: str, *, max_items: int, max_chars: int) -> list[str]:
    """The list's non-blank items: a blank item says nothing and is dropped, not refused (a server whose
    schema carries no ``minLength`` may still produce ``""``)."""
    value = data[field]
    if not isinstance(value, list):
        raise _violation(kind, field, f"expected a list of strings, got {type(value).__name__}.")
    if len(value) > max_items:
        raise _violation(kind, field, f"{len(value)} items; the limit is {max_items}.")
    kept = []
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise _violation(kind, f"{field}[{index}]", f"expected a string, got {type(item).__name__}.")
        if item.strip():
            kept.append(_checked_text(item, kind, f"{field}[{index}]", max_chars))
    return kept


def _bool(data: dict[str, Any], kind: str, field: str) -> bool:
    value = data[field]
    if not isinstance(value, bool):
        raise _violation(kind, field, f"expected true or false, got {type(value).__name__}.")
    return value


def _enum(data: dict[str, Any], kind: str, field: str, enum: type[E]) -> E:
    value = data[field]
    allowed = ", ".join(member.value for member in enum)
    if not isinstance(value, str) or value not in enum._value2member_map_:
        raise _violation(kind, field, f"expected one of {allowed}; got {value!r:.40}.")
    return enum(value)

"""The JSON schema of each JSON reply, generated from the contract models, never kept by hand.

:class:`~contracts.case.Plan`, :class:`~contracts.case.ComposedAnswer` and
:class:`~contracts.case.ReviewVerdict` state every bound once (``minLength`` on each required string, the
lengths and item counts the validator checks); :func:`reply_schema` turns a model's pydantic schema into
the portable form every grammar engine takes: ``$ref`` inlined, titles and descriptions dropped, every
field required and no other allowed. Only types, enums, ``anyOf``, string lengths, item counts and
anchored patterns with ``[0-9]`` (never ``\\d``) remain.

What a schema cannot state, the validator still refuses with its own code: an order id the question does
not name, a citation the model was not shown or repeats, and an answer of only whitespace (no portable
pattern says "not only whitespace" without llama.cpp's converter dropping the length bounds beside it).
Blank items of a list are dropped, not refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from contracts.model_io import ComposedAnswer, Plan, ReviewVerdict
from contracts.names import RequestKind

_DROPPED_KEYWORDS = frozenset({"title", "description", "default"})
STRING_LENGTH_KEYWORDS = frozenset({"minLength", "maxLength"})
"""The keywords a profile whose strict mode refuses string lengths leaves out (:func:`without_keywords`)."""


def reply_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema in the portable form; raises ValueError for a model a strict schema cannot
    describe (a field with a default, which strict mode would still require)."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})
    portable = _portable(schema, definitions)
    if portable.get("required") != list(portable["properties"]):
        raise ValueError(f"{model.__name__}: every field of a reply must be required (no defaults).")
    if portable.get("additionalProperties") is not False:
        raise ValueError(f"{model.__name__}: a reply model must forbid extra fields.")
    return portable


def without_keywords(schema: dict[str, Any], keywords: frozenset[str]) -> dict[str, Any]:
    """A copy of ``schema`` without ``keywords`` anywhere (property names are kept)."""
    result: dict[str, Any] = _rewrite(schema, keywords, {})
    return result


def with_string_span(schema: dict[str, Any], span: int) -> dict[str, Any]:
    """A copy of ``schema`` in which no string may run more than ``span`` characters past its
    ``minLength``: a longer ``maxLength`` is lowered, so the schema asks for less than the validator
    allows, never more."""
    result: dict[str, Any] = _rewrite(schema, frozenset(), {}, span)
    return result


def _portable(schema: dict[str, Any], definitions: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = _rewrite(schema, _DROPPED_KEYWORDS, definitions)
    return result


def _rewrite(node: Any, dropped: frozenset[str], definitions: Mapping[str, Any], span: int | None = None) -> Any:
    """``node`` with each ``$ref`` replaced by its definition, the ``dropped`` keywords left out and,
    given a ``span``, each string's ``maxLength`` lowered to at most ``minLength + span``."""
    if isinstance(node, list):
        return [_rewrite(item, dropped, definitions, span) for item in node]
    if not isinstance(node, Mapping):
        return node
    if "$ref" in node:
        return _rewrite(definitions[node["$ref"].rsplit("/", 1)[-1]], dropped, definitions, span)
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            result[key] = {name: _rewrite(field, dropped, definitions, span) for name, field in value.items()}
        elif key not in dropped:
            result[key] = _rewrite(value, dropped, definitions, span)
    if span is not None and result.get("type") == "string" and "maxLength" in result:
        result["maxLength"] = min(result["maxLength"], result.get("minLength", 0) + span)
    return result


REPLY_MODELS: Mapping[RequestKind, type[BaseModel]] = MappingProxyType(
    {"plan": Plan, "compose": ComposedAnswer, "review": ReviewVerdict}
)
"""The contract model of each JSON request kind (``investigate`` replies with tool calls, not JSON)."""

RESPONSE_SCHEMAS: Mapping[RequestKind, dict[str, Any]] = MappingProxyType(
    {kind: reply_schema(model) for kind, model in REPLY_MODELS.items()}
)
"""The JSON reply schema of each JSON request kind, as sent (the ``openai`` profile leaves out the string
lengths, :data:`STRING_LENGTH_KEYWORDS`)."""

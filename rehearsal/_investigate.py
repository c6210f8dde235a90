"""The rehearsal model's investigation: the next tool calls, chosen from the plan and the observations so far.

Round one reads the order (when the plan names one) and searches; round two follows up by intent
(refund quote and skill, shipment, invoice, product); then it stops with a short closing sentence.
Only tools the request offers are called, at most ``MAX_CALLS_PER_TURN`` per round.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from contracts.case import Budgets
from contracts.tools import ToolName
from rehearsal._common import case_language, find_key

MAX_CALLS_PER_TURN = Budgets().max_calls_per_turn

_CLOSING = {"en": "The evidence collected is sufficient.", "zh": "已收集到足够的信息。"}


@dataclass(frozen=True)
class Observation:
    """One earlier tool call and what came back, as read from the transcript messages."""

    name: str
    arguments: dict[str, Any]
    ok: bool
    result: Any


def read_observation(content: str) -> tuple[bool, Any]:
    """Interpret a tool message: a ToolObservation JSON (``ok``/``result``), a bare result or an error."""
    if not content.strip():
        return False, None
    try:
        data = json.loads(content)
    except ValueError:
        return not content.lower().startswith("error"), None
    if isinstance(data, dict):
        if "ok" in data:
            return data.get("ok") is True, data.get("result")
        if "error" in data or "error_code" in data:
            return False, None
    return True, data


def investigate(
    context: dict[str, Any], rounds: list[list[Observation]], offered: set[str]
) -> tuple[list[tuple[str, dict[str, str]]], str | None]:
    """The next calls (name, arguments) and, when stopping, a short closing sentence."""
    calls = [call for call in _next_calls(context, rounds) if call[0] in offered][:MAX_CALLS_PER_TURN]
    if calls:
        return calls, None
    return [], _CLOSING[case_language(context)]


def _next_calls(context: dict[str, Any], rounds: list[list[Observation]]) -> list[tuple[str, dict[str, str]]]:
    plan_ = context["plan"]
    intent, order_id = plan_["intent"], plan_["order_id"]
    queries: list[str] = plan_.get("queries") or []
    history = [obs for round_ in rounds for obs in round_]
    if intent == "greeting":
        return []
    searches: list[tuple[str, dict[str, str]]] = [
        (ToolName.SEARCH_KNOWLEDGE, {"query": query}) for query in queries or [context["question"]]
    ]
    if order_id is None:
        return [] if rounds else searches
    if not rounds:
        return [(ToolName.GET_ORDER, {"order_id": order_id}), *searches[:1]]
    if len(rounds) == 1 and _order_read(history):
        return _follow_ups(intent, order_id, queries, history)
    return []


def _order_read(history: list[Observation]) -> bool:
    orders = [obs for obs in history if obs.name == ToolName.GET_ORDER]
    return bool(orders) and all(obs.ok for obs in orders)


def _follow_ups(
    intent: str, order_id: str, queries: list[str], history: list[Observation]
) -> list[tuple[str, dict[str, str]]]:
    second_query: list[tuple[str, dict[str, str]]] = (
        [(ToolName.SEARCH_KNOWLEDGE, {"query": queries[1]})] if len(queries) > 1 else []
    )
    if intent == "refund":
        return [(ToolName.CALCULATE_REFUND, {"order_id": order_id}), (ToolName.LOAD_SKILL, {"name": "refund"})]
    if intent == "delivery":
        return [(ToolName.GET_SHIPMENT, {"order_id": order_id}), *second_query]
    if intent in ("cancellation", "address_change", "return", "exchange"):
        return second_query
    if intent == "invoice":
        return [
            (ToolName.GET_INVOICE, {"order_id": order_id}),
            (ToolName.CALCULATE_REFUND, {"order_id": order_id}),
            *second_query,
        ]
    if intent == "warranty":
        sku = next((find_key(obs.result, "sku") for obs in history if obs.name == ToolName.GET_ORDER), None)
        product = [(ToolName.GET_PRODUCT, {"sku": sku})] if isinstance(sku, str) else []
        return [*product, *second_query]
    return []

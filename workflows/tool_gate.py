"""The investigation gate: what the model may request, checked in the workflow before scheduling.

Every check here is pure and deterministic. A refused call becomes an observation the model can
read; nothing is scheduled for it.
"""

from __future__ import annotations

import re
from enum import StrEnum

from contracts.commerce import ORDER_ID_FORMAT, canonical_json
from contracts.model_io import ProposedToolCall
from contracts.tools import INVESTIGATION_TOOLS, MAX_ARGUMENT_CHARS, WRITE_TOOLS


class ToolRefusal(StrEnum):
    """Why the workflow refused a tool call the model proposed: the ``error_code`` of the observation the
    model reads next (recorded in histories, so the values never change)."""

    DUPLICATE_CALL_ID = "duplicate_call_id"
    WRITE_TOOL_NOT_ALLOWED = "write_tool_not_allowed"
    UNKNOWN_TOOL = "unknown_tool"
    MALFORMED_ARGUMENTS = "malformed_arguments"
    UNEXPECTED_FIELDS = "unexpected_fields"
    MISSING_FIELDS = "missing_fields"
    INVALID_ARGUMENT_TYPE = "invalid_argument_type"
    ARGUMENT_TOO_LONG = "argument_too_long"
    INVALID_ARGUMENT = "invalid_argument"
    ORDER_NOT_BOUND_TO_CASE = "order_not_bound_to_case"
    REPEATED_CALL = "repeated_call"
    TOO_MANY_CALLS_IN_TURN = "too_many_calls_in_turn"
    """The turn proposed more calls than one turn may make (:mod:`workflows.turn_admission`)."""
    CASE_WRITE_CAP_REACHED = "case_write_cap_reached"
    """A declared case write (``save_case_note``) past its cap for the case."""
    TOOL_UNAVAILABLE = "tool_unavailable"
    """The call was admitted but its activity failed (:mod:`workflows.tool_calls`)."""


def call_fingerprint(call: ProposedToolCall) -> str:
    """Tool name plus canonical arguments: the same action requested twice has one fingerprint."""
    return f"{call.name}:{canonical_json(call.arguments or {})}"


def requested_order_id(call: ProposedToolCall) -> str | None:
    """The order id a call asks for, when it is one in the order-id format (model text otherwise: not kept)."""
    value = (call.arguments or {}).get("order_id")
    return value if isinstance(value, str) and re.fullmatch(ORDER_ID_FORMAT, value) else None


def refuse_call(
    call: ProposedToolCall,
    *,
    bound_order_id: str | None,
    seen_call_ids: set[str],
    seen_fingerprints: set[str],
    case_writes: int = 0,
) -> ToolRefusal | None:
    """Return the refusal code for a proposed call, or None when it may run. ``case_writes``: the declared
    case writes the case holds, this turn's admitted ones included."""
    if not call.call_id or call.call_id in seen_call_ids:
        return ToolRefusal.DUPLICATE_CALL_ID
    if call.name in WRITE_TOOLS:
        return ToolRefusal.WRITE_TOOL_NOT_ALLOWED
    spec = INVESTIGATION_TOOLS.get(call.name)
    if spec is None:
        return ToolRefusal.UNKNOWN_TOOL
    if spec.case_write_cap is not None and case_writes >= spec.case_write_cap:
        return ToolRefusal.CASE_WRITE_CAP_REACHED
    if call.arguments is None:
        return ToolRefusal.MALFORMED_ARGUMENTS
    fields = set(call.arguments)
    if fields - set(spec.params):
        return ToolRefusal.UNEXPECTED_FIELDS
    if set(spec.params) - fields:
        return ToolRefusal.MISSING_FIELDS
    for name, value in call.arguments.items():
        param = spec.params[name]
        if not isinstance(value, str):
            return ToolRefusal.INVALID_ARGUMENT_TYPE
        if len(value) > min(param.max_length, MAX_ARGUMENT_CHARS):
            return ToolRefusal.ARGUMENT_TOO_LONG
        if param.pattern and not re.fullmatch(param.pattern, value):
            return ToolRefusal.INVALID_ARGUMENT
    if "order_id" in call.arguments and call.arguments["order_id"] != bound_order_id:
        return ToolRefusal.ORDER_NOT_BOUND_TO_CASE
    if call_fingerprint(call) in seen_fingerprints:
        return ToolRefusal.REPEATED_CALL
    return None

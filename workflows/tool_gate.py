"""The investigation gate: what the model may request, checked in the workflow before scheduling.

Every check here is pure and deterministic. A refused call becomes an observation the model can
read; nothing is scheduled for it.
"""

from __future__ import annotations

import re

from contracts.case import ProposedToolCall
from contracts.commerce import ORDER_ID_FORMAT, canonical_json
from contracts.tools import INVESTIGATION_TOOLS, MAX_ARGUMENT_CHARS, WRITE_TOOLS


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
) -> str | None:
    """Return the refusal code for a proposed call, or None when it may run."""
    if not call.call_id or call.call_id in seen_call_ids:
        return "duplicate_call_id"
    if call.name in WRITE_TOOLS:
        return "write_tool_not_allowed"
    spec = INVESTIGATION_TOOLS.get(call.name)
    if spec is None:
        return "unknown_tool"
    if call.arguments is None:
        return "malformed_arguments"
    fields = set(call.arguments)
    if fields - set(spec.params):
        return "unexpected_fields"
    if set(spec.params) - fields:
        return "missing_fields"
    for name, value in call.arguments.items():
        param = spec.params[name]
        if not isinstance(value, str):
            return "invalid_argument_type"
        if len(value) > min(param.max_length, MAX_ARGUMENT_CHARS):
            return "argument_too_long"
        if param.pattern and not re.fullmatch(param.pattern, value):
            return "invalid_argument"
    if "order_id" in call.arguments and call.arguments["order_id"] != bound_order_id:
        return "order_not_bound_to_case"
    if call_fingerprint(call) in seen_fingerprints:
        return "repeated_call"
    return None

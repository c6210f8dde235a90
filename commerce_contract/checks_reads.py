"""The checks that pay nothing: the tool list and its schemas, error classes, identity scoping.

The expected tools are the catalogue's commerce tools (:data:`contracts.tools.COMMERCE_TOOLS`): their
names, whether each is a read, and the arguments of each read (:attr:`contracts.tools.ToolSpec.params`).
The writes' arguments are the contract models they take (:data:`WRITE_ARGUMENTS`).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from mcp_types import CallToolResult, Tool
from pydantic import BaseModel

from activities.commerce.commerce_client import tool_error_from_result
from commerce_contract.context import CheckFailed, Run, text_of
from commerce_contract.fixture import Fixture
from contracts.actions import ActionClosure, ActionExecution, ActionRequest
from contracts.commerce import OrderList, ProposalClosure, RefundApproval
from contracts.errors import ErrorClass, SupportError, error_from_code
from contracts.tools import COMMERCE_TOOLS, ToolName

STRING = "string"
WRITE_ARGUMENTS: dict[str, dict[str, str | type[BaseModel]]] = {
    ToolName.CREATE_TICKET: {"order_id": STRING, "text": STRING, "idempotency_key": STRING},
    ToolName.EXECUTE_REFUND: {"approval": RefundApproval},
    ToolName.CLOSE_REFUND_PROPOSAL: {"closure": ProposalClosure},
    ToolName.PREVIEW_ACTION: {"request": ActionRequest},
    ToolName.EXECUTE_ACTION: {"execution": ActionExecution},
    ToolName.CLOSE_ACTION_PROPOSAL: {"closure": ActionClosure},
}
"""Each write's arguments: a string, or the contract model the argument is."""

SCOPED_READS = (ToolName.GET_ORDER, ToolName.GET_SHIPMENT, ToolName.GET_INVOICE)
"""The reads of one order: a foreign order's answer must be byte-identical to a missing one's."""


def expected_arguments(tool: str) -> dict[str, str | type[BaseModel]]:
    spec = COMMERCE_TOOLS[tool]
    return WRITE_ARGUMENTS[tool] if not spec.read_only else dict.fromkeys(spec.params, STRING)


def _resolved(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with a local ``$ref`` (``#/$defs/Name``) followed."""
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved = schema.get("$defs", {}).get(ref.removeprefix("#/$defs/"))
        return resolved if isinstance(resolved, dict) else {}
    return node


def schema_problem(tool: Tool) -> str | None:
    """What is wrong with one tool's published schemas and hints, or None."""
    spec = COMMERCE_TOOLS[tool.name]
    expected = expected_arguments(tool.name)
    schema = tool.input_schema
    properties: dict[str, Any] = schema.get("properties", {})
    if set(properties) != set(expected):
        return f"{tool.name} takes {sorted(properties)}, the contract says {sorted(expected)}"
    if set(schema.get("required", [])) != set(expected):
        return f"{tool.name} requires {sorted(schema.get('required', []))}, the contract says {sorted(expected)}"
    for name, kind in expected.items():
        published = _resolved(schema, properties[name])
        if kind == STRING:
            if published.get("type") != STRING:
                return f"{tool.name}.{name} is not a string"
            continue
        assert isinstance(kind, type)
        model = kind.model_json_schema()
        if set(published.get("properties", {})) != set(model["properties"]):
            return f"{tool.name}.{name} has fields {sorted(published.get('properties', {}))}, not {kind.__name__}'s"
        if set(published.get("required", [])) != set(model.get("required", [])):
            return f"{tool.name}.{name} requires {sorted(published.get('required', []))}, not {kind.__name__}'s"
    if tool.output_schema is None:
        return f"{tool.name} publishes no output schema"
    hint = tool.annotations.read_only_hint if tool.annotations is not None else None
    if hint is not spec.read_only:
        return f"{tool.name} has read_only_hint {hint}, the contract says {spec.read_only}"
    return None


async def tool_list(run: Run) -> str:
    tools = await run.target.list_tools()
    names = {tool.name for tool in tools}
    if names != set(COMMERCE_TOOLS):
        missing, extra = sorted(set(COMMERCE_TOOLS) - names), sorted(names - set(COMMERCE_TOOLS))
        raise CheckFailed(f"tool list differs: missing {missing}, not in the contract {extra}")
    for tool in tools:
        problem = schema_problem(tool)
        if problem is not None:
            raise CheckFailed(problem)
    return f"{len(tools)} tools, input schemas, output schemas and read-only hints as the contract says"


BadInput = tuple[str, str, dict[str, Any], ErrorClass, str | None]
"""(what, tool, arguments, class, code): ``code`` None where the SDK itself refuses the call (plain text)."""


def bad_inputs(fixture: Fixture) -> list[BadInput]:
    """Calls every conforming server refuses, and the class (and code) of each refusal."""
    ticket = {"order_id": fixture.refundable_orders[0], "text": "conformance", "idempotency_key": "has spaces"}
    return [
        (
            "malformed order id",
            ToolName.GET_ORDER,
            {"order_id": "not-an-order"},
            ErrorClass.CONTRACT,
            "invalid_argument",
        ),
        ("order id of the wrong type", ToolName.GET_ORDER, {"order_id": 5}, ErrorClass.CONTRACT, None),
        ("unknown tool", "drop_tables", {}, ErrorClass.CONTRACT, None),
        ("approval missing its fields", ToolName.EXECUTE_REFUND, {"approval": {}}, ErrorClass.CONTRACT, None),
        ("bad idempotency key", ToolName.CREATE_TICKET, ticket, ErrorClass.CONTRACT, "invalid_argument"),
        (
            "unknown product",
            ToolName.GET_PRODUCT,
            {"sku": fixture.unknown_sku},
            ErrorClass.BUSINESS,
            "product_not_found",
        ),
    ]


async def error_classes(run: Run) -> str:
    cases = bad_inputs(run.fixture)
    for what, tool, arguments, error_class, code in cases:
        result = await run.result(tool, arguments)
        if not result.is_error:
            raise CheckFailed(f"{what}: {tool} answered instead of refusing")
        error = run_error(result, coded=code is not None, what=what)
        if error.error_class is not error_class or (code is not None and error.code != code):
            raise CheckFailed(
                f"{what}: refused {error.code} ({error.error_class}), the contract says {code or error_class}"
            )
    return f"{len(cases)} bad inputs refused as tool errors of the right class (contract, business)"


def run_error(result: CallToolResult, *, coded: bool, what: str) -> SupportError:
    """The typed error of a refusal; a coded refusal must be JSON ``{"code", "message"}`` (one the SDK
    made itself is plain text: ``tool_call_rejected``, a contract error)."""
    text = text_of(result)
    if coded:
        try:
            payload = json.loads(text)
            code, message = payload["code"], payload["message"]
        except (ValueError, TypeError, KeyError):
            raise CheckFailed(f"{what}: the refusal is not JSON {{code, message}}: {text[:120]}") from None
        return error_from_code(str(code), str(message))
    return tool_error_from_result(result)


async def identity_scoping(run: Run) -> str:
    foreign, missing = run.fixture.foreign_order, run.fixture.missing_order
    for tool in SCOPED_READS:
        seen_foreign = await run.result(tool, {"order_id": foreign})
        seen_missing = await run.result(tool, {"order_id": missing})
        if not seen_foreign.is_error:
            raise CheckFailed(f"{tool} answered for {foreign}, another customer's order")
        if text_of(seen_foreign) != text_of(seen_missing):
            raise CheckFailed(f"{tool}: {foreign} (foreign) and {missing} (missing) read differently")
        error = run_error(seen_foreign, coded=True, what=tool)
        if error.error_class is not ErrorClass.AUTHORIZATION:
            raise CheckFailed(
                f"{tool}: a foreign order is {error.code} ({error.error_class}), not an authorization error"
            )
    key = f"conformance-{secrets.token_hex(8)}"
    ticket = {"text": "conformance kit: must not be opened", "idempotency_key": key}
    on_foreign = await run.result(ToolName.CREATE_TICKET, {"order_id": foreign, **ticket})
    on_missing = await run.result(ToolName.CREATE_TICKET, {"order_id": missing, **ticket})
    if not on_foreign.is_error or text_of(on_foreign) != text_of(on_missing):
        raise CheckFailed(f"create_ticket on {foreign} (foreign) is not refused exactly as on {missing} (missing)")
    listed = OrderList.model_validate(await run.answer(ToolName.LIST_ORDERS, {}))
    ids = {order.order_id for order in listed.orders}
    if foreign in ids:
        raise CheckFailed(f"list_orders lists {foreign}, another customer's order")
    if not set(run.fixture.refundable_orders) <= ids:
        absent = sorted(set(run.fixture.refundable_orders) - ids)
        raise CheckFailed(
            f"list_orders lacks the fixture customer's {absent}: does the server act for {run.customer.subject}?"
        )
    tools = ", ".join([*SCOPED_READS, ToolName.CREATE_TICKET])
    return f"{foreign} reads byte-identical to missing {missing} ({tools}); list_orders is {run.customer.subject}'s own"

"""The retail tenant's commerce MCP server: τ²-bench's fifteen retail tools by their names and argument
shapes, and ``execute_retail_proposal``.

The customer and the case are bound once, when the process starts (stdio); they are never arguments.
Reads answer as τ²-bench's tools do (the record as JSON, or a string); a refusal is an MCP tool error
whose text is ``{"code": ..., "message": ...}``. A write answers with its proposal and changes nothing;
``execute_retail_proposal`` executes an agreed proposal once and answers with its signed receipt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel
from sqlalchemy import Engine

from commerce_server.keys import CommerceKeys
from commerce_server.server import tool_error, tool_result
from contracts.actions import ActionExecution
from contracts.errors import CommerceErrorCode, SupportError
from contracts.identity import Identity
from contracts.retail import RetailTool, RetailWrite
from retail_server.calculator import calculate
from retail_server.service import TRANSFERRED, RetailService

logger = logging.getLogger(__name__)

SERVER_NAME = "retail-commerce"
SERVER_VERSION = "0.1.0"
READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
PROPOSE = ToolAnnotations(read_only_hint=True, idempotent_hint=False, open_world_hint=False)
"""A write tool proposes: it stores a proposal and changes none of the domain's records."""
EXECUTE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


def _text(value: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=value)])


class _Dispatcher:
    def __init__(self, service: RetailService) -> None:
        self._service = service

    async def run(self, tool: RetailTool, operation: Callable[[RetailService], BaseModel | str]) -> CallToolResult:
        try:
            result = await anyio.to_thread.run_sync(operation, self._service)
        except SupportError as error:
            logger.info("%s refused: %s", tool.value, error.code)
            return tool_error(error.code, error.message)
        except Exception:
            logger.exception("%s failed unexpectedly", tool.value)
            return tool_error(CommerceErrorCode.INTERNAL_ERROR, "The retail server could not complete this request.")
        return _text(result) if isinstance(result, str) else tool_result(result)

    async def propose(self, kind: RetailWrite, arguments: dict[str, object]) -> CallToolResult:
        return await self.run(RetailTool(kind.value), lambda service: service.propose(kind, arguments))


def build_retail_server(
    engine: Engine, customer: Identity, *, case_id: str, keys: CommerceKeys, now: Callable[[], datetime] | None = None
) -> MCPServer:
    """The server for ``customer`` on ``case_id``; ``keys`` hold the directory (who must agree, whose
    confirmations count) and the key receipts are signed with."""
    service = RetailService(
        engine,
        customer,
        case_id=case_id,
        directory=keys.directory,
        signing_key=keys.signing_key,
        now=now or (lambda: datetime.now(UTC)),
    )
    dispatch = _Dispatcher(service)
    mcp = MCPServer(
        SERVER_NAME,
        title="Retail commerce (the τ²-bench retail domain)",
        instructions=(
            "The signed-in customer's profile, orders and the catalogue of the τ²-bench retail domain. "
            "Writes return a proposal for the customer to confirm; execute_retail_proposal executes it."
        ),
        version=SERVER_VERSION,
    )

    @mcp.tool(name=RetailTool.FIND_USER_ID_BY_EMAIL, annotations=READ)
    async def find_user_id_by_email(email: str) -> CallToolResult:
        """Find the user id by email (only the signed-in customer's is found)."""
        return await dispatch.run(RetailTool.FIND_USER_ID_BY_EMAIL, lambda s: s.find_user_id_by_email(email))

    @mcp.tool(name=RetailTool.FIND_USER_ID_BY_NAME_ZIP, annotations=READ)
    async def find_user_id_by_name_zip(first_name: str, last_name: str, zip: str) -> CallToolResult:
        """Find the user id by first name, last name and zip code (only the signed-in customer's is found)."""
        return await dispatch.run(
            RetailTool.FIND_USER_ID_BY_NAME_ZIP, lambda s: s.find_user_id_by_name_zip(first_name, last_name, zip)
        )

    @mcp.tool(name=RetailTool.GET_USER_DETAILS, annotations=READ)
    async def get_user_details(user_id: str) -> CallToolResult:
        """The customer's profile: name, default address, email, payment methods and order ids."""
        return await dispatch.run(RetailTool.GET_USER_DETAILS, lambda s: s.get_user_details(user_id))

    @mcp.tool(name=RetailTool.GET_ORDER_DETAILS, annotations=READ)
    async def get_order_details(order_id: str) -> CallToolResult:
        """The status and details of one of the customer's orders (an id such as '#W0000000')."""
        return await dispatch.run(RetailTool.GET_ORDER_DETAILS, lambda s: s.get_order_details(order_id))

    @mcp.tool(name=RetailTool.GET_PRODUCT_DETAILS, annotations=READ)
    async def get_product_details(product_id: str) -> CallToolResult:
        """A product's variants: item ids, options, availability and prices."""
        return await dispatch.run(RetailTool.GET_PRODUCT_DETAILS, lambda s: s.get_product_details(product_id))

    @mcp.tool(name=RetailTool.LIST_ALL_PRODUCT_TYPES, annotations=READ)
    async def list_all_product_types() -> CallToolResult:
        """Every product's name and product id, as a JSON object sorted by name."""
        return await dispatch.run(RetailTool.LIST_ALL_PRODUCT_TYPES, lambda s: s.list_all_product_types())

    @mcp.tool(name=RetailTool.CALCULATE, annotations=READ)
    async def calculate_tool(expression: str) -> CallToolResult:
        """Calculate an arithmetic expression (numbers, + - * /, parentheses), rounded to two decimals."""
        return await dispatch.run(RetailTool.CALCULATE, lambda _s: calculate(expression))

    @mcp.tool(name=RetailTool.TRANSFER_TO_HUMAN_AGENTS, annotations=READ)
    async def transfer_to_human_agents(summary: str) -> CallToolResult:
        """Hand the conversation to a person, with a summary of the customer's issue."""
        return await dispatch.run(RetailTool.TRANSFER_TO_HUMAN_AGENTS, lambda _s: TRANSFERRED)

    @mcp.tool(name=RetailTool.CANCEL_PENDING_ORDER, annotations=PROPOSE)
    async def cancel_pending_order(order_id: str, reason: str) -> CallToolResult:
        """Propose cancelling a pending order ('no longer needed' or 'ordered by mistake')."""
        return await dispatch.propose(RetailWrite.CANCEL_PENDING_ORDER, {"order_id": order_id, "reason": reason})

    @mcp.tool(name=RetailTool.MODIFY_PENDING_ORDER_ADDRESS, annotations=PROPOSE)
    async def modify_pending_order_address(
        order_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> CallToolResult:
        """Propose a new shipping address for a pending order."""
        arguments: dict[str, object] = {
            "order_id": order_id,
            "address1": address1,
            "address2": address2,
            "city": city,
            "state": state,
            "country": country,
            "zip": zip,
        }
        return await dispatch.propose(RetailWrite.MODIFY_PENDING_ORDER_ADDRESS, arguments)

    @mcp.tool(name=RetailTool.MODIFY_PENDING_ORDER_ITEMS, annotations=PROPOSE)
    async def modify_pending_order_items(
        order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> CallToolResult:
        """Propose changing items of a pending order to other variants of the same products (once)."""
        arguments: dict[str, object] = {
            "order_id": order_id,
            "item_ids": item_ids,
            "new_item_ids": new_item_ids,
            "payment_method_id": payment_method_id,
        }
        return await dispatch.propose(RetailWrite.MODIFY_PENDING_ORDER_ITEMS, arguments)

    @mcp.tool(name=RetailTool.MODIFY_PENDING_ORDER_PAYMENT, annotations=PROPOSE)
    async def modify_pending_order_payment(order_id: str, payment_method_id: str) -> CallToolResult:
        """Propose paying a pending order with another of the customer's payment methods."""
        arguments: dict[str, object] = {"order_id": order_id, "payment_method_id": payment_method_id}
        return await dispatch.propose(RetailWrite.MODIFY_PENDING_ORDER_PAYMENT, arguments)

    @mcp.tool(name=RetailTool.MODIFY_USER_ADDRESS, annotations=PROPOSE)
    async def modify_user_address(
        user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> CallToolResult:
        """Propose a new default address for the customer."""
        arguments: dict[str, object] = {
            "user_id": user_id,
            "address1": address1,
            "address2": address2,
            "city": city,
            "state": state,
            "country": country,
            "zip": zip,
        }
        return await dispatch.propose(RetailWrite.MODIFY_USER_ADDRESS, arguments)

    @mcp.tool(name=RetailTool.RETURN_DELIVERED_ORDER_ITEMS, annotations=PROPOSE)
    async def return_delivered_order_items(
        order_id: str, item_ids: list[str], payment_method_id: str
    ) -> CallToolResult:
        """Propose returning items of a delivered order, refunded to the original method or a gift card."""
        arguments: dict[str, object] = {
            "order_id": order_id,
            "item_ids": item_ids,
            "payment_method_id": payment_method_id,
        }
        return await dispatch.propose(RetailWrite.RETURN_DELIVERED_ORDER_ITEMS, arguments)

    @mcp.tool(name=RetailTool.EXCHANGE_DELIVERED_ORDER_ITEMS, annotations=PROPOSE)
    async def exchange_delivered_order_items(
        order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> CallToolResult:
        """Propose exchanging items of a delivered order for other variants of the same products (once)."""
        arguments: dict[str, object] = {
            "order_id": order_id,
            "item_ids": item_ids,
            "new_item_ids": new_item_ids,
            "payment_method_id": payment_method_id,
        }
        return await dispatch.propose(RetailWrite.EXCHANGE_DELIVERED_ORDER_ITEMS, arguments)

    @mcp.tool(name=RetailTool.EXECUTE_RETAIL_PROPOSAL, annotations=EXECUTE)
    async def execute_retail_proposal(execution: ActionExecution) -> CallToolResult:
        """Execute an agreed proposal once, with the customer's confirmation (and any approvals) over its digest."""
        return await dispatch.run(RetailTool.EXECUTE_RETAIL_PROPOSAL, lambda s: s.execute(execution))

    return mcp

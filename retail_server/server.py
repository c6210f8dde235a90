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
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel
from sqlalchemy import Engine

from commerce_server.auth import CommerceTokenVerifier, case_of_access_token, identity_from_access_token
from commerce_server.keys import CommerceKeys
from commerce_server.server import tool_error, tool_result
from contracts.actions import ActionExecution
from contracts.errors import AuthorizationError, CommerceErrorCode, SupportError, error_from_code
from contracts.identity import Identity
from contracts.retail import RetailTool, RetailWrite
from contracts.tools import Scope
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


Binding = Callable[[Scope], tuple[Identity, str]]
"""Given the scope a tool needs, the customer and the case the current call acts for (or a typed refusal)."""
SCOPE_OF_READS = Scope.ORDERS_READ
SCOPE_OF_WRITES = Scope.ACTIONS_WRITE
"""Proposing and executing need the token's ``actions:write``, as our own server's actions do."""


def bound(customer: Identity, case_id: str) -> Binding:
    """stdio: one customer and one case for the life of the process."""
    return lambda _scope: (customer, case_id)


def token_binding(keys: CommerceKeys) -> Binding:
    """HTTP: the customer and the case of the current request's verified bearer token, if it grants the
    scope, as this server's directory lists that customer now."""

    def resolve(scope: Scope) -> tuple[Identity, str]:
        access_token = get_access_token()
        if access_token is None:
            raise AuthorizationError(CommerceErrorCode.TOKEN_REJECTED, "This request carries no verified token.")
        if scope.value not in access_token.scopes:
            raise error_from_code(CommerceErrorCode.SCOPE_MISSING, f"The token does not grant the {scope} scope.")
        case_id = case_of_access_token(access_token)
        if not case_id:
            raise AuthorizationError(CommerceErrorCode.TOKEN_REJECTED, "The token names no case.")
        return identity_from_access_token(access_token, keys.directory()), case_id

    return resolve


class _Dispatcher:
    """Runs one tool call: the customer and case it acts for, then the blocking service call on a thread."""

    def __init__(self, service_for: Callable[[Identity, str], RetailService], binding: Binding) -> None:
        self._service_for = service_for
        self._binding = binding

    async def run(
        self, tool: RetailTool, operation: Callable[[RetailService], BaseModel | str], *, scope: Scope = SCOPE_OF_READS
    ) -> CallToolResult:
        try:
            service = self._service_for(*self._binding(scope))
            result = await anyio.to_thread.run_sync(operation, service)
        except SupportError as error:
            logger.info("%s refused: %s", tool.value, error.code)
            return tool_error(error.code, error.message)
        except Exception:
            logger.exception("%s failed unexpectedly", tool.value)
            return tool_error(CommerceErrorCode.INTERNAL_ERROR, "The retail server could not complete this request.")
        return _text(result) if isinstance(result, str) else tool_result(result)

    async def propose(self, kind: RetailWrite, arguments: dict[str, object]) -> CallToolResult:
        operation: Callable[[RetailService], BaseModel] = lambda service: service.propose(kind, arguments)  # noqa: E731
        return await self.run(RetailTool(kind.value), operation, scope=SCOPE_OF_WRITES)


ITEM_SWAPS = {
    RetailWrite.MODIFY_PENDING_ORDER_ITEMS: "Propose changing items of a pending order to other variants of the "
    "same products (once).",
    RetailWrite.EXCHANGE_DELIVERED_ORDER_ITEMS: "Propose exchanging items of a delivered order for variants of the "
    "same products (once).",
}
"""The two writes that swap an order's lines for other variants, by the same arguments."""


def _named(**arguments: object) -> dict[str, object]:
    return arguments


def _item_swap_tool(mcp: MCPServer, dispatch: _Dispatcher, kind: RetailWrite, description: str) -> None:
    async def swap_items(
        order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> CallToolResult:
        arguments = _named(
            order_id=order_id, item_ids=item_ids, new_item_ids=new_item_ids, payment_method_id=payment_method_id
        )
        return await dispatch.propose(kind, arguments)

    mcp.tool(name=kind.value, description=description, annotations=PROPOSE)(swap_items)


def build_retail_server(
    engine: Engine,
    binding: Binding,
    *,
    keys: CommerceKeys,
    now: Callable[[], datetime] | None = None,
    token_verifier: CommerceTokenVerifier | None = None,
    auth: AuthSettings | None = None,
) -> MCPServer:
    """The server; ``binding`` says whom and which case each call acts for (:func:`bound` over stdio,
    :func:`token_binding` over HTTP), ``keys`` hold the directory (who must agree, whose confirmations
    count) and the key receipts are signed with."""

    def service_for(customer: Identity, case_id: str) -> RetailService:
        return RetailService(
            engine,
            customer,
            case_id=case_id,
            directory=keys.directory,
            signing_key=keys.signing_key,
            now=now or (lambda: datetime.now(UTC)),
        )

    dispatch = _Dispatcher(service_for, binding)
    mcp = MCPServer(
        SERVER_NAME,
        title="Retail commerce (the τ²-bench retail domain)",
        instructions=(
            "The signed-in customer's profile, orders and the catalogue of the τ²-bench retail domain. "
            "Writes return a proposal for the customer to confirm; execute_retail_proposal executes it."
        ),
        version=SERVER_VERSION,
        token_verifier=token_verifier,
        auth=auth,
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
        address = _named(address1=address1, address2=address2, city=city, state=state, country=country, zip=zip)
        return await dispatch.propose(RetailWrite.MODIFY_PENDING_ORDER_ADDRESS, {"order_id": order_id, **address})

    @mcp.tool(name=RetailTool.MODIFY_USER_ADDRESS, annotations=PROPOSE)
    async def modify_user_address(
        user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> CallToolResult:
        """Propose a new default address for the customer."""
        address = _named(address1=address1, address2=address2, city=city, state=state, country=country, zip=zip)
        return await dispatch.propose(RetailWrite.MODIFY_USER_ADDRESS, {"user_id": user_id, **address})

    @mcp.tool(name=RetailTool.MODIFY_PENDING_ORDER_PAYMENT, annotations=PROPOSE)
    async def modify_pending_order_payment(order_id: str, payment_method_id: str) -> CallToolResult:
        """Propose paying a pending order with another of the customer's payment methods."""
        arguments = _named(order_id=order_id, payment_method_id=payment_method_id)
        return await dispatch.propose(RetailWrite.MODIFY_PENDING_ORDER_PAYMENT, arguments)

    @mcp.tool(name=RetailTool.RETURN_DELIVERED_ORDER_ITEMS, annotations=PROPOSE)
    async def return_delivered_order_items(
        order_id: str, item_ids: list[str], payment_method_id: str
    ) -> CallToolResult:
        """Propose returning items of a delivered order, refunded to the original method or a gift card."""
        arguments = _named(order_id=order_id, item_ids=item_ids, payment_method_id=payment_method_id)
        return await dispatch.propose(RetailWrite.RETURN_DELIVERED_ORDER_ITEMS, arguments)

    for kind, description in ITEM_SWAPS.items():
        _item_swap_tool(mcp, dispatch, kind, description)

    @mcp.tool(name=RetailTool.EXECUTE_RETAIL_PROPOSAL, annotations=EXECUTE)
    async def execute_retail_proposal(execution: ActionExecution) -> CallToolResult:
        """Execute an agreed proposal once, with the customer's confirmation (and any approvals) over its digest."""
        return await dispatch.run(
            RetailTool.EXECUTE_RETAIL_PROPOSAL, lambda s: s.execute(execution), scope=SCOPE_OF_WRITES
        )

    return mcp


def build_retail_http_server(engine: Engine, *, secret: str, public_url: str, keys: CommerceKeys) -> MCPServer:
    """The server acting for whoever each request's verified token names, on the token's case; a missing,
    tampered, expired or wrong-audience token gets HTTP 401 before any tool runs."""
    auth = AuthSettings.model_validate({"issuer_url": public_url, "resource_server_url": None})
    verifier = CommerceTokenVerifier(secret, keys.directory)
    return build_retail_server(engine, token_binding(keys), keys=keys, token_verifier=verifier, auth=auth)

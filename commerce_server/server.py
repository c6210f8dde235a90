"""The commerce MCP server: eleven tools and one read-only resource over a CommerceService.

Identity never comes from a tool argument. Over stdio it is bound once, from ``--profile``, when
the process starts; over Streamable HTTP it comes from the verified bearer token of the current
request, whose scopes must also cover the tool. Business refusals are returned as MCP tool errors
(``isError``) whose text is ``{"code": ..., "message": ...}``, never as protocol errors.

Every tool returns a ``CallToolResult`` (the answer, or the refusal) and is annotated as one:
``Annotated[CallToolResult, Model]`` tells the SDK which model's schema to publish as the tool's
output schema and to check successful results against.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio
import pydantic_core
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field
from sqlalchemy import Engine

from commerce_server.auth import CommerceTokenVerifier, case_of_access_token, identity_from_access_token
from commerce_server.db import read_ledger_id
from commerce_server.keys import CommerceKeys
from commerce_server.service import MAX_TICKET_TEXT, CommerceService
from commerce_server.tokens import TOOL_SCOPES
from contracts.actions import ActionClosure, ActionExecution, ActionProposal, ActionReceipt, ActionRequest
from contracts.commerce import (
    FIXTURE_AS_OF,
    SCOPE_RESOURCE_URI,
    Invoice,
    Order,
    OrderList,
    Product,
    ProposalClosed,
    ProposalClosure,
    RefundApproval,
    RefundReceipt,
    Shipment,
    Ticket,
)
from contracts.errors import AuthorizationError, CommerceErrorCode, SupportError, error_from_code
from contracts.identity import Identity
from contracts.logs import log_fields
from contracts.tools import COMMERCE_TOOLS, ToolName
from knowledge.store import KnowledgeBase

logger = logging.getLogger(__name__)

SERVER_NAME = "qinghe-commerce"
SERVER_VERSION = "0.12.0"
"""The commerce contract's version (0.3: approvals checked against the directory, co-approvals)."""


SCOPE_DOCUMENT: dict[str, Any] = {
    "service": SERVER_NAME,
    "fictional": True,
    "notice": "Every merchant, customer, order, invoice and receipt here is fictional; no payment is real.",
    "merchants": ["qinghe", "south"],
    "as_of": FIXTURE_AS_OF.isoformat(),
    "currency": "CNY, integer cents",
    "tools": {
        "read": [name for name, spec in COMMERCE_TOOLS.items() if spec.read_only],
        "write": [name for name, spec in COMMERCE_TOOLS.items() if not spec.read_only],
    },
    "scopes": TOOL_SCOPES,
    "identity": (
        "The customer is bound by the process (stdio: --profile at start) or by the verified bearer "
        "token of each HTTP request; it is never a tool argument. Every read is filtered by id, tenant "
        "and owner: a missing record and another customer's record give the same error."
    ),
    "writes": (
        "create_ticket is idempotent by its key. execute_refund pays only on a reviewer's signed approval "
        "token, which this server verifies with its own copy of the public keys (signature, case, digest, "
        "reviewer of the tenant who is not the applicant, signed before the proposal expired, paid within "
        "30 minutes of signing); it re-checks the quote, pays at most once per approval id and per token id, "
        "and returns a receipt signed with the commerce key (simulated receipt SIM-...). A case is paid at most "
        "once; close_refund_proposal records that a case's proposal was rejected or expired, and from then on "
        "no approval of that case is paid. preview_action computes the exact effect of an action the "
        "tenant's policy in the directory allows (default deny) as a proposal with a digest and an expiry; "
        "execute_action executes it once, with the customer's confirmation and the reviewers' approvals the "
        "policy needs, idempotent by key (a replay is marked), and returns a receipt signed with the commerce key; "
        "close_action_proposal records that a case's action proposal was rejected, expired or withdrawn, and "
        "from then on nothing of that case executes."
    ),
    "errors": 'Refusals are tool errors whose text is {"code": ..., "message": ...}.',
    "ledger": (
        "ledger_id names this commerce database. A refund proposal binds the ledger it was quoted on and "
        "is refused on any other (ledger_mismatch); workers of one task queue must share one ledger."
    ),
}

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
IdentityResolver = Callable[[str], Identity]
"""Given the scope a tool needs, the identity the current call acts for (or a typed refusal)."""

OrderId = Annotated[str, Field(description="An order id such as QH-1001.")]
Sku = Annotated[str, Field(description="A SKU such as DESK-01.")]
TicketId = Annotated[str, Field(description="A ticket id: TCK- and 16 hex characters.")]
TicketText = Annotated[str, Field(description=f"What the ticket is about, 1 to {MAX_TICKET_TEXT} characters.")]
IdempotencyKey = Annotated[str, Field(description="The caller's key; repeating a call with it changes nothing.")]

READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def _annotations(tool: ToolName) -> ToolAnnotations:
    """The MCP hints of a tool: a read or an (idempotent) write, as the tool catalogue says."""
    return READ if COMMERCE_TOOLS[tool].read_only else WRITE


def tool_result(value: BaseModel) -> CallToolResult:
    """A successful result, built as the SDK builds one from a returned model: the model as indented
    JSON text, and as structured content (checked by the SDK against the tool's output schema)."""
    text = pydantic_core.to_json(value, fallback=str, indent=2).decode()
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=value.model_dump(mode="json", by_alias=True),
    )


def tool_error(code: str, message: str) -> CallToolResult:
    """An MCP tool error carrying a stable code; the SDK passes it through without output validation."""
    payload = json.dumps({"code": code, "message": message}, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=payload)], is_error=True)


def bound_identity(identity: Identity) -> IdentityResolver:
    """Stdio: one identity for the life of the process."""
    return lambda _scope: identity


def token_identity(keys: CommerceKeys) -> IdentityResolver:
    """HTTP: the identity of the current request's verified token, if it grants the scope, as this
    server's directory lists that person now."""

    def resolve(scope: str) -> Identity:
        access_token = get_access_token()
        if access_token is None:
            raise AuthorizationError(CommerceErrorCode.TOKEN_REJECTED, "This request carries no verified token.")
        if scope not in access_token.scopes:
            raise error_from_code(CommerceErrorCode.SCOPE_MISSING, f"The token does not grant the {scope} scope.")
        return identity_from_access_token(access_token, keys.directory())

    return resolve


class _Dispatcher:
    """Runs one tool call: identity, then the blocking service call on a worker thread."""

    def __init__(
        self,
        engine: Engine,
        resolve_identity: IdentityResolver,
        knowledge: KnowledgeBase | None,
        keys: CommerceKeys,
    ) -> None:
        self._engine = engine
        self._resolve_identity = resolve_identity
        self._knowledge = knowledge
        self._keys = keys
        """Read on the first refund and kept: a server that only answers reads needs no keys."""
        self._ledger: str | None = None
        """The database's ledger id once a call has read it: it never changes, so it is read once."""

    def ledger_id(self) -> str | None:
        if self._ledger is None:
            self._ledger = read_ledger_id(self._engine)
        return self._ledger

    async def run(
        self, tool: ToolName, operation: Callable[[CommerceService], BaseModel], *, case_id: str | None = None
    ) -> CallToolResult:
        """Run ``operation`` for the call's identity; a refusal is logged as one line with its code and
        the case (``case_id``: the proposal's, for the refund tools; else the bearer token's, over HTTP)."""
        try:
            identity = self._resolve_identity(TOOL_SCOPES[tool])
            service = CommerceService(
                self._engine, identity, ledger_id=self._ledger, knowledge=self._knowledge, keys=self._keys
            )
            result = await anyio.to_thread.run_sync(operation, service)
            self._ledger = service.known_ledger_id
        except SupportError as error:
            return refused(tool, error.code, error.message, case_id=case_id)
        except Exception:
            fields = log_fields(case_id=case_id or _token_case(), tool=tool.value)
            logger.exception("%s failed unexpectedly", tool.value, extra=fields)
            return tool_error(CommerceErrorCode.INTERNAL_ERROR, "The commerce server could not complete this request.")
        return tool_result(result)


def _token_of_another_case(tool: ToolName, case_id: str) -> CallToolResult | None:
    """The refusal of a proposal's case other than the one the HTTP bearer token was issued for (None
    over stdio, where no token is presented, and for the token's own case)."""
    access_token = get_access_token()
    if access_token is None or case_of_access_token(access_token) == case_id:
        return None
    return refused(
        tool, CommerceErrorCode.APPROVAL_INVALID, "The bearer token was issued for another case.", case_id=case_id
    )


def refused(tool: ToolName, code: str, message: str, *, case_id: str | None = None) -> CallToolResult:
    """The tool error of a refusal, logged as one line: the tool, the code and the case, never the
    arguments (they may hold a customer's text)."""
    case = case_id or _token_case()
    logger.info(
        "%s refused: %s%s",
        tool.value,
        code,
        f" (case {case})" if case else "",
        extra=log_fields(case_id=case, code=code, tool=tool.value),
    )
    return tool_error(code, message)


def _token_case() -> str | None:
    """The case the current request's verified bearer token was issued for (HTTP), else None (stdio)."""
    access_token = get_access_token()
    return case_of_access_token(access_token) if access_token is not None else None


def build_server(
    engine: Engine,
    resolve_identity: IdentityResolver,
    *,
    token_verifier: CommerceTokenVerifier | None = None,
    auth: AuthSettings | None = None,
    log_level: LogLevel = "INFO",
    knowledge: KnowledgeBase | None = None,
    keys: CommerceKeys | None = None,
) -> MCPServer:
    """The commerce MCP server; ``resolve_identity`` decides who each tool call acts for, ``knowledge``
    (default: the packaged knowledge base) holds the policy pages a refund's re-quote checks, and
    ``keys`` (default: :meth:`CommerceKeys.from_environment`) check approvals and sign receipts."""
    mcp = MCPServer(
        SERVER_NAME,
        title="Qinghe commerce (fictional)",
        instructions=(
            "Order, shipment, invoice, product and ticket facts for the signed-in customer of a "
            "fictional merchant. Amounts are integer cents."
        ),
        version=SERVER_VERSION,
        token_verifier=token_verifier,
        auth=auth,
        log_level=log_level,
    )
    dispatch = _Dispatcher(engine, resolve_identity, knowledge, keys or CommerceKeys.from_environment())

    @mcp.tool(name=ToolName.LIST_ORDERS, annotations=_annotations(ToolName.LIST_ORDERS))
    async def list_orders() -> Annotated[CallToolResult, OrderList]:
        """List the signed-in customer's own orders (summaries, sorted by order id)."""
        return await dispatch.run(ToolName.LIST_ORDERS, lambda service: service.list_orders())

    @mcp.tool(name=ToolName.GET_ORDER, annotations=_annotations(ToolName.GET_ORDER))
    async def get_order(order_id: OrderId) -> Annotated[CallToolResult, Order]:
        """Read one of the customer's orders: status, amounts in cents, delivery date, version."""
        return await dispatch.run(ToolName.GET_ORDER, lambda service: service.get_order(order_id))

    @mcp.tool(name=ToolName.GET_SHIPMENT, annotations=_annotations(ToolName.GET_SHIPMENT))
    async def get_shipment(order_id: OrderId) -> Annotated[CallToolResult, Shipment]:
        """Read the shipment of one of the customer's orders: carrier, tracking number, events."""
        return await dispatch.run(ToolName.GET_SHIPMENT, lambda service: service.get_shipment(order_id))

    @mcp.tool(name=ToolName.GET_INVOICE, annotations=_annotations(ToolName.GET_INVOICE))
    async def get_invoice(order_id: OrderId) -> Annotated[CallToolResult, Invoice]:
        """Read the invoice of one of the customer's orders (total = paid items + freight)."""
        return await dispatch.run(ToolName.GET_INVOICE, lambda service: service.get_invoice(order_id))

    @mcp.tool(name=ToolName.GET_PRODUCT, annotations=_annotations(ToolName.GET_PRODUCT))
    async def get_product(sku: Sku) -> Annotated[CallToolResult, Product]:
        """Read a catalogue product: names, category and warranty months."""
        return await dispatch.run(ToolName.GET_PRODUCT, lambda service: service.get_product(sku))

    @mcp.tool(name=ToolName.GET_TICKET, annotations=_annotations(ToolName.GET_TICKET))
    async def get_ticket(ticket_id: TicketId) -> Annotated[CallToolResult, Ticket]:
        """Read one of the customer's support tickets."""
        return await dispatch.run(ToolName.GET_TICKET, lambda service: service.get_ticket(ticket_id))

    @mcp.tool(name=ToolName.CREATE_TICKET, annotations=_annotations(ToolName.CREATE_TICKET))
    async def create_ticket(
        order_id: OrderId,
        text: TicketText,
        idempotency_key: IdempotencyKey,
    ) -> Annotated[CallToolResult, Ticket]:
        """Open a support ticket on one of the customer's orders, at most once per idempotency key."""
        return await dispatch.run(
            ToolName.CREATE_TICKET, lambda service: service.create_ticket(order_id, text, idempotency_key)
        )

    @mcp.tool(name=ToolName.EXECUTE_REFUND, annotations=_annotations(ToolName.EXECUTE_REFUND))
    async def execute_refund(approval: RefundApproval) -> Annotated[CallToolResult, RefundReceipt]:
        """Pay a human-approved refund proposal (simulated), exactly once per approval id."""
        case_id = approval.proposal.case_id
        if (elsewhere := _token_of_another_case(ToolName.EXECUTE_REFUND, case_id)) is not None:
            return elsewhere
        return await dispatch.run(
            ToolName.EXECUTE_REFUND, lambda service: service.execute_refund(approval), case_id=case_id
        )

    @mcp.tool(name=ToolName.CLOSE_REFUND_PROPOSAL, annotations=_annotations(ToolName.CLOSE_REFUND_PROPOSAL))
    async def close_refund_proposal(closure: ProposalClosure) -> Annotated[CallToolResult, ProposalClosed]:
        """Record that a case's refund proposal was rejected or expired: no approval of the case is paid after."""
        case_id = closure.proposal.case_id
        if (elsewhere := _token_of_another_case(ToolName.CLOSE_REFUND_PROPOSAL, case_id)) is not None:
            return elsewhere
        return await dispatch.run(
            ToolName.CLOSE_REFUND_PROPOSAL, lambda service: service.close_refund_proposal(closure), case_id=case_id
        )

    @mcp.tool(name=ToolName.PREVIEW_ACTION, annotations=_annotations(ToolName.PREVIEW_ACTION))
    async def preview_action(request: ActionRequest) -> Annotated[CallToolResult, ActionProposal]:
        """Compute the exact effect of an action the tenant's policy allows, as a proposal with a digest."""
        if (elsewhere := _token_of_another_case(ToolName.PREVIEW_ACTION, request.case_id)) is not None:
            return elsewhere
        return await dispatch.run(
            ToolName.PREVIEW_ACTION, lambda service: service.preview_action(request), case_id=request.case_id
        )

    @mcp.tool(name=ToolName.EXECUTE_ACTION, annotations=_annotations(ToolName.EXECUTE_ACTION))
    async def execute_action(execution: ActionExecution) -> Annotated[CallToolResult, ActionReceipt]:
        """Execute an agreed action proposal once, and return its signed receipt (a repeat: the same receipt)."""
        token_case = _token_case()
        return await dispatch.run(
            ToolName.EXECUTE_ACTION, lambda service: service.execute_action(execution, token_case=token_case)
        )

    @mcp.tool(name=ToolName.CLOSE_ACTION_PROPOSAL, annotations=_annotations(ToolName.CLOSE_ACTION_PROPOSAL))
    async def close_action_proposal(closure: ActionClosure) -> Annotated[CallToolResult, ProposalClosed]:
        """Record that a case's action proposal was rejected, expired or withdrawn: nothing of the case executes."""
        token_case = _token_case()
        return await dispatch.run(
            ToolName.CLOSE_ACTION_PROPOSAL,
            lambda service: service.close_action_proposal(closure, token_case=token_case),
        )

    @mcp.resource(
        SCOPE_RESOURCE_URI,
        name="scope",
        title="Commerce service scope",
        description="What this fictional commerce service covers, its tools, and where identity comes from.",
        mime_type="application/json",
    )
    def scope() -> str:
        return json.dumps(SCOPE_DOCUMENT | {"ledger_id": dispatch.ledger_id()}, ensure_ascii=False, indent=2)

    return mcp


def build_stdio_server(
    engine: Engine,
    identity: Identity,
    *,
    log_level: LogLevel = "WARNING",
    knowledge: KnowledgeBase | None = None,
    keys: CommerceKeys | None = None,
) -> MCPServer:
    """A server acting for one identity, bound when the process starts."""
    return build_server(engine, bound_identity(identity), log_level=log_level, knowledge=knowledge, keys=keys)


def build_http_server(
    engine: Engine,
    *,
    secret: str,
    public_url: str,
    log_level: LogLevel = "INFO",
    knowledge: KnowledgeBase | None = None,
    keys: CommerceKeys | None = None,
) -> MCPServer:
    """A server acting for whoever each request's verified token names; bad tokens get HTTP 401."""
    # Validated from the string, as the SDK expects: its settings keep a path-less URL without a trailing slash.
    auth = AuthSettings.model_validate({"issuer_url": public_url, "resource_server_url": None})
    keys = keys or CommerceKeys.from_environment()
    return build_server(
        engine,
        token_identity(keys),
        token_verifier=CommerceTokenVerifier(secret, keys.directory),
        auth=auth,
        log_level=log_level,
        knowledge=knowledge,
        keys=keys,
    )

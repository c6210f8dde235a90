"""The commerce server for real over stdio: one server process for the whole module."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TypeVar

import pytest
from mcp_types import TextContent

from activities.commerce.commerce_client import CommerceClient, open_stdio_client
from contracts.commerce import Order, RefundApproval
from contracts.credentials import verify_approval_token, verify_receipt
from contracts.errors import AuthorizationError, ContractError, SupportError, TransientError, error_from_code
from contracts.tools import WRITE_TOOLS
from keystore import keys_dir
from tests.commerce_server.forgeries import ATTACKS, signed_19s_before_expiry
from tests.conftest import DemoKeys

EXPECTED_TOOLS = {
    "list_orders",
    "get_order",
    "get_shipment",
    "get_invoice",
    "get_product",
    "get_ticket",
    "create_ticket",
    "execute_refund",
    "close_refund_proposal",
    "preview_action",
    "execute_action",
    "close_action_proposal",
}

_T = TypeVar("_T")


@asynccontextmanager
async def held_open(context: AbstractAsyncContextManager[_T]) -> AsyncIterator[_T]:
    """Hold ``context`` open in its own task.

    pytest-asyncio may set a fixture up and tear it down in different tasks, while the SDK's
    transports (anyio task groups) must be entered and left in the same one.
    """
    opened: asyncio.Future[_T] = asyncio.get_running_loop().create_future()
    release = asyncio.Event()

    async def hold() -> None:
        try:
            async with context as value:
                opened.set_result(value)
                await release.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise

    holder = asyncio.create_task(hold())
    try:
        yield await opened
    finally:
        release.set()
        await holder


@pytest.fixture(scope="module")
async def alice(tmp_path_factory: pytest.TempPathFactory, demo_keys: DemoKeys) -> AsyncIterator[CommerceClient]:
    """Alice's stdio server, as a worker launches it: its keys are the defaults under its state dir
    (``<state dir>/keys``, which ``starter.py init`` fills), here the session's demo keys."""
    state_dir = tmp_path_factory.mktemp("commerce-stdio")
    keys_dir(state_dir).symlink_to(keys_dir(demo_keys.state_dir), target_is_directory=True)
    async with held_open(open_stdio_client("alice", state_dir)) as client:
        yield client


async def refusal(call: Callable[[], Awaitable[object]]) -> SupportError:
    with pytest.raises(SupportError) as caught:
        await call()
    return caught.value


async def test_server_lists_exactly_eleven_tools_and_the_scope_resource(alice: CommerceClient) -> None:
    tools = await alice.list_tools()
    resources = await alice.list_resources()

    assert {tool.name for tool in tools} == EXPECTED_TOOLS
    assert [str(resource.uri) for resource in resources] == ["commerce://scope"]


async def test_tools_are_typed_and_take_no_identity(alice: CommerceClient) -> None:
    for tool in await alice.list_tools():
        arguments = set(tool.input_schema.get("properties", {}))
        assert tool.output_schema is not None, tool.name
        assert not arguments & {"customer", "tenant", "profile", "subject", "identity"}, tool.name
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (tool.name not in WRITE_TOOLS)


async def test_scope_resource_describes_the_service(alice: CommerceClient) -> None:
    scope = json.loads(await alice.read_resource("commerce://scope"))

    assert scope["fictional"] is True
    assert set(scope["tools"]["read"]) | set(scope["tools"]["write"]) == EXPECTED_TOOLS
    assert "never a tool argument" in scope["identity"]


async def test_get_order_returns_structured_content(alice: CommerceClient) -> None:
    order = await alice.call("get_order", {"order_id": "QH-1001"})

    assert Order.model_validate(order).paid_items_cents == 12900


async def test_foreign_order_is_a_tool_error_not_a_protocol_error(alice: CommerceClient) -> None:
    raw = await alice.call_tool_result("get_order", {"order_id": "QH-2001"})
    foreign = await refusal(lambda: alice.call("get_order", {"order_id": "QH-2001"}))
    missing = await refusal(lambda: alice.call("get_order", {"order_id": "QH-9999"}))

    assert raw.is_error is True
    content = raw.content[0]
    assert isinstance(content, TextContent)
    assert json.loads(content.text)["code"] == "order_not_accessible"
    assert isinstance(foreign, AuthorizationError)
    assert (foreign.code, foreign.message) == (missing.code, missing.message)
    assert foreign.code == "order_not_accessible"


@pytest.mark.parametrize(("tool", "arguments"), [("get_order", {"order_id": 5}), ("drop_tables", {})])
async def test_calls_the_sdk_rejects_are_contract_errors(alice: CommerceClient, tool: str, arguments: dict) -> None:
    error = await refusal(lambda: alice.call(tool, arguments))

    assert isinstance(error, ContractError)
    assert error.code == "tool_call_rejected"


async def test_tickets_over_mcp(alice: CommerceClient) -> None:
    arguments = {"order_id": "QH-1005", "text": "Parcel late", "idempotency_key": "mcp-ticket"}

    ticket = await alice.call("create_ticket", arguments)

    assert await alice.call("create_ticket", arguments) == ticket
    assert await alice.call("get_ticket", {"ticket_id": ticket["ticket_id"]}) == ticket
    conflict = await refusal(lambda: alice.call("create_ticket", arguments | {"text": "Other"}))
    assert conflict.code == "idempotency_conflict"


async def balance(client: CommerceClient, order_id: str) -> tuple[int, int]:
    order = await client.call("get_order", {"order_id": order_id})
    return order["refunded_cents"], order["version"]


@pytest.mark.parametrize("attack", ATTACKS)
async def test_forged_or_misused_approvals_sent_over_stdio_pay_nothing(
    alice: CommerceClient, refund_approval: Callable[..., RefundApproval], demo_keys: DemoKeys, attack: str
) -> None:
    expected = ATTACKS[attack]
    order = Order.model_validate(await alice.call("get_order", {"order_id": "QH-1001"}))
    approval = expected.build(refund_approval(order), demo_keys).model_dump(mode="json")

    error = await refusal(lambda: alice.call("execute_refund", {"approval": approval}))

    assert (error.code, type(error)) == (expected.code, type(error_from_code(expected.code, "")))
    assert expected.reason in error.message
    assert await balance(alice, "QH-1001") == (0, 1)


async def test_refund_over_mcp_pays_once_with_a_signed_receipt(
    alice: CommerceClient, refund_approval: Callable[..., RefundApproval], demo_keys: DemoKeys
) -> None:
    order = Order.model_validate(await alice.call("get_order", {"order_id": "QH-1009"}))
    approval = refund_approval(order)
    assert approval.approval_token is not None
    arguments = {"approval": approval.model_dump(mode="json")}
    reused = {"approval": approval.model_dump(mode="json") | {"approval_id": "approval-reused-over-stdio"}}

    receipt = await alice.call("execute_refund", arguments)
    repeat = await alice.call("execute_refund", arguments)
    refused = await refusal(lambda: alice.call("execute_refund", reused))

    assert repeat == receipt
    assert (receipt["amount_cents"], receipt["simulated"]) == (8000, True)
    claims = verify_receipt(receipt["signature"], demo_keys.public_keys())
    token = verify_approval_token(approval.approval_token, demo_keys.directory())
    assert (claims.receipt_id, claims.approval_id, claims.approval_jti) == (
        receipt["receipt_id"],
        approval.approval_id,
        token.jti,
    )
    assert (claims.digest, claims.amount_cents, claims.order_id) == (approval.digest, 8000, "QH-1009")
    assert (claims.order_version_before, claims.order_version_after, claims.refunded_cents_after) == (1, 2, 12900)
    assert isinstance(refused, AuthorizationError) and refused.code == "approval_reused"
    assert await balance(alice, "QH-1009") == (12900, 2)


async def test_an_approval_signed_19s_before_expiry_pays_over_stdio_after_it(
    alice: CommerceClient, refund_approval: Callable[..., RefundApproval], demo_keys: DemoKeys
) -> None:
    order = Order.model_validate(await alice.call("get_order", {"order_id": "QH-1002"}))
    approval = signed_19s_before_expiry(refund_approval(order), demo_keys)

    receipt = await alice.call("execute_refund", {"approval": approval.model_dump(mode="json")})

    assert receipt["amount_cents"] == 17900
    assert verify_receipt(receipt["signature"], demo_keys.public_keys()).order_id == "QH-1002"
    assert await balance(alice, "QH-1002") == (17900, 2)


async def test_server_that_cannot_start_is_transient(tmp_path: Path) -> None:
    with pytest.raises(TransientError) as caught:
        async with open_stdio_client("nobody", tmp_path) as client:
            await client.list_tools()

    assert caught.value.code == "commerce_unavailable"

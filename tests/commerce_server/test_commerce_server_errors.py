"""Failures inside the server come back as coded tool errors, never as tracebacks or other data."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import TextContent

from commerce_server.db import make_engine
from commerce_server.keys import CommerceKeys
from commerce_server.seed import seed_fixture
from commerce_server.server import build_stdio_server
from commerce_server.service import CommerceService
from contracts.commerce import Order, RefundApproval
from keystore import demo_identity


async def error_payload(server: MCPServer, tool: str, arguments: dict) -> dict:
    async with Client(server, cache=None) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error is True
    content = result.content[0]
    assert isinstance(content, TextContent)
    return json.loads(content.text)


async def test_database_failure_is_transient_and_generic(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'empty.db'}")

    payload = await error_payload(build_stdio_server(engine, demo_identity("alice")), "list_orders", {})

    assert payload["code"] == "database_unavailable"
    assert "orders" not in payload["message"]


async def test_unexpected_exception_does_not_leak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'commerce.db'}")
    seed_fixture(engine)

    def crash(self: CommerceService, order_id: str) -> None:
        raise RuntimeError("bob's QH-2001 paid 12900")

    monkeypatch.setattr(CommerceService, "get_order", crash)
    server = build_stdio_server(engine, demo_identity("alice"))

    payload = await error_payload(server, "get_order", {"order_id": "QH-1001"})

    assert payload["code"] == "internal_error"
    assert [leak for leak in ("bob", "QH-2001", "12900", "Traceback") if leak in payload["message"]] == []


async def test_a_server_without_keys_answers_reads_and_refuses_refunds_with_one_line(
    tmp_path: Path, refund_approval: Callable[..., RefundApproval]
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'commerce.db'}")
    seed_fixture(engine)
    keys = CommerceKeys(str(tmp_path / "keys" / "directory.json"), tmp_path / "keys" / "commerce.pem")
    server = build_stdio_server(engine, demo_identity("alice"), keys=keys)
    async with Client(server, cache=None) as client:
        read = await client.call_tool("get_order", {"order_id": "QH-1001"})
    assert read.is_error is False and read.structured_content is not None
    approval = refund_approval(Order.model_validate(read.structured_content))

    payload = await error_payload(server, "execute_refund", {"approval": approval.model_dump(mode="json")})

    assert payload["code"] == "commerce_keys_unavailable"
    assert "directory_missing" in payload["message"] and "COMMERCE_DIRECTORY" in payload["message"]

"""The retail server over Streamable HTTP (a real process on a free port): each request's bearer token
names the customer and the case and must grant the tool's scope; a request without a valid token is
refused before any tool runs."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from activities.commerce.commerce_client import open_http_client
from commerce_contract.context import text_of
from commerce_server.tokens import TOKEN_SECRET_ENV, mint_token
from contracts.retail import RetailTool, RetailWrite
from contracts.tools import Scope
from devstack.servers import free_port, wait_for_port
from keystore import directory_location, load_directory
from tests.commerce_contract.test_retail_profile import retail_state
from tests.commerce_service import PROJECT_ROOT

CANCEL = {"order_id": "#W0000001", "reason": "no longer needed"}


@pytest.fixture
def retail_http(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    state = retail_state(tmp_path / "state")
    port, secret = free_port(), secrets.token_urlsafe(32)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("COMMERCE_", "RETAIL_", "OTEL_"))}
    argv = [sys.executable, "-m", "retail_server", "--http", "--port", str(port), "--state-dir", str(state)]
    process = subprocess.Popen(
        argv,
        cwd=PROJECT_ROOT,
        env=environ | {TOKEN_SECRET_ENV: secret},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port("127.0.0.1", port, timeout=60, process=process)
        yield f"http://127.0.0.1:{port}/mcp", secret, state
    finally:
        process.terminate()
        process.wait(timeout=10)


def _token(state: Path, secret: str, subject: str, case_id: str, *scopes: Scope) -> str:
    identity = load_directory(directory_location(state, {})).identity(subject)
    return mint_token(identity, case_id=case_id, scopes=[scope.value for scope in scopes], secret=secret)


async def test_the_token_names_the_customer_the_case_and_the_scope(retail_http: tuple[str, str, Path]) -> None:
    url, secret, state = retail_http
    ana = _token(state, secret, "ana_diaz_1", "case-http-1", Scope.ORDERS_READ, Scope.ACTIONS_WRITE)
    async with open_http_client(url, ana) as client:
        order = await client.call_tool_result(RetailTool.GET_ORDER_DETAILS, {"order_id": "#W0000001"})
        assert not order.is_error and json.loads(text_of(order))["user_id"] == "ana_diaz_1"
        other = await client.call_tool_result(RetailTool.GET_ORDER_DETAILS, {"order_id": "#W0000003"})
        assert other.is_error and json.loads(text_of(other))["code"] == "order_not_accessible"
        proposal = await client.call_tool_result(RetailWrite.CANCEL_PENDING_ORDER, CANCEL)
        assert json.loads(text_of(proposal))["case_id"] == "case-http-1"

    read_only = _token(state, secret, "ana_diaz_1", "case-http-1", Scope.ORDERS_READ)
    async with open_http_client(url, read_only) as client:
        refused = await client.call_tool_result(RetailWrite.CANCEL_PENDING_ORDER, CANCEL)
        assert json.loads(text_of(refused))["code"] == "scope_missing"

    bo = _token(state, secret, "bo_chen_2", "case-http-2", Scope.ORDERS_READ)
    async with open_http_client(url, bo) as client:
        refused = await client.call_tool_result(RetailTool.GET_ORDER_DETAILS, {"order_id": "#W0000001"})
        assert json.loads(text_of(refused))["code"] == "order_not_accessible"


def test_a_request_without_a_valid_token_is_refused_before_any_tool(retail_http: tuple[str, str, Path]) -> None:
    url, secret, state = retail_http
    forged = _token(state, "another-secret-" + secret, "ana_diaz_1", "case-http-1", Scope.ORDERS_READ)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    for authorization in ({}, {"Authorization": f"Bearer {forged}"}):
        assert httpx2.post(url, json=body, headers=headers | authorization, timeout=10).status_code == 401

"""The commerce server for real over Streamable HTTP, with per-request bearer tokens."""

from __future__ import annotations

import base64
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest

from activities.commerce_client import open_http_client
from commerce_server.tokens import ALL_SCOPES, SCOPE_ORDERS_READ, TOKEN_SECRET_ENV, mint_token
from contracts.commerce import Order
from contracts.errors import AuthorizationError, SupportError, TransientError
from contracts.identity import PROFILES

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 30


@dataclass(frozen=True)
class RunningServer:
    url: str
    secret: str

    def token(self, profile: str = "alice", scopes: tuple[str, ...] = ALL_SCOPES, **options: int) -> str:
        return mint_token(PROFILES[profile], case_id="case-http", scopes=scopes, secret=self.secret, **options)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    state_dir = tmp_path_factory.mktemp("commerce-http")
    port = free_port()
    secret = secrets.token_urlsafe(32)
    env = {key: value for key, value in os.environ.items() if key != "COMMERCE_DATABASE_URL"}
    env[TOKEN_SECRET_ENV] = secret
    command = [sys.executable, "-m", "commerce_server", "--http", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--state-dir", str(state_dir), "--log-level", "WARNING"]
    log_path = state_dir / "server.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command,
            cwd=PROJECT_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        _wait_until_answering(url, process, log_path)
        yield RunningServer(url=url, secret=secret)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_answering(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"commerce server exited ({process.returncode}): {log_path.read_text()}")
        try:
            httpx2.post(url, json={}, timeout=1)
            return
        except httpx2.TransportError:
            time.sleep(0.1)
    pytest.fail(f"commerce server did not answer within {STARTUP_SECONDS} s: {log_path.read_text()}")


def tampered(token: str) -> str:
    """Alice's signed token with the subject rewritten to bob, signature kept."""
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged = base64.urlsafe_b64encode(json.dumps(claims | {"sub": "bob"}).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


def other_audience(secret: str) -> str:
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": "qinghe-support-worker",
        "aud": "another-service",
        "sub": "alice",
        "tenant": "qinghe",
    }
    claims |= {"case_id": "case-http", "scopes": list(ALL_SCOPES), "iat": now, "exp": now + 60}
    return jwt.encode(claims, secret, algorithm="HS256")


BAD_TOKENS: dict[str, Callable[[RunningServer], str | None]] = {
    "missing": lambda server: None,
    "tampered": lambda server: tampered(server.token()),
    "expired": lambda server: server.token(ttl_seconds=-5),
    "wrong-audience": lambda server: other_audience(server.secret),
    "long-lived": lambda server: server.token(ttl_seconds=3600),
}


async def refusal(call: Callable[[], Awaitable[object]]) -> SupportError:
    with pytest.raises(SupportError) as caught:
        await call()
    return caught.value


async def test_valid_token_reads_alices_orders(server: RunningServer) -> None:
    async with open_http_client(server.url, server.token()) as client:
        orders = await client.call("list_orders")
        order = await client.call("get_order", {"order_id": "QH-1001"})

    assert len(orders["orders"]) == 12
    assert order["paid_items_cents"] == 12900


@pytest.mark.parametrize("kind", BAD_TOKENS)
def test_bad_tokens_get_http_401(server: RunningServer, kind: str) -> None:
    token = BAD_TOKENS[kind](server)
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"

    response = httpx2.post(
        server.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, headers=headers
    )

    assert response.status_code == 401


@pytest.mark.parametrize("kind", ["tampered", "expired", "wrong-audience"])
async def test_client_reports_a_refused_token_as_authorization_error(server: RunningServer, kind: str) -> None:
    async def connect_and_call() -> None:
        async with open_http_client(server.url, BAD_TOKENS[kind](server) or "") as client:
            await client.call("list_orders")

    error = await refusal(connect_and_call)

    assert isinstance(error, AuthorizationError)
    assert error.code == "token_rejected"


async def test_identity_comes_from_each_requests_token(server: RunningServer) -> None:
    async with open_http_client(server.url, server.token("alice")) as alice:
        refused = await refusal(lambda: alice.call("get_order", {"order_id": "QH-2001"}))
    async with open_http_client(server.url, server.token("bob")) as bob:
        order = await bob.call("get_order", {"order_id": "QH-2001"})

    assert refused.code == "order_not_accessible"
    assert order["customer"] == "bob"


async def test_tools_need_their_scope(server: RunningServer) -> None:
    async with open_http_client(server.url, server.token(scopes=(SCOPE_ORDERS_READ,))) as client:
        await client.call("get_order", {"order_id": "QH-1005"})
        error = await refusal(
            lambda: client.call("create_ticket", {"order_id": "QH-1005", "text": "Late", "idempotency_key": "scoped"})
        )

    assert isinstance(error, AuthorizationError)
    assert error.code == "scope_missing"


async def test_unreachable_server_is_transient() -> None:
    async def connect() -> None:
        async with open_http_client(f"http://127.0.0.1:{free_port()}/mcp", "token") as client:
            await client.list_tools()

    error = await refusal(connect)

    assert isinstance(error, TransientError)
    assert error.code == "commerce_unavailable"


async def test_a_refund_token_only_pays_the_case_it_was_issued_for(server: RunningServer, refund_approval) -> None:
    async with open_http_client(server.url, server.token()) as client:
        order = Order.model_validate(await client.call("get_order", {"order_id": "QH-1002"}))
    approval = refund_approval(order)
    other_case = mint_token(PROFILES["alice"], case_id="case-other", scopes=ALL_SCOPES, secret=server.secret)
    async with open_http_client(server.url, other_case) as client:
        error = await refusal(lambda: client.call("execute_refund", {"approval": approval.model_dump(mode="json")}))
    assert error.code == "approval_invalid"
    own_case = mint_token(PROFILES["alice"], case_id=approval.proposal.case_id, scopes=ALL_SCOPES, secret=server.secret)
    async with open_http_client(server.url, own_case) as client:
        receipt = await client.call("execute_refund", {"approval": approval.model_dump(mode="json")})
    assert receipt["amount_cents"] == 17900 and receipt["receipt_id"].startswith("SIM-")

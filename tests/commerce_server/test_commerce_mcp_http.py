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
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest

from activities.commerce.commerce_client import CommerceClient, open_http_client
from commerce_server.tokens import (
    ALL_SCOPES,
    TOKEN_SECRET_ENV,
    mint_token,
)
from contracts.commerce import Order, RefundApproval
from contracts.credentials import verify_approval_token, verify_receipt
from contracts.errors import AuthorizationError, SupportError, TransientError, error_from_code
from contracts.tools import Scope
from keystore import demo_identity, reviewer_kid
from tests.commerce_server.forgeries import ATTACKS, signed_19s_before_expiry, signed_with
from tests.conftest import DemoKeys

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 30


@dataclass(frozen=True)
class RunningServer:
    url: str
    secret: str

    def token(
        self, profile: str = "alice", scopes: tuple[str, ...] = ALL_SCOPES, case_id: str = "case-http", **options: int
    ) -> str:
        return mint_token(demo_identity(profile), case_id=case_id, scopes=scopes, secret=self.secret, **options)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, demo_keys: DemoKeys) -> Iterator[RunningServer]:
    """The HTTP server, given its own copy of the public keys and its receipt key by environment."""
    state_dir = tmp_path_factory.mktemp("commerce-http")
    port = free_port()
    secret = secrets.token_urlsafe(32)
    env = {key: value for key, value in os.environ.items() if key != "COMMERCE_DATABASE_URL"}
    env[TOKEN_SECRET_ENV] = secret
    env |= demo_keys.commerce_environment()
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
    async with open_http_client(server.url, server.token(scopes=(Scope.ORDERS_READ,))) as client:
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


async def test_a_refund_token_only_pays_the_case_it_was_issued_for(
    server: RunningServer, refund_approval: Callable[..., RefundApproval]
) -> None:
    async with open_http_client(server.url, server.token("bob")) as client:
        order = Order.model_validate(await client.call("get_order", {"order_id": "QH-2002"}))
    approval = refund_approval(order)
    other_case = server.token("bob", case_id="case-other")
    async with open_http_client(server.url, other_case) as client:
        error = await refusal(lambda: client.call("execute_refund", {"approval": approval.model_dump(mode="json")}))
    assert error.code == "approval_invalid"
    async with open_http_client(server.url, server.token("bob", case_id=approval.proposal.case_id)) as client:
        receipt = await client.call("execute_refund", {"approval": approval.model_dump(mode="json")})
    assert receipt["amount_cents"] == 17900 and receipt["receipt_id"].startswith("SIM-")


async def pay(server: RunningServer, approval: RefundApproval, profile: str = "alice") -> dict[str, Any]:
    """Send ``approval`` with a refund-scope token for exactly its case, as the worker would."""
    token = server.token(profile, scopes=(Scope.REFUND_EXECUTE,), case_id=approval.proposal.case_id)
    async with open_http_client(server.url, token) as client:
        return await client.call("execute_refund", {"approval": approval.model_dump(mode="json")})


async def read_order(server: RunningServer, order_id: str, profile: str = "alice") -> Order:
    async with open_http_client(server.url, server.token(profile, scopes=(Scope.ORDERS_READ,))) as client:
        return Order.model_validate(await client.call("get_order", {"order_id": order_id}))


@pytest.mark.parametrize("attack", ATTACKS)
async def test_forged_or_misused_approvals_sent_over_http_pay_nothing(
    server: RunningServer, refund_approval: Callable[..., RefundApproval], demo_keys: DemoKeys, attack: str
) -> None:
    expected = ATTACKS[attack]
    approval = expected.build(refund_approval(await read_order(server, "QH-1001")), demo_keys)

    error = await refusal(lambda: pay(server, approval))

    assert (error.code, type(error)) == (expected.code, type(error_from_code(expected.code, "")))
    assert expected.reason in error.message
    order = await read_order(server, "QH-1001")
    assert (order.refunded_cents, order.version) == (0, 1)


async def test_refund_over_http_pays_once_with_a_signed_receipt(
    server: RunningServer, refund_approval: Callable[..., RefundApproval], demo_keys: DemoKeys
) -> None:
    approval = refund_approval(await read_order(server, "QH-1009"))
    assert approval.approval_token is not None

    receipt = await pay(server, approval)
    repeat = await pay(server, approval)
    reused = await refusal(lambda: pay(server, approval.model_copy(update={"approval_id": "approval-reused-http"})))

    assert repeat == receipt and receipt["amount_cents"] == 8000
    claims = verify_receipt(receipt["signature"], demo_keys.public_keys())
    token = verify_approval_token(approval.approval_token, demo_keys.directory())
    assert (claims.receipt_id, claims.approval_jti, claims.digest) == (
        receipt["receipt_id"],
        token.jti,
        approval.digest,
    )
    assert (claims.order_version_before, claims.order_version_after, claims.refunded_cents_after) == (1, 2, 12900)
    assert isinstance(reused, AuthorizationError) and reused.code == "approval_reused"
    order = await read_order(server, "QH-1009")
    assert (order.refunded_cents, order.version) == (12900, 2)


async def test_an_approval_signed_19s_before_expiry_pays_over_http_after_it(
    server: RunningServer, refund_approval: Callable[..., RefundApproval], demo_keys: DemoKeys
) -> None:
    approval = signed_19s_before_expiry(refund_approval(await read_order(server, "QH-2001", "bob")), demo_keys)

    receipt = await pay(server, approval, "bob")

    assert receipt["amount_cents"] == 12900
    assert verify_receipt(receipt["signature"], demo_keys.public_keys()).order_id == "QH-2001"


async def test_a_leaked_refund_token_pays_nothing_its_holder_wrote_himself(
    server: RunningServer, refund_approval: Callable[..., RefundApproval], demo_keys: DemoKeys
) -> None:
    """The holder of a valid 2-minute refund-scope token for alice's case writes his own proposal for
    QH-1002 (17,900 cents) in that case and an approval naming chen: with no token, with a token he
    signed himself as chen, with chen's real approval of another case; nothing is paid."""
    leaked = server.token("alice", scopes=(Scope.REFUND_EXECUTE,), case_id="case-leaked", ttl_seconds=120)
    written = refund_approval(await read_order(server, "QH-1002"), case_id="case-leaked")
    assert written.proposal.amount_cents == 17900
    elsewhere = refund_approval(await read_order(server, "QH-1001"))
    attempts = {
        "approval_signature_required": written.model_copy(update={"approval_token": None}),
        "approval_signature_invalid": signed_with(None, header_kid=reviewer_kid("chen"))(written, demo_keys),
        "approval_invalid": written.model_copy(update={"approval_token": elsewhere.approval_token}),
    }

    async with open_http_client(server.url, leaked) as client:
        for code, approval in attempts.items():
            error = await refusal(partial(call_refund, client, approval))
            assert (code, isinstance(error, AuthorizationError)) == (error.code, True)

    order = await read_order(server, "QH-1002")
    assert (order.refunded_cents, order.version) == (0, 1)


async def call_refund(client: CommerceClient, approval: RefundApproval) -> dict[str, Any]:
    return await client.call("execute_refund", {"approval": approval.model_dump(mode="json")})


async def test_an_action_needs_its_scope_and_is_denied_where_the_tenant_allows_none(server: RunningServer) -> None:
    """The session's directory allows no action (the demo's): default deny over HTTP, before any read."""
    request = {"kind": "cancel_order", "case_id": "case-http", "order_id": "QH-1006"}
    reads_only = server.token(scopes=(Scope.ORDERS_READ,))
    async with open_http_client(server.url, reads_only) as client:
        unscoped = await refusal(lambda: client.call("preview_action", {"request": request}))
    async with open_http_client(server.url, server.token(scopes=(Scope.ACTIONS_WRITE,))) as client:
        denied = await refusal(lambda: client.call("preview_action", {"request": request}))
        other_case = await refusal(
            lambda: client.call("preview_action", {"request": request | {"case_id": "case-other"}})
        )

    assert unscoped.code == "scope_missing"
    assert (denied.code, denied.message) == (
        "action_not_allowed",
        "The merchant's policy does not allow cancel_order through this service.",
    )
    assert other_case.code == "approval_invalid"
    assert (await read_order(server, "QH-1006")).status == "processing"

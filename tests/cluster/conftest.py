"""Fixtures for the cluster test: the deployment topology of the service, without Docker.

* the Temporal dev server of ``tests/conftest.py`` (session fixtures ``temporal_server`` /
  ``temporal_client``);
* one commerce service, ``python -m commerce_server --http``, on the PostgreSQL server named by
  ``COMMERCE_TEST_POSTGRES_URL`` (default ``postgresql+psycopg://root@127.0.0.1:5432/test``), confined to
  a fresh schema of its own through the URL's ``options=-csearch_path=<schema>`` and dropped afterwards;
* worker processes (``python worker.py``, each with its own state dir, all on one task queue) that
  reach that service over Streamable HTTP (``COMMERCE_MCP_URL`` and the shared
  ``COMMERCE_TOKEN_SECRET``) and check credentials against the test keys (``SUPPORT_DIRECTORY``).

Every process a test starts here runs in its own process group and is killed by group afterwards.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, make_url, text
from sqlmodel import Session

from activities.commerce.commerce_http import COMMERCE_URL_ENV
from commerce_server.seed import fixture_rows, load_fixture, seed_fixture
from commerce_server.tokens import TOKEN_SECRET_ENV
from contracts.errors import ConfigurationError
from devstack.servers import DevServer
from keystore import DIRECTORY_ENV
from tests.commerce_service import start_http_commerce
from tests.conftest import DemoKeys, postgres_schema_engine, postgres_test_url
from tests.faults.fault_support import WorkerProcess, kill_group, spawn_worker


@dataclass(frozen=True)
class CommerceSchema:
    """A PostgreSQL schema of the test's own: its name, an engine confined to it, and the URL a
    process is given to land in it (the search path travels in the URL's ``options``)."""

    name: str
    engine: Engine
    url: str


def schema_url(base_url: str, schema: str) -> str:
    """``base_url`` with ``options=-csearch_path=<schema>`` in its query (psycopg passes it to libpq)."""
    url = make_url(base_url).update_query_dict({"options": f"-csearch_path={schema}"})
    return url.render_as_string(hide_password=False)


def schema_exists(schema: str) -> bool:
    admin = create_engine(postgres_test_url(), connect_args={"connect_timeout": 5})
    try:
        with admin.connect() as connection:
            found = connection.execute(text("SELECT 1 FROM pg_namespace WHERE nspname = :name"), {"name": schema})
            return found.first() is not None
    finally:
        admin.dispose()


def clone_orders(clones: dict[str, str]) -> dict[str, Any]:
    """A fixture holding copies of fixture orders: ``{new_order_id: fixture_order_id}``. Each copy has
    its own invoice id and tracking number, so no record of one order names another."""
    by_id = {order["order_id"]: order for order in load_fixture()["orders"]}
    orders = []
    for new_id, source_id in clones.items():
        source = by_id[source_id]
        number = new_id.removeprefix("QH-")
        orders.append(
            source
            | {
                "order_id": new_id,
                "shipment": source["shipment"] | {"tracking_number": f"SIMTRK{number}9"},
                "invoice": source["invoice"] | {"invoice_id": f"INV-{new_id}"},
            }
        )
    return {"products": [], "orders": orders}


@pytest.fixture
def commerce_schema() -> Iterator[CommerceSchema]:
    """A fresh schema (``tests.conftest.postgres_schema_engine``), seeded with the fixture; dropped
    afterwards, and checked to be gone."""
    with postgres_schema_engine() as engine:
        with engine.connect() as connection:
            name = connection.execute(text("SELECT current_schema()")).scalar_one()
        assert name.startswith("test_"), name
        seed_fixture(engine)
        yield CommerceSchema(name, engine, schema_url(postgres_test_url(), name))
    assert not schema_exists(name), f"schema {name} was not dropped"


def add_orders(engine: Engine, clones: dict[str, str]) -> None:
    """Insert the copies of :func:`clone_orders` (orders, invoices, shipment events) in one transaction."""
    rows = fixture_rows(clone_orders(clones))
    with Session(engine) as session:
        for table in ("orders", "invoices", "shipment_events"):
            session.add_all(rows[table])
            session.flush()
        session.commit()


@dataclass(frozen=True)
class CommerceService:
    """``python -m commerce_server --http`` on the test's schema."""

    process: subprocess.Popen
    url: str
    secret: str
    log_path: Path


@pytest.fixture
def commerce_service(commerce_schema: CommerceSchema, tmp_path: Path) -> Iterator[Callable[[], CommerceService]]:
    """Start the commerce service on ``commerce_schema`` when the test asks (after it added its orders);
    SIGTERM, then SIGKILL of its process group afterwards, before the schema is dropped."""
    started: list[subprocess.Popen] = []

    def start() -> CommerceService:
        state_dir = tmp_path / "commerce-service"
        log_path = tmp_path / "commerce-service.log"
        with log_path.open("ab") as log:
            try:
                service = start_http_commerce(
                    state_dir,
                    database_url=commerce_schema.url,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    new_session=True,
                )
            except ConfigurationError as error:
                raise AssertionError(
                    f"the commerce service did not start: {error}\n{log_path.read_text()[-3000:]}"
                ) from None
        started.append(service.process)
        # Nothing of it was written outside its own schema: the state dir holds no SQLite database.
        assert not (state_dir / "commerce.db").exists()
        return CommerceService(service.process, service.url, service.secret, log_path)

    yield start
    for process in started:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            process.wait(timeout=10)


@dataclass
class Cluster:
    """Worker processes of one task queue, all on one commerce service."""

    address: str
    task_queue: str
    service: CommerceService
    root: Path
    demo_keys: DemoKeys
    started: list[WorkerProcess]

    def worker_env(self) -> dict[str, str]:
        return {
            COMMERCE_URL_ENV: self.service.url,
            TOKEN_SECRET_ENV: self.service.secret,
            DIRECTORY_ENV: str(self.demo_keys.directory_path),
        }

    def spawn(self, name: str, state_dir: Path | None = None) -> WorkerProcess:
        """``python worker.py`` with its own state dir (``root/<name>/state`` unless given: a restarted
        worker keeps its predecessor's) and its output in ``<name>.log`` beside that state dir."""
        state_dir = state_dir or self.root / name / "state"
        state_dir.mkdir(parents=True, exist_ok=True)
        worker = spawn_worker(self.address, state_dir, self.task_queue, name=name, env=self.worker_env())
        self.started.append(worker)
        return worker


@pytest.fixture
def cluster(
    temporal_server: DevServer, commerce_service: Callable[[], CommerceService], demo_keys: DemoKeys, tmp_path: Path
) -> Iterator[Callable[[], Cluster]]:
    """``cluster()`` starts the commerce service and returns the launcher of its workers; every worker
    (and the service) is killed afterwards."""
    clusters: list[Cluster] = []

    def build() -> Cluster:
        made = Cluster(
            temporal_server.address,
            f"support-cluster-{uuid.uuid4().hex[:8]}",
            commerce_service(),
            tmp_path / "workers",
            demo_keys,
            [],
        )
        clusters.append(made)
        return made

    yield build
    for made in clusters:
        for worker in made.started:
            worker.cleanup()

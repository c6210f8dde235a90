"""Workflow tests run against a real Temporal dev server (started here) and a real worker.

The worker is the production one (``activities.worker_setup.build_worker``) with the rehearsal
model, the real commerce MCP server over stdio and a fresh SQLite commerce database per world.
Each world has its own task queue, so worlds never share a worker.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.model_settings import load_model_settings
from activities.worker_setup import build_worker
from commerce_server.db import OrderRow, RefundRow, make_engine
from commerce_server.seed import seed_fixture
from contracts.case import TERMINAL_STATUSES, WORKFLOW_NAME, CaseInput, CaseOptions, CaseStatus, CaseView
from contracts.identity import resolve_profile
from contracts.knowledge import Language
from temporal_dev import DevServer, start_dev_server


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
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


@dataclass
class CaseWorld:
    """One worker, one task queue, one commerce database."""

    client: Client
    state_dir: Path
    task_queue: str
    engine: Engine

    async def start(
        self, question: str, *, profile: str = "alice", language: Language = Language.EN, ttl: int = 900
    ) -> WorkflowHandle:
        case = CaseInput(
            case_id=uuid.uuid4().hex[:12],
            question=question,
            language=language,
            applicant=resolve_profile(profile),
            options=CaseOptions(approval_ttl_seconds=ttl),
        )
        return await self.client.start_workflow(
            WORKFLOW_NAME,
            case,
            id=f"case-{case.case_id}",
            task_queue=self.task_queue,
            result_type=CaseView,
        )

    async def wait_for(self, handle: WorkflowHandle, done: Callable[[CaseView], bool], timeout: float = 60) -> CaseView:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            view = await handle.query("status", result_type=CaseView)
            if done(view):
                return view
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"case still {view.status}/{view.phase} after {timeout}s")
            await asyncio.sleep(0.2)

    async def settled(self, handle: WorkflowHandle) -> CaseView:
        """Wait until the case waits for a reviewer (record written) or the workflow has ended."""
        view = await self.wait_for(handle, lambda v: v.status is not CaseStatus.RUNNING and v.record_path is not None)
        if view.status in TERMINAL_STATUSES:
            return await handle.result()
        return view

    def order(self, order_id: str) -> OrderRow:
        with Session(self.engine) as session:
            return session.exec(select(OrderRow).where(OrderRow.order_id == order_id)).one()

    def refund_records(self) -> list[RefundRow]:
        with Session(self.engine) as session:
            return list(session.exec(select(RefundRow)).all())


async def open_world(client: Client, state_dir: Path) -> tuple[CaseWorld, object, Callable]:
    state_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(f"sqlite:///{state_dir / 'commerce.db'}")
    seed_fixture(engine)
    task_queue = f"support-cases-test-{uuid.uuid4().hex[:8]}"
    worker, cleanup = build_worker(client, state_dir, task_queue=task_queue, model_settings=load_model_settings({}))
    return CaseWorld(client, state_dir, task_queue, engine), worker, cleanup


@pytest.fixture
async def world(temporal_client: Client, tmp_path: Path) -> AsyncIterator[CaseWorld]:
    case_world, worker, cleanup = await open_world(temporal_client, tmp_path / "state")
    async with worker:
        yield case_world
    await cleanup()
    case_world.engine.dispose()


@pytest.fixture(scope="module")
async def shared_world(temporal_client: Client, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[CaseWorld]:
    """A world for cases that never settle a refund, shared by one test module."""
    case_world, worker, cleanup = await open_world(temporal_client, tmp_path_factory.mktemp("world") / "state")
    async with worker:
        yield case_world
    await cleanup()
    case_world.engine.dispose()

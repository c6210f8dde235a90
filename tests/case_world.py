"""Shared helpers for tests that run cases on a real Temporal server with a real worker.

``open_world`` builds the production worker (``activities.worker_setup.build_worker``) on its own task
queue with a fresh, seeded SQLite commerce database and the real commerce MCP server over stdio. The
model provider is the rehearsal model unless ``model_settings`` names another (e.g. the scripted
provider of ``tests/adversarial``). ``history_text`` decodes a workflow history for greps.
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import Session, select
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from activities.model_settings import ModelSettings, load_model_settings
from activities.worker_setup import Cleanup, build_worker
from commerce_server.db import OrderRow, RefundRow, TicketRow, make_engine
from commerce_server.seed import seed_fixture
from contracts.case import TERMINAL_STATUSES, CaseInput, CaseOptions, CaseStatus, CaseView
from contracts.identity import resolve_profile
from contracts.knowledge import Language
from contracts.names import WORKFLOW_NAME


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

    async def settled(self, handle: WorkflowHandle, timeout: float = 60) -> CaseView:
        """Wait until the case waits for a reviewer (record written) or the workflow has ended."""
        view = await self.wait_for(handle, lambda v: v.status is not CaseStatus.RUNNING and v.record_attempted, timeout)
        if view.status in TERMINAL_STATUSES:
            return await handle.result()
        return view

    def order(self, order_id: str) -> OrderRow:
        with Session(self.engine) as session:
            return session.exec(select(OrderRow).where(OrderRow.order_id == order_id)).one()

    def refund_records(self) -> list[RefundRow]:
        with Session(self.engine) as session:
            return list(session.exec(select(RefundRow)).all())

    def tickets(self) -> list[TicketRow]:
        with Session(self.engine) as session:
            return list(session.exec(select(TicketRow)).all())


async def open_world(
    client: Client, state_dir: Path, *, model_settings: ModelSettings | None = None
) -> tuple[CaseWorld, Worker, Cleanup]:
    """A seeded world and its (not yet running) worker; the rehearsal model unless ``model_settings``."""
    state_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(f"sqlite:///{state_dir / 'commerce.db'}")
    seed_fixture(engine)
    task_queue = f"support-cases-test-{uuid.uuid4().hex[:8]}"
    worker, cleanup = build_worker(
        client,
        state_dir,
        task_queue=task_queue,
        model_settings=model_settings or load_model_settings({}),
    )
    return CaseWorld(client, state_dir, task_queue, engine), worker, cleanup


def history_text(history) -> str:
    """Every string in a workflow history, with JSON payloads decoded (they are base64 on the wire)."""
    parts: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, str) and "metadata" in node:
                try:
                    parts.append(base64.b64decode(data).decode("utf-8", "replace"))
                except ValueError:
                    parts.append(data)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str):
            parts.append(node)

    walk(json.loads(history.to_json()))
    return "\n".join(parts)

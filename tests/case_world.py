"""Shared helpers for tests that run cases on a real Temporal server with a real worker.

``open_world`` builds the production worker (``case_worker.build_worker``) on its own task
queue with a fresh, seeded SQLite commerce database and the real commerce MCP server over stdio; the
worker runs as this checkout's version of the Worker Deployment, as production's does, and entering
it makes that version current (:class:`RoutedWorker`). The
model provider is the rehearsal model unless ``model_settings`` names another (e.g. the scripted
provider of ``tests/adversarial``). ``history_text`` decodes a workflow history for greps.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from sqlalchemy import Engine
from sqlmodel import Session, select
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker
from temporalio.workflow import NondeterminismError

from activities.model.model_settings import ModelSettings, load_model_settings
from case_client import CaseClient
from case_client.deployment import make_current, release
from case_history.trail import local_activity
from case_worker import Cleanup, build_worker
from commerce_server.db import OrderRow, RefundRow, TicketRow, make_engine
from commerce_server.seed import seed_fixture
from contracts.case import CaseEvent, CaseView
from contracts.knowledge import Language
from contracts.names import QueryName
from contracts.payload_codec import CASE_DATA_CONVERTER, decode_payload_sync
from keystore import demo_identity
from tests.credentials_support import applicant_token, install_signing_keys


async def connect_case_client(address: str) -> Client:
    """A client of the dev server at ``address`` with the case payload codec, as production's, once the
    server accepts one (it may still be starting)."""
    for _ in range(50):
        try:
            return await Client.connect(address, data_converter=CASE_DATA_CONVERTER)
        except RuntimeError:
            await asyncio.sleep(0.2)
    raise RuntimeError(f"Temporal dev server at {address} never accepted a client")


@dataclass
class CaseWorld:
    """One worker, one task queue, one commerce database."""

    client: Client
    state_dir: Path
    task_queue: str
    engine: Engine

    @property
    def cases(self) -> CaseClient:
        """The case client on this world's task queue (what every caller uses to start and wait)."""
        return CaseClient.for_client(self.client, task_queue=self.task_queue, issuer=applicant_token)

    async def start(
        self, question: str, *, profile: str = "alice", language: Language = Language.EN, ttl: int = 900
    ) -> WorkflowHandle:
        case = await self.cases.start(demo_identity(profile), question, language=language, ttl_seconds=ttl)
        return case.workflow

    async def wait_for(self, handle: WorkflowHandle, done: Callable[[CaseView], bool], timeout: float = 60) -> CaseView:
        return await self.cases.open(handle.id).wait_for(done, timeout=timeout, poll_seconds=0.2)

    async def settled(self, handle: WorkflowHandle, timeout: float = 60) -> CaseView:
        """Wait until the case waits for a reviewer (record written) or the workflow has ended."""
        return await self.cases.open(handle.id).settled(timeout=timeout, poll_seconds=0.2)

    def order(self, order_id: str) -> OrderRow:
        with Session(self.engine) as session:
            return session.exec(select(OrderRow).where(OrderRow.order_id == order_id)).one()

    def refund_records(self) -> list[RefundRow]:
        with Session(self.engine) as session:
            return list(session.exec(select(RefundRow)).all())

    def tickets(self) -> list[TicketRow]:
        with Session(self.engine) as session:
            return list(session.exec(select(TicketRow)).all())


class RoutedWorker:
    """A versioned worker that, once entered (``async with``), is its deployment's current version, so
    the cases a test starts are routed to it; leaving it shuts the worker down."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    async def __aenter__(self) -> Worker:
        await self.worker.__aenter__()
        config = self.worker.config()
        deployment = config.get("deployment_config")
        if deployment is not None:
            try:
                await make_current(config["client"], deployment.version)
            except BaseException:
                await self.worker.__aexit__(None, None, None)
                raise
        return self.worker

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.worker.__aexit__(*exc_info)


REPLAY_STRESS_ENV = "SUPPORT_REPLAY_STRESS"
"""``SUPPORT_REPLAY_STRESS=1`` (``make test`` and ``make replay-stress`` run with it): every worker a
case world builds keeps no workflow in its cache, so every workflow task replays the case's whole
history first, and a nondeterminism error fails the case instead of retrying its task forever
(tests/e2e/test_replay_stress.py shows both on a workflow that changes its mind)."""


def stress_options(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """The worker options of the replay-stress run (none outside it): no cached workflows, and a
    nondeterminism error fails the workflow, so a test sees a failed case rather than a stalled one."""
    if environ.get(REPLAY_STRESS_ENV, "").strip() != "1":
        return {}
    return {"max_cached_workflows": 0, "workflow_failure_exception_types": [NondeterminismError]}


async def open_world(
    client: Client, state_dir: Path, *, model_settings: ModelSettings | None = None, directory: str | None = None
) -> tuple[CaseWorld, RoutedWorker, Cleanup]:
    """A seeded world and its (not yet running) worker; the rehearsal model unless ``model_settings``; the
    test session's directory unless ``directory`` (a file) names another."""
    state_dir.mkdir(parents=True, exist_ok=True)
    install_signing_keys(state_dir)  # starter.py run on this state dir signs as the tests do
    engine = make_engine(f"sqlite:///{state_dir / 'commerce.db'}")
    seed_fixture(engine)
    task_queue = f"support-cases-test-{uuid.uuid4().hex[:8]}"
    worker, cleanup = build_worker(
        client,
        state_dir,
        task_queue=task_queue,
        model_settings=model_settings or load_model_settings({}),
        deployment=release().version,
        directory=directory,
        **stress_options(),
    )
    return CaseWorld(client, state_dir, task_queue, engine), RoutedWorker(worker), cleanup


async def scheduled_activity_types(handle: WorkflowHandle) -> list[str]:
    """The activity types the workflow ran, regular (scheduled) or local (a marker), in history order."""
    names: list[str] = []
    async for event in handle.fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            names.append(event.activity_task_scheduled_event_attributes.activity_type.name)
        elif (local := local_activity(event)) is not None:
            names.append(local.activity_type)
    return names


async def event_details(handle: WorkflowHandle, kind: str) -> list[str]:
    """The details of a case's events of ``kind``, in order (the workflow's ``events`` query)."""
    events = await handle.query(QueryName.EVENTS, result_type=list[CaseEvent])
    return [event.detail for event in events if event.kind == kind]


def history_text(history) -> str:
    """Every string in a workflow history, with payloads decoded: base64 on the wire, and the case
    codec's compressed ones (``binary/zlib``, :mod:`contracts.payload_codec`) decompressed, so a grep
    for a secret sees what a compressed payload holds."""
    return json_texts(json.loads(history.to_json()), lambda payload: [payload_text(payload)])


def json_texts(document: Any, payload_texts: Callable[[dict], Iterable[str]]) -> str:
    """Every string in a JSON ``document``; a payload (a dict with ``metadata`` and base64 ``data``)
    contributes ``payload_texts(payload)`` instead of its raw data, whose base64 is noise in which a
    short needle ("bob") can occur by chance."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            is_payload = isinstance(node.get("data"), str) and "metadata" in node
            if is_payload:
                parts.extend(payload_texts(node))
            for key, value in node.items():
                if not (is_payload and key == "data"):
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str):
            parts.append(node)

    walk(document)
    return "\n".join(parts)


def payload_text(node: dict) -> str:
    """The data of a payload as ``WorkflowHistory.to_json()`` writes it (base64), decompressed when
    the case codec compressed it; the base64 itself when it does not decode."""
    try:
        payload = decode_payload_sync(json_format.ParseDict(node, Payload(), ignore_unknown_fields=True))
    except (ValueError, json_format.ParseError):
        return str(node.get("data", ""))
    return payload.data.decode("utf-8", "replace")

"""A whole throwaway case stack in one context manager, for scripts/record_histories.py, the benchmarks
and tests: a dev server, a seeded SQLite commerce database, demo keys and an in-process worker with
the rehearsal model."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio.client import Client

from devstack.servers import start_dev_server

if TYPE_CHECKING:
    from case_client import CaseClient
    from keystore.signers import KeyFileSigner


class WorkerSlot:
    """The stack's one in-process worker, which a test may stop (its cases wait in Temporal) and start
    again as the same build."""

    def __init__(self, make: Callable[[], AbstractAsyncContextManager[object]]) -> None:
        self._make = make
        self._running: AsyncExitStack | None = None

    async def start(self) -> None:
        if self._running is None:
            running = AsyncExitStack()
            await running.enter_async_context(self._make())
            self._running = running

    async def stop(self) -> None:
        running, self._running = self._running, None
        if running is not None:
            await running.aclose()


@dataclass(frozen=True)
class RehearsalStack:
    """What :func:`rehearsal_stack` yields: the client, the worker's task queue, and the state dir whose
    demo keys the worker and its commerce server verify credentials with."""

    client: Client
    task_queue: str
    state_dir: Path
    worker: WorkerSlot | None = field(default=None, repr=False, compare=False)

    @asynccontextmanager
    async def worker_stopped(self) -> AsyncIterator[None]:
        """No worker runs within the block (an outage: cases wait in Temporal); the same build after it."""
        assert self.worker is not None, "this stack has no worker of its own"
        await self.worker.stop()
        try:
            yield
        finally:
            await self.worker.start()

    @property
    def signer(self) -> KeyFileSigner:
        """Signs as the login service (applicant tokens) and as each reviewer, with this stack's keys."""
        from keystore.signers import KeyFileSigner

        return KeyFileSigner(self.state_dir)

    @property
    def cases(self) -> CaseClient:
        """The case client on the worker's task queue; every case it starts carries a signed applicant token."""
        from case_client import CaseClient

        return CaseClient.for_client(self.client, task_queue=self.task_queue, issuer=self.signer.applicant_token)


def seeded_state_dir(state_dir: Path) -> Path:
    """``state_dir`` with demo keys and a commerce database (SQLite) seeded from the fictional fixture."""
    from commerce_server import make_engine, seed_fixture
    from keystore import create_demo_directory

    state_dir.mkdir(parents=True, exist_ok=True)
    create_demo_directory(state_dir)
    engine = make_engine(f"sqlite:///{state_dir / 'commerce.db'}")
    seed_fixture(engine)
    engine.dispose()
    return state_dir


@asynccontextmanager
async def rehearsal_stack(root: Path, **server_options: Any) -> AsyncIterator[RehearsalStack]:
    """A throwaway dev server, a seeded SQLite commerce database, demo keys and one in-process worker
    with the rehearsal model, all under ``root``; yields them as a :class:`RehearsalStack`. The worker
    runs as this checkout's version of the Worker Deployment, made current before this yields.

    The worker verifies credentials with the directory of ``root/state`` (never ``SUPPORT_DIRECTORY``
    from the environment); the commerce server it starts over stdio finds the same state dir's directory
    and keys unless ``COMMERCE_DIRECTORY`` / ``COMMERCE_SIGNING_KEY`` name others. Used by
    scripts/record_histories.py and the benchmarks; ``server_options`` go to :func:`start_dev_server`.
    """
    from activities.model.model_settings import load_model_settings
    from case_client import TemporalTarget, connect
    from case_client.deployment import release
    from case_worker import support_worker
    from keystore import directory_location

    server = start_dev_server(root / "temporal", **server_options)
    try:
        client = await connect(TemporalTarget(address=server.address))
        state_dir = seeded_state_dir(root / "state")
        task_queue = f"local-{uuid.uuid4().hex[:8]}"
        worker = WorkerSlot(
            lambda: support_worker(
                client,
                state_dir,
                task_queue=task_queue,
                model_settings=load_model_settings({}),
                directory=directory_location(state_dir, {}),
                deployment=release().version,
                set_current=True,
            )
        )
        await worker.start()
        try:
            yield RehearsalStack(client, task_queue, state_dir, worker)
        finally:
            await worker.stop()
    finally:
        server.stop()

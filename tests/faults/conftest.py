"""Fixtures for the fault tests: real worker processes, their cleanup, an in-process worker.

The Temporal dev server and its client are the session fixtures ``temporal_server`` /
``temporal_client`` of ``tests/conftest.py``.

Every process a test starts (workers, their commerce MCP servers, dedicated dev servers) is killed
by process group in a finalizer, whatever the test did.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.model.model_settings import load_model_settings
from case_worker import build_worker
from tests.faults.fault_support import FaultWorld, WorkerProcess, spawn_worker


@pytest.fixture
def fault_world(temporal_client: Client, tmp_path: Path) -> Iterator[FaultWorld]:
    world = FaultWorld.create(temporal_client, tmp_path)
    yield world
    world.engine.dispose()


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start worker processes for a test; all of them (and their commerce servers) die afterwards."""
    started: list[WorkerProcess] = []

    def start(address: str, world: FaultWorld, name: str, **options) -> WorkerProcess:
        process = spawn_worker(address, world.state_dir, world.task_queue, name=name, **options)
        started.append(process)
        return process

    yield start
    for process in started:
        process.cleanup()


@pytest.fixture
async def in_process_worker(fault_world: FaultWorld) -> AsyncIterator[FaultWorld]:
    """The production worker (build_worker) inside the test process, for the concurrency tests."""
    worker, cleanup = build_worker(
        fault_world.client,
        fault_world.state_dir,
        task_queue=fault_world.task_queue,
        model_settings=load_model_settings({}),
    )
    async with worker:
        yield fault_world
    await cleanup()

"""Workflow tests run against a real Temporal dev server and a real worker.

The dev server and its client are the session fixtures ``temporal_server`` / ``temporal_client`` of
``tests/conftest.py`` (one server for the whole run). The worker is the production one
(``worker.build_worker``) with the rehearsal model, the real commerce MCP server over
stdio and a fresh SQLite commerce database per world (``tests/case_world.py``). Each world has its own
task queue, so worlds never share a worker.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.case_world import CaseWorld, open_world

__all__ = ["CaseWorld", "open_world"]


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

"""Workflow tests run against a real Temporal dev server and a real worker.

The dev server and its client are the session fixtures ``temporal_server`` / ``temporal_client`` of
``tests/conftest.py`` (one server for the whole run). The worker is the production one
(``case_worker.build_worker``) with the rehearsal model, the real commerce MCP server over
stdio and a fresh SQLite commerce database per world (``tests/case_world.py``). Each world has its own
task queue, so worlds never share a worker.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.case_world import CaseWorld, open_world
from tests.e2e.merchant_world import ISOLATED, Merchant, running_merchant

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


@pytest.fixture
def isolated_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No directory, commerce key or database from the test session: the merchant's state dir decides."""
    for name in ISOLATED:
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
async def merchant(
    temporal_server, temporal_client: Client, tmp_path: Path, isolated_environment: None
) -> AsyncIterator[Merchant]:
    async with running_merchant(temporal_server, temporal_client, tmp_path / "merchant") as shop:
        yield shop

"""Fixtures of the release tests: a dev server of the test's own, and the worker processes it started."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.servers import DevServer, start_dev_server
from tests.faults.fault_support import WorkerProcess


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[DevServer]:
    """A dev server of this test alone: its deployment versions touch no other test's cases."""
    server = start_dev_server(tmp_path / "temporal")
    yield server
    server.stop()


@pytest.fixture
def started() -> Iterator[list[WorkerProcess]]:
    """Worker processes of the test; every one (and its commerce servers) is killed afterwards."""
    processes: list[WorkerProcess] = []
    yield processes
    for process in processes:
        process.cleanup()

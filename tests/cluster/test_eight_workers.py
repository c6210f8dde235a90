"""Eight workers of one build started at once (a rollout of several replicas, a restart under load) all
come up and poll.

Every ``python worker.py`` of one build asks the server, as it starts, which version of the Worker
Deployment is current and (``SUPPORT_SET_CURRENT_VERSION=1``, as the cluster's workers run) makes its
build current: eight at once on one dev server got ``RESOURCE_EXHAUSTED: too many requests issued to
Worker Deployment 'qinghe-support'. Please try again later`` for two to four of them, which exited 1
(issue 44, item 8). A worker the server asks to try again waits and asks again
(``case_client._busy_server.ask_until_served``); here every one of the eight must print its polling line,
none may exit, the server must list all eight as pollers of the queue, and each stops cleanly on SIGTERM.

The workers are those of ``tests/cluster/conftest.py``: one task queue, one commerce service over HTTP on
a PostgreSQL schema of the test's own (one ledger, so none refuses the others), each with its own state
dir, all of this checkout's build.
"""

from __future__ import annotations

import asyncio
import re
import signal
import time
from collections.abc import Awaitable, Callable

import pytest
from temporalio.client import Client

from case_client import live_poller_identities
from case_client.deployment import current_build_id, release
from tests.cluster.conftest import Cluster
from tests.faults.fault_support import READY_LINE, WorkerProcess, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

WORKERS = 8
START_TIMEOUT = 360.0
"""Generous: eight interpreters importing the worker at once on a 2-core machine, beside the dev server
and the commerce service, take a minute or more before the first of them asks the server anything."""
STOP_TIMEOUT = 90.0
BUILD_LINE = re.compile(r"worker: deployment '[^']+' build '([^']+)'")
ROUTE_LINE = re.compile(r"worker: build '[^']+' (?:is|made) the current version")


def _polling(workers: list[WorkerProcess]) -> bool:
    """True once every worker printed its polling line; a worker that exited fails the test at once."""
    ready = 0
    for worker in workers:
        log = worker.log()
        if worker.exited():
            raise AssertionError(
                f"{worker.log_path.stem} (pid {worker.pid}) exited with {worker.process.returncode} before or "
                f"while polling:\n{log[-3000:]}"
            )
        ready += READY_LINE in log
    return ready == len(workers)


async def test_eight_workers_of_one_build_started_at_once_all_poll(
    temporal_client: Client, cluster: Callable[[], Cluster]
) -> None:
    ours = release()
    nodes = cluster()
    began = time.monotonic()
    workers = [nodes.spawn(f"worker-{index}") for index in range(1, WORKERS + 1)]
    await wait_until(
        lambda: _polling(workers), f"{WORKERS} workers to poll {nodes.task_queue}", START_TIMEOUT, interval=0.5
    )
    polled_at = time.monotonic()

    logs = {worker.log_path.stem: worker.log() for worker in workers}
    for name, log in logs.items():
        assert BUILD_LINE.findall(log) == [ours.build_id], (name, log[-2000:])
        assert ROUTE_LINE.search(log), (name, log[-2000:])
        assert "fatal worker error" not in log and "Traceback" not in log, (name, log[-3000:])
    assert await current_build_id(temporal_client) == ours.build_id

    # The server sees all eight poll the queue (pid@host ledger=...: one identity per process).
    pids = {f"{worker.pid}@" for worker in workers}

    async def all_listed() -> bool:
        identities = await live_poller_identities(temporal_client, nodes.task_queue)
        return {identity.split("@", 1)[0] + "@" for identity in identities} >= pids

    await _until(all_listed, f"the server to list {WORKERS} pollers of {nodes.task_queue}", 60.0)
    assert not [worker.pid for worker in workers if worker.exited()]

    for worker in workers:
        worker.process.send_signal(signal.SIGTERM)
    await wait_until(
        lambda: all(worker.exited() for worker in workers), f"{WORKERS} workers to stop on SIGTERM", STOP_TIMEOUT
    )
    stopped_at = time.monotonic()
    codes = {worker.log_path.stem: worker.process.returncode for worker in workers}
    assert set(codes.values()) == {0}, codes
    assert all("worker: stopped" in worker.log() for worker in workers)
    retried = sum("asked to try again" in log or "try again later" in log for log in logs.values())
    print(
        f"\neight workers: all {WORKERS} polled {polled_at - began:.1f}s after the spawn, stopped "
        f"{stopped_at - polled_at:.1f}s after SIGTERM; {retried} logged a try-again answer"
    )


async def _until(check: Callable[[], Awaitable[bool]], what: str, timeout: float) -> None:
    """Await ``check()`` until it is true; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.5)

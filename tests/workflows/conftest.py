"""The Temporal server of the workflow tests: a dev server of their own, whose timers fire when due.

The branch tests (:mod:`tests.workflows.test_workflow_branches`) spend real retries, and a retry is a
timer on the server: this server fires those timers promptly (why and how: :func:`prompt_timer_server`).
The other suites keep the session server of ``tests/conftest.py``. The fixture keeps the name
``temporal_client``, so a test here asks for it as every other suite does and :mod:`tests.layers`
puts it in the full layer by that name.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from temporalio.client import Client

from devstack.servers import DevServer, start_dev_server
from tests.case_world import connect_case_client

TIMER_STEP = '"10ms"'
"""``history.timerProcessorMaxTimeShift`` (a JSON duration): how late a due timer may fire."""


@pytest.fixture(scope="session")
def prompt_timer_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """A dev server for the workflow tests only, started once per session, firing timers when due.

    Temporal retries a failed activity under the policy the workflow chose, after the
    ``next_retry_delay`` that the mocks' Retry-After hint asks for. A dev server as it ships fires such
    a short timer about one second late, so every retry would cost about a second whatever the hint
    (measured: five retries 50 ms apart took 5 s). The server's ``history.timerProcessorMaxTimeShift``
    ("the max shift timer processor can have") sets that second; at :data:`TIMER_STEP` the same five
    retries take about 0.3 s. This server runs the same CLI with the same case search attributes and
    only that setting changed: the same retries, attempt counts and histories, without the second each.

    Why not ``temporalio.testing.WorkflowEnvironment.start_time_skipping()``: the SDK downloads the Java
    time-skipping test server on first use, from a host this machine (and CI) cannot reach; no copy is
    cached or shipped in a package. ``start_time_skipping_v2`` (per-workflow skipping on the dev server,
    experimental in the SDK) would skip the approval wait to its expiry as soon as a case waits for a
    reviewer, and the branch tests wait on no timer but their retries, which the shorter step already
    makes prompt.
    """
    server = start_dev_server(
        tmp_path_factory.mktemp("temporal-workflows"),
        dynamic_config={"history.timerProcessorMaxTimeShift": TIMER_STEP},
    )
    yield server
    server.stop()


@pytest.fixture(scope="session")
async def temporal_client(prompt_timer_server: DevServer) -> Client:
    """A client of :func:`prompt_timer_server`, with the case payload codec (as production's)."""
    return await connect_case_client(prompt_timer_server.address)

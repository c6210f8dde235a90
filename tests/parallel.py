"""How ``make test`` spreads the suite over parallel workers (pytest-xdist, ``-n N --dist loadgroup``).

Each worker is a pytest process of its own, so the session fixtures of tests/conftest.py give every
worker its own Temporal dev server (on a free port, in the worker's own temporary directory) and its
own demo keys. Most tests go to whichever worker is free, one at a time. The suites named in
:data:`SERIAL_GROUPS` go as one unit each to a single worker, so that no two of their tests run at
the same time; the rest of the suite runs beside them on the other workers.

xdist's own ``loadgroup`` reads ``xdist_group`` markers by renaming test ids, which pytest 9 no longer
lets it do; this scheduler keeps the same scheduling (xdist's ``LoadScopeScheduling``, every test its
own unit except the grouped ones) and takes the groups from the folders instead, so a new test of a
grouped suite is grouped without a marker.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

SERIAL_GROUPS = {"browser": "browser", "cluster": "processes", "faults": "processes", "tau2": "tau2"}
"""Suites (their folder under tests/) whose tests run one at a time: headless chromium pages held to
UI timeouts; tests that start, pause and kill several worker processes and dev servers of their
own (two of them at once would starve each other on a 2-core machine; beside the rest they are fine);
and the τ²-bench evaluations, which install τ²'s own environment once, on first use."""


def serial_group(nodeid: str) -> str | None:
    """The group of :data:`SERIAL_GROUPS` the test ``nodeid`` belongs to, or None."""
    parts = nodeid.split("::", 1)[0].split("/")
    return SERIAL_GROUPS.get(parts[1]) if len(parts) > 2 and parts[0] == "tests" else None


def scheduler_class() -> type:
    """The scheduler class (xdist imported here: only a parallel run loads it; it ships no types)."""
    load_scope: Any = importlib.import_module("xdist.scheduler").LoadScopeScheduling

    class SerialGroupScheduling(load_scope):
        """xdist's scope scheduling with every test its own scope, but one scope per serial group."""

        def _split_scope(self, nodeid: str) -> str:
            return serial_group(nodeid) or nodeid

    return SerialGroupScheduling


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` schedules with :func:`scheduler_class`; any other mode is xdist's own."""
    if config.getvalue("dist") != "loadgroup":
        return None
    return scheduler_class()(config, log)

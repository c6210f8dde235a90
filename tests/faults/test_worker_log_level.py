"""The worker's log is quiet by default: its own start lines are printed, the per-activity INFO lines
(the SDK's and the activities' own) only with ``SUPPORT_LOG_LEVEL=INFO``."""

from __future__ import annotations

import re

from contracts.case import CaseStatus

INFO_LINE = re.compile(r"^\S+ \S+ INFO ", re.MULTILINE)


async def test_a_case_run_by_a_default_worker_leaves_only_its_start_lines(
    fault_world, temporal_server, workers
) -> None:
    # an empty value counts as unset (the fault workers default to INFO; this one gets the default)
    worker = await workers(temporal_server.address, fault_world, "quiet", env={"SUPPORT_LOG_LEVEL": ""}).ready()
    handle = await fault_world.start("Where is my order QH-1005?")
    view = await fault_world.settled(handle, timeout=90)
    assert view.status is CaseStatus.COMPLETED, (view.status, view.reason)
    log = worker.log()
    assert "worker: polling task queue" in log
    assert INFO_LINE.findall(log) == [], log[-3000:]
    assert "case record for" not in log

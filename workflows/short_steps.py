"""The short steps of a case, the applicant check and the read-only tools, run as local activities.

Workflow code. A short step runs inside the workflow task that asks for it and is recorded as one
``MarkerRecorded`` event (instead of three activity events and a new workflow task). Model calls, the
settlement and the case record stay regular activities. Failures arrive as
:data:`contracts.errors.ACTIVITY_FAILURES` (a local activity's non-retryable failure is not wrapped in
an ``ActivityError``).
"""

from __future__ import annotations

from typing import Any, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.names import ActivityName
    from workflows.activity_options import LocalActivityOptions

ResultT = TypeVar("ResultT")


async def execute_short_step(
    activity: ActivityName,
    arg: Any,
    *,
    result_type: type[ResultT],
    summary: str,
    local: LocalActivityOptions,
    activity_id: str | None = None,
) -> ResultT:
    """Run ``activity`` as a local activity with ``local`` options and ``activity_id``."""
    return await workflow.execute_local_activity(
        activity, arg, result_type=result_type, summary=summary, activity_id=activity_id, **local.kwargs()
    )

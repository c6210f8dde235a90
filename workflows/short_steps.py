"""The short steps of a case, the applicant check and the read-only tools, run as local activities.

Workflow code. Since patch ``short-steps-local`` a short step runs inside the workflow task that asks
for it and is recorded as one ``MarkerRecorded`` event; a case that started before the patch runs it
as a regular activity, as it did then. Failures arrive as :data:`contracts.errors.ACTIVITY_FAILURES`
either way (a local activity's non-retryable failure is not wrapped in an ``ActivityError``).
"""

from __future__ import annotations

from typing import Any, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.names import ActivityName
    from workflows import patches
    from workflows.activity_options import ActivityOptions, LocalActivityOptions

ResultT = TypeVar("ResultT")


async def execute_short_step(
    activity: ActivityName,
    arg: Any,
    *,
    result_type: type[ResultT],
    summary: str,
    regular: ActivityOptions,
    local: LocalActivityOptions,
    activity_id: str | None = None,
) -> ResultT:
    """Run ``activity`` locally (with ``local`` options and ``activity_id``) under the patch, else as a
    regular activity with ``regular`` options and Temporal's own activity id."""
    if workflow.patched(patches.SHORT_STEPS_LOCAL):
        return await workflow.execute_local_activity(
            activity, arg, result_type=result_type, summary=summary, activity_id=activity_id, **local.kwargs()
        )
    return await workflow.execute_activity(activity, arg, result_type=result_type, summary=summary, **regular.kwargs())

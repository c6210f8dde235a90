"""Where a run that resumes a carried case state came from, as the Temporal server says.

Only the case workflow's own continue-as-new may hand a waiting case to its next run. A client can make
Temporal start a run whose ``continued_run_id`` is set in other ways (a cron schedule's later runs, a
retry, a continue-as-new from a workflow of another type or task queue), each with an input the client
chose. So the run asks, before it reads or shows anything: the run it continued must be a
``SupportCaseWorkflow`` of this very task queue, closed with status ``ContinuedAsNew`` by its own code
(the close event's initiator: not a cron schedule, not a retry), which this workflow does only with the
state it verified itself.
"""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio import activity
from temporalio.api.enums.v1 import ContinueAsNewInitiator
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle, WorkflowHistoryEventFilterType
from temporalio.service import RPCError, RPCStatusCode

from activities.case.codes import CaseErrorCode
from contracts.errors import AuthorizationError, TransientError, bounded
from contracts.names import WORKFLOW_NAME, ActivityName, CaseInputRefusal
from contracts.run_origin import ContinuedRunCheck, ContinuedRunConfirmed

REFUSED = CaseInputRefusal.CARRIED_STATE_NOT_CONTINUED
"""The code of every refusal here: the run that asked refuses its carried input with it."""
NOT_ITSELF = (
    ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_RETRY,
    ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_CRON_SCHEDULE,
)


@activity.defn(name=ActivityName.CONFIRM_CONTINUED_RUN)
async def confirm_continued_run(check: ContinuedRunCheck) -> ContinuedRunConfirmed:
    """The earlier run, when it continued this case as new; else refused (authorization, not retried).

    A server that cannot answer just now is a transient error (retried by the local activity's policy)."""
    workflow_id = activity.info().workflow_id
    if not workflow_id:
        raise AuthorizationError(REFUSED, "Only a case's own run may ask where it came from.")
    handle = activity.client().get_workflow_handle(workflow_id, run_id=check.continued_run_id)
    try:
        described = await handle.describe()
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            raise AuthorizationError(REFUSED, "Temporal knows no earlier run of this case to continue from.") from None
        raise TransientError(
            CaseErrorCode.TEMPORAL_UNAVAILABLE, f"could not describe the earlier run: {bounded(error.message, 160)}"
        ) from None
    status = described.status.name if described.status is not None else "UNKNOWN"
    if described.workflow_type != WORKFLOW_NAME:
        detail = f"the earlier run is a {bounded(described.workflow_type, 60)!r} workflow, not a case"
        raise AuthorizationError(REFUSED, detail)
    if described.task_queue != check.task_queue:
        raise AuthorizationError(REFUSED, "the earlier run ran on another task queue")
    if described.status is not WorkflowExecutionStatus.CONTINUED_AS_NEW:
        detail = f"the earlier run closed {status}, not by continuing as new (a cron schedule or a retry)"
        raise AuthorizationError(REFUSED, detail)
    if not await _continued_by_itself(handle):
        raise AuthorizationError(REFUSED, "the earlier run was continued by a cron schedule or a retry, not by itself")
    return ContinuedRunConfirmed(run_id=check.continued_run_id, workflow_type=described.workflow_type, status=status)


async def _continued_by_itself(handle: WorkflowHandle) -> bool:
    """Whether the earlier run's close event (continued-as-new) is the run's own: neither a retry's nor a
    cron schedule's initiator, and no failure recorded on it (a schedule's failed run closes that way).
    The dev server leaves the initiator of a workflow's own continue-as-new unset."""
    try:
        async for event in handle.fetch_history_events(event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT):
            if not event.HasField("workflow_execution_continued_as_new_event_attributes"):
                return False
            closed = event.workflow_execution_continued_as_new_event_attributes
            return closed.initiator not in NOT_ITSELF and not closed.HasField("failure")
    except RPCError as error:
        raise TransientError(
            CaseErrorCode.TEMPORAL_UNAVAILABLE, f"could not read the earlier run's close: {bounded(error.message, 160)}"
        ) from None
    return False


async def refuse_an_earlier_use(workflow_id: str, first_run_id: str, started_at: datetime) -> None:
    """Refuse (authorization, ``case_id_reused``) a case whose workflow id had a run before this case's
    first run: a case id is used once, so an applicant token bound to it, read from the earlier case's
    history, cannot start another run of it (a retry or reset of this very case shares its first run and
    passes). ``started_at`` is this run's recorded start, which is the first run's unless this run is a
    retry or a reset: only then is the first run described. A server that cannot answer is transient."""
    client = activity.client()
    try:
        if activity.info().workflow_run_id != first_run_id:
            started_at = (await client.get_workflow_handle(workflow_id, run_id=first_run_id).describe()).start_time
        started = started_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
        query = f'WorkflowId = "{workflow_id}" AND StartTime < "{started}"'
        async for _ in client.list_workflows(query, limit=1):
            raise AuthorizationError(
                CaseErrorCode.CASE_ID_REUSED,
                "This case id was used by an earlier case; its applicant token cannot start another one.",
            )
    except RPCError as error:
        raise TransientError(
            CaseErrorCode.TEMPORAL_UNAVAILABLE,
            f"could not list the earlier runs of this case: {bounded(error.message, 160)}",
        ) from None

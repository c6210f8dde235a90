"""What a running case is doing now, read from Temporal's description of its workflow (no worker needed).

A case that takes long is usually working, not stuck: a model server on a CPU answers in minutes, a
commerce server that is down is retried. ``DescribeWorkflowExecution`` says which step is in flight
(the pending activities: type, attempt, last failure, times) and whether a workflow task waits for a
worker or is being run by one. :func:`case_work` turns that into a :class:`CaseWork`, and
:meth:`CaseWork.sentence` into what a person reads: ``waiting for the model server (draft the answer,
attempt 2, 95 s so far)`` or ``the merchant's commerce server is not answering (pay the refund,
attempt 3: commerce_unavailable: …); the case retries``. Nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.enums.v1 import PendingActivityState, PendingWorkflowTaskState
from temporalio.api.workflow.v1 import PendingActivityInfo, PendingWorkflowTaskInfo
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse

from case_client._pollers import seconds_text
from contracts.errors import CommerceErrorCode
from contracts.names import ActivityName

STEP_WHAT: dict[str, str] = {
    ActivityName.VERIFY_APPLICANT: "check the applicant's credential",
    ActivityName.CONFIRM_CONTINUED_RUN: "confirm the continued run",
    ActivityName.READ_CASE_DIRECTORY: "read the support directory",
    ActivityName.PLAN_CASE: "plan the case",
    ActivityName.INVESTIGATE_TURN: "investigate",
    ActivityName.COMPOSE_ANSWER: "draft the answer",
    ActivityName.REVIEW_ANSWER: "review the draft",
    ActivityName.RUN_INVESTIGATION_TOOL: "a read-only tool at the commerce server",
    ActivityName.EXECUTE_REFUND: "pay the refund at the commerce server",
    ActivityName.CLOSE_REFUND_PROPOSAL: "close the refund proposal at the commerce server",
    ActivityName.CLOSE_ACTION_PROPOSAL: "close the action proposal at the commerce server",
    ActivityName.WRITE_CASE_RECORD: "write the case record",
}
"""Each step of a case as a person names it."""
MODEL_STEPS = frozenset(
    {ActivityName.PLAN_CASE, ActivityName.INVESTIGATE_TURN, ActivityName.COMPOSE_ANSWER, ActivityName.REVIEW_ANSWER}
)
COMMERCE_OUTAGE_CODES = frozenset(
    {CommerceErrorCode.COMMERCE_UNAVAILABLE, CommerceErrorCode.COMMERCE_TIMEOUT, CommerceErrorCode.DATABASE_UNAVAILABLE}
)
"""The transient codes that mean the merchant's commerce server (or its database) is not answering."""


class StepState(StrEnum):
    SCHEDULED = "scheduled"
    """Waiting for a worker to take it (or for its next attempt's back-off to pass)."""
    RUNNING = "running"


@dataclass(frozen=True)
class PendingStep:
    """One activity of the case in flight."""

    activity: str
    state: StepState
    attempt: int
    seconds: float | None
    """For a running step, how long its attempt has run; for a scheduled one, how long it has waited."""
    last_failure: str | None = None
    """The previous attempt's failure as the activity reported it (``code: message``)."""

    @property
    def what(self) -> str:
        return STEP_WHAT.get(self.activity, self.activity)

    @property
    def failure_code(self) -> str | None:
        return self.last_failure.split(":", 1)[0].strip() if self.last_failure else None

    @property
    def commerce_outage(self) -> bool:
        return self.failure_code in COMMERCE_OUTAGE_CODES

    def sentence(self) -> str:
        so_far = f", {seconds_text(self.seconds)} so far" if self.seconds is not None else ""
        if self.commerce_outage:
            return (
                f"the merchant's commerce server is not answering ({self.what}, attempt {self.attempt}: "
                f"{self.last_failure}); the case retries"
            )
        detail = f"{self.what}, attempt {self.attempt}{so_far}"
        if self.state is StepState.SCHEDULED and self.attempt > 1:
            detail = f"{self.what}, attempt {self.attempt} waits to start{so_far}"
        if self.last_failure:
            detail += f"; the last attempt: {self.last_failure}"
        if self.activity in MODEL_STEPS:
            return f"waiting for the model server ({detail})"
        return f"running a step: {detail}"


@dataclass(frozen=True)
class PendingTask:
    """The case's workflow task in flight: the workflow's own next step, run by a worker."""

    state: StepState
    seconds: float
    """How long it has waited for a worker (scheduled) or run in one (running)."""
    attempt: int = 1
    """Above 1, the worker failed this task before (a bug or a broken deployment: see its log)."""


@dataclass(frozen=True)
class CaseWork:
    """What a running case is doing now."""

    task_queue: str = ""
    """The task queue the case's workflow tasks go to (the one whose pollers matter)."""
    steps: tuple[PendingStep, ...] = ()
    task: PendingTask | None = None
    build_id: str | None = None
    """The worker build the case is pinned to, if any: only its workers can run it."""

    @property
    def commerce_outage(self) -> PendingStep | None:
        return next((step for step in self.steps if step.commerce_outage), None)

    @property
    def unclaimed_seconds(self) -> float | None:
        """How long the case's next workflow task has waited for a worker to take it; None if none waits."""
        if self.task is None or self.task.state is not StepState.SCHEDULED:
            return None
        return self.task.seconds

    def sentence(self) -> str:
        """The one thing a person most needs to know: an outage first, then a step, then the task."""
        outage = self.commerce_outage
        if outage is not None:
            return outage.sentence()
        if self.steps:
            return "; ".join(step.sentence() for step in self.steps[:2])
        if self.task is not None and self.task.attempt > 1:
            return (
                f"the worker failed the case's next step {self.task.attempt - 1} time(s) and it is tried again "
                f"(attempt {self.task.attempt}); the worker's log says why"
            )
        if self.task is not None and self.task.state is StepState.RUNNING:
            return (
                "the worker is running the case's next step (the applicant check, or read-only tools at "
                f"the commerce server), {seconds_text(self.task.seconds)} so far"
            )
        if self.task is not None:
            return f"waiting for a worker to take the case's next step, {seconds_text(self.task.seconds)} so far"
        return "waiting for a reviewer, a timer or a message (no step is running)"


def _age(stamp: Timestamp, now: float) -> float | None:
    if not stamp.seconds and not stamp.nanos:
        return None
    return max(0.0, now - stamp.ToNanoseconds() / 1e9)


def pending_step(info: PendingActivityInfo, *, now: float) -> PendingStep:
    running = info.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
    since = _age(info.last_started_time, now) if running else _age(info.scheduled_time, now)
    failure = info.last_failure.message if info.HasField("last_failure") else ""
    return PendingStep(
        activity=info.activity_type.name,
        state=StepState.RUNNING if running else StepState.SCHEDULED,
        attempt=max(1, info.attempt),
        seconds=since,
        last_failure=" ".join(failure.split())[:300] or None,
    )


def pending_task(info: PendingWorkflowTaskInfo, *, now: float) -> PendingTask:
    running = info.state == PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED
    if running:
        since = _age(info.started_time, now)
    else:  # the original time: a task moved from a dead worker's sticky queue is scheduled anew
        since = _age(info.original_scheduled_time, now) or _age(info.scheduled_time, now)
    return PendingTask(StepState.RUNNING if running else StepState.SCHEDULED, since or 0.0, max(1, info.attempt))


def case_work(raw: DescribeWorkflowExecutionResponse, *, now: float) -> CaseWork:
    """What the described case is doing ``now`` (seconds since the epoch)."""
    versioning = raw.workflow_execution_info.versioning_info
    build = versioning.deployment_version.build_id if versioning.HasField("deployment_version") else ""
    task = pending_task(raw.pending_workflow_task, now=now) if raw.HasField("pending_workflow_task") else None
    return CaseWork(
        task_queue=raw.execution_config.task_queue.name,
        steps=tuple(pending_step(info, now=now) for info in raw.pending_activities),
        task=task,
        build_id=build or None,
    )

"""Following a case: a busy worker is waited for, an absent one is said at once, and a wait that runs
out names what the case is doing (a slow model server, a commerce outage), never "check the worker".

Doubles stand in for Temporal (the reads of :class:`case_client._following.CaseProbe`) and for time
(a clock that the sleep double advances), so nothing waits and nothing connects."""

from __future__ import annotations

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.common.v1 import ActivityType
from temporalio.api.deployment.v1 import WorkerDeploymentOptions
from temporalio.api.enums.v1 import PendingActivityState, PendingWorkflowTaskState
from temporalio.api.failure.v1 import Failure
from temporalio.api.taskqueue.v1 import PollerInfo
from temporalio.api.workflow.v1 import PendingActivityInfo, PendingWorkflowTaskInfo
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse

from case_client._following import (
    UNCLAIMED_SECONDS,
    CaseProbe,
    WaitCode,
    Waiting,
    follow_until_settled,
    worker_presence,
)
from case_client._pollers import Poller, QueuePollers, WorkerPresence, pollers_from
from case_client._progress import CaseWork, PendingStep, PendingTask, StepState, case_work
from case_client._reading import QueryUnanswered
from contracts.case import CaseStatus, CaseView
from contracts.errors import TransientError
from contracts.names import ActivityName
from tests.reviewer_console.console_double import waiting_view

NOW = 1_800_000_000.0
QUEUE = "support-cases-test"


def stamp(seconds: float) -> Timestamp:
    result = Timestamp()
    result.FromNanoseconds(int(seconds * 1e9))
    return result


def pollers(*ages: float, build: str | None = None) -> QueuePollers:
    return QueuePollers(QUEUE, tuple(Poller(f"w{i}", age, build) for i, age in enumerate(sorted(ages))))


MODEL_STEP = PendingStep(ActivityName.COMPOSE_ANSWER, StepState.RUNNING, attempt=2, seconds=95.4)
OUTAGE = "commerce_unavailable: The commerce server is unavailable (Connection refused)."
REFUND_STEP = PendingStep(ActivityName.EXECUTE_REFUND, StepState.SCHEDULED, attempt=3, seconds=4, last_failure=OUTAGE)


# --- who polls: present, busy, absent, stopped ---


def test_a_worker_seen_within_the_fresh_window_is_there_and_one_seen_long_ago_is_not() -> None:
    assert worker_presence(pollers(3.0), None) is WorkerPresence.POLLING
    assert worker_presence(pollers(200.0), None) is WorkerPresence.ABSENT
    assert worker_presence(pollers(), None) is WorkerPresence.ABSENT


def test_a_ready_task_nobody_took_while_nobody_polled_since_means_the_worker_stopped() -> None:
    waiting = CaseWork(QUEUE, task=PendingTask(StepState.SCHEDULED, UNCLAIMED_SECONDS + 1))
    assert worker_presence(pollers(UNCLAIMED_SECONDS + 20), waiting) is WorkerPresence.ABSENT
    # a worker that polled after the task became ready is there (busy: its slots are full)
    assert worker_presence(pollers(2.0), waiting) is WorkerPresence.POLLING
    # a task ready only a moment ago proves nothing yet
    fresh = CaseWork(QUEUE, task=PendingTask(StepState.SCHEDULED, 1.0))
    assert worker_presence(pollers(30.0), fresh) is WorkerPresence.POLLING


def test_a_worker_running_the_case_is_busy_however_long_ago_it_polled() -> None:
    running = CaseWork(QUEUE, task=PendingTask(StepState.RUNNING, 40.0))
    assert worker_presence(pollers(60.0), running) is WorkerPresence.POLLING


def test_a_pinned_case_counts_only_the_workers_of_its_build() -> None:
    pinned = CaseWork(QUEUE, build_id="0.8.0-old")
    assert worker_presence(pollers(1.0, build="0.9.0-new"), pinned) is WorkerPresence.ABSENT
    assert worker_presence(pollers(1.0, build="0.8.0-old"), pinned) is WorkerPresence.POLLING


def test_pollers_are_merged_by_identity_freshest_first_with_their_build() -> None:
    options = WorkerDeploymentOptions(deployment_name="qinghe-support", build_id="0.8.0-abc")
    listed = [
        PollerInfo(identity="a", last_access_time=stamp(NOW - 50), deployment_options=options),
        PollerInfo(identity="a", last_access_time=stamp(NOW - 5), deployment_options=options),
        PollerInfo(identity="b", last_access_time=stamp(NOW - 300)),
    ]
    merged = pollers_from(listed, now=NOW)
    assert [(p.identity, round(p.seen_seconds_ago), p.build_id) for p in merged] == [
        ("a", 5, "0.8.0-abc"),
        ("b", 300, None),
    ]
    queue = QueuePollers(QUEUE, merged)
    assert queue.sentence() == f"a worker polled task queue {QUEUE!r} 5 s ago"
    assert QueuePollers(QUEUE, merged[1:]).sentence() == f"no worker has polled task queue {QUEUE!r} for 5 min"


# --- what the case is doing, as a person reads it ---


def test_a_slow_model_request_is_reported_as_waiting_for_the_model_server() -> None:
    assert CaseWork(QUEUE, steps=(MODEL_STEP,)).sentence() == (
        "waiting for the model server (draft the answer, attempt 2, 95 s so far)"
    )


def test_a_commerce_outage_is_named_as_one_before_anything_else() -> None:
    work = CaseWork(QUEUE, steps=(MODEL_STEP, REFUND_STEP))
    assert work.commerce_outage is REFUND_STEP
    assert work.sentence() == (
        "the merchant's commerce server is not answering (pay the refund at the commerce server, attempt 3: "
        f"{OUTAGE}); the case retries"
    )


def test_a_workflow_task_the_worker_keeps_failing_points_at_the_worker_log() -> None:
    failing = CaseWork(QUEUE, task=PendingTask(StepState.RUNNING, 3.0, attempt=4))
    assert "failed the case's next step 3 time(s)" in failing.sentence()
    assert "worker's log" in failing.sentence()


def test_the_description_of_a_workflow_becomes_its_pending_steps() -> None:
    raw = DescribeWorkflowExecutionResponse(
        pending_activities=[
            PendingActivityInfo(
                activity_type=ActivityType(name=ActivityName.EXECUTE_REFUND.value),
                state=PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
                attempt=3,
                scheduled_time=stamp(NOW - 4),
                last_failure=Failure(message=OUTAGE),
            ),
            PendingActivityInfo(
                activity_type=ActivityType(name=ActivityName.PLAN_CASE.value),
                state=PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
                attempt=1,
                scheduled_time=stamp(NOW - 130),
                last_started_time=stamp(NOW - 120),
            ),
        ],
        pending_workflow_task=PendingWorkflowTaskInfo(
            state=PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED,
            scheduled_time=stamp(NOW - 2),
            original_scheduled_time=stamp(NOW - 12),
            attempt=1,
        ),
    )
    raw.execution_config.task_queue.name = QUEUE
    work = case_work(raw, now=NOW)
    refund, plan = work.steps
    assert (refund.state, refund.attempt, refund.failure_code, refund.commerce_outage) == (
        StepState.SCHEDULED,
        3,
        "commerce_unavailable",
        True,
    )
    assert plan.sentence() == "waiting for the model server (plan the case, attempt 1, 120 s so far)"
    assert work.task_queue == QUEUE and work.unclaimed_seconds == pytest.approx(12)


# --- the wait itself ---


class Clock:
    """Time that passes only when the wait sleeps or a read takes it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


def running_view(case_id: str = "c1") -> CaseView:
    return waiting_view(case_id).model_copy(update={"status": CaseStatus.RUNNING})


def probe(
    clock: Clock,
    answers: list[CaseView | None],
    work: CaseWork,
    queue: QueuePollers,
    *,
    query_seconds: float = 5.0,
) -> CaseProbe:
    """Reads that answer from ``answers`` (None: the query times out after ``query_seconds``); the last
    answer repeats."""

    async def read(_first: bool) -> CaseView:
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if answer is None:
            clock.now += query_seconds
            raise QueryUnanswered
        return answer

    async def ended(_seconds: float) -> CaseView:
        raise AssertionError("the case did not end")

    async def describe() -> CaseWork:
        return work

    async def described_pollers(_work: CaseWork) -> QueuePollers:
        return queue

    return CaseProbe("c1", read, ended, describe, described_pollers, start_hint="python worker.py")


async def test_a_busy_worker_is_waited_for_with_progress_until_it_answers() -> None:
    clock, reports = Clock(), list[Waiting]()
    settled = waiting_view("c1").model_copy(update={"record_path": "records/c1.json"})
    answers: list[CaseView | None] = [None] * 8 + [settled]  # 8 unanswered queries: ~44 s
    work = CaseWork(QUEUE, task=PendingTask(StepState.RUNNING, 20.0))
    view = await follow_until_settled(
        probe(clock, answers, work, pollers(4.0)),
        wait_seconds=300,
        poll_seconds=0.5,
        on_waiting=reports.append,
        clock=clock,
        sleep=clock.sleep,
    )
    assert view is settled
    [report] = reports
    assert report.code is WaitCode.WORKER_BUSY and report.unanswered_seconds is not None
    assert report.sentence().startswith("case c1: the worker is busy (a worker polled task queue")


async def test_an_absent_worker_is_said_at_once_naming_how_to_start_one() -> None:
    clock = Clock()
    with pytest.raises(TransientError) as absent:
        await follow_until_settled(
            probe(clock, [None], CaseWork(QUEUE), pollers(400.0)),
            wait_seconds=300,
            poll_seconds=0.5,
            clock=clock,
            sleep=clock.sleep,
        )
    assert absent.value.code == WaitCode.WORKER_UNAVAILABLE
    assert clock.now <= 5.0  # the first unanswered query decided it
    assert absent.value.message.endswith("start one: python worker.py")


async def test_a_stopped_worker_still_listed_is_told_once_the_case_waited_unclaimed() -> None:
    clock = Clock()
    work = CaseWork(QUEUE, task=PendingTask(StepState.SCHEDULED, UNCLAIMED_SECONDS + 2))
    with pytest.raises(TransientError) as stopped:
        await follow_until_settled(
            probe(clock, [None], work, pollers(40.0)),
            wait_seconds=300,
            poll_seconds=0.5,
            clock=clock,
            sleep=clock.sleep,
        )
    assert stopped.value.code == WaitCode.WORKER_UNAVAILABLE
    assert "that worker has stopped" in stopped.value.message


async def test_a_case_still_working_at_the_deadline_says_what_it_does_and_blames_no_worker() -> None:
    clock, reports = Clock(), list[Waiting]()
    with pytest.raises(TransientError) as ran_out:
        await follow_until_settled(
            probe(clock, [running_view()], CaseWork(QUEUE, steps=(MODEL_STEP,)), pollers(1.0)),
            wait_seconds=100,
            poll_seconds=0.5,
            on_waiting=reports.append,
            clock=clock,
            sleep=clock.sleep,
        )
    assert ran_out.value.code == WaitCode.CASE_WORKING
    assert ran_out.value.message == (
        "case c1: still working after 100 s: waiting for the model server (draft the answer, attempt 2, 95 s so far)"
    )
    assert "worker" not in ran_out.value.message
    assert [report.code for report in reports] == [WaitCode.CASE_WORKING] * 3  # at 30, 60 and 90 s


async def test_a_commerce_outage_at_the_deadline_is_named_as_one() -> None:
    clock = Clock()
    with pytest.raises(TransientError) as outage:
        await follow_until_settled(
            probe(clock, [running_view()], CaseWork(QUEUE, steps=(REFUND_STEP,)), pollers(1.0)),
            wait_seconds=10,
            poll_seconds=0.5,
            clock=clock,
            sleep=clock.sleep,
        )
    assert outage.value.code == WaitCode.COMMERCE_UNAVAILABLE
    assert outage.value.message.startswith("case c1: the merchant's commerce server is not answering (")
    assert "check worker.py" not in outage.value.message


async def test_a_read_with_patience_returns_the_first_answer() -> None:
    clock = Clock()
    running = running_view()
    view = await follow_until_settled(
        probe(clock, [None, running], CaseWork(QUEUE), pollers(1.0)),
        wait_seconds=60,
        poll_seconds=0.5,
        done=lambda _view: True,
        clock=clock,
        sleep=clock.sleep,
    )
    assert view is running


def test_a_report_without_a_slow_query_is_the_case_working() -> None:
    report = Waiting("c1", 31.0, CaseWork(QUEUE, steps=(MODEL_STEP,)))
    assert report.code is WaitCode.CASE_WORKING
    assert report.sentence() == (
        "case c1: still working after 31 s: waiting for the model server (draft the answer, attempt 2, 95 s so far)"
    )

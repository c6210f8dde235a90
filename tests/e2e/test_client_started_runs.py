"""Runs a client makes Temporal start with a carried case state, other than the case's own
continue-as-new: a cron schedule's runs (each refused at once, whatever its input), a retry of a run,
a continue-as-new from a workflow of another type. Each is refused before it reads or shows anything,
and a reviewer's approval, through the run or straight to the commerce server with the applicant token
copied from the customer's earlier case, pays nothing. And a case queued while no worker runs goes on
when one returns, though its applicant token expired meanwhile.

Real parts: the production worker, a real Temporal dev server, the commerce MCP server over stdio on a
seeded SQLite ledger. Applicant tokens that must expire during a test are issued with a lifetime of a
few seconds (the issuer's lifetime, not the clock, is shortened).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jwt
import pytest
from temporalio import workflow
from temporalio.api.failure.v1 import Failure
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowHistoryEventFilterType,
)
from temporalio.common import RetryPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from case_client import CaseClient
from case_worker import Cleanup
from contracts.case import CaseStatus, CaseView
from contracts.case_input import CaseInput
from contracts.identity import Identity
from contracts.names import CASE_INPUT_REFUSED, WORKFLOW_NAME, workflow_id
from keystore import demo_identity
from tests.case_world import CaseWorld, RoutedWorker, open_world
from tests.credentials_support import signed_review, use_test_keys
from tests.e2e.test_forged_runs import (
    approval_of,
    assert_read_and_showed_nothing,
    forged_case_of,
    pay_straight,
    started_input,
    waiting_refund,
)
from tests.faults.fault_support import wait_until

BOB = demo_identity("bob")
REFUSED_WITHIN_SECONDS = 20
CRON_EVERY_MINUTE = "* * * * *"


def short_lived_issuer(lifetime: timedelta):
    """The built-in issuer with a lifetime of ``lifetime``: tokens that expire while a test waits."""

    def issue(identity: Identity, case_id: str) -> str:
        return use_test_keys().applicant_token(identity, case_id, lifetime=lifetime)

    return issue


async def run_refused(
    handle: WorkflowHandle, prefix: str, *, within: float = REFUSED_WITHIN_SECONDS
) -> ApplicationError:
    """This very run (not the runs after it) ends failed as ``case_input_refused`` with ``prefix``."""
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(follow_runs=False), within)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == CASE_INPUT_REFUSED, cause
    assert cause.message.startswith(prefix), cause.message
    assert cause.non_retryable
    return cause


async def cron_run_failure(handle: WorkflowHandle, *, within: float) -> Failure:
    """How one run of a cron schedule failed: Temporal closes it as continued-as-new (the schedule's next
    run) and records the run's failure on that event."""

    async def closed() -> bool:
        return (await handle.describe()).status is not WorkflowExecutionStatus.RUNNING

    await wait_until(closed, "the cron schedule's run", timeout=within)
    async for event in handle.fetch_history_events(event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT):
        return event.workflow_execution_continued_as_new_event_attributes.failure
    raise AssertionError("the cron run has no close event")


@pytest.fixture
async def idle_world(temporal_client: Client, tmp_path: Path) -> AsyncIterator[tuple[CaseWorld, RoutedWorker]]:
    """A world whose worker is not running until the test enters it: the outage before it."""
    case_world, worker, cleanup = await open_world(temporal_client, tmp_path / "state")
    yield case_world, worker
    await _close(case_world, cleanup)


async def _close(case_world: CaseWorld, cleanup: Cleanup) -> None:
    await cleanup()
    case_world.engine.dispose()


# --- a cron schedule -----------------------------------------------------------------------------


async def test_every_run_of_a_cron_schedule_is_refused_and_pays_nothing(world: CaseWorld) -> None:
    forged, bobs = await forged_case_of(world)
    handle = await world.client.start_workflow(
        WORKFLOW_NAME,
        forged,
        id=workflow_id(forged.case_id),
        task_queue=world.task_queue,
        cron_schedule=CRON_EVERY_MINUTE,
        result_type=CaseView,
    )
    try:
        first_run = handle.result_run_id
        assert first_run is not None
        first = world.client.get_workflow_handle(handle.id, run_id=first_run, result_type=CaseView)
        # A cron schedule's first run waits for the next minute; every run carries the schedule (the
        # later ones also continued_run_id, which the check before release 0.7 took for continue-as-new).
        failure = await cron_run_failure(first, within=90)
        assert failure.application_failure_info.type == CASE_INPUT_REFUSED, failure
        assert failure.message.startswith("cron_schedule_refused: "), failure.message
        assert failure.application_failure_info.non_retryable
        await assert_read_and_showed_nothing(first)
    finally:
        await world.client.get_workflow_handle(handle.id).terminate("test over")

    # Had a reviewer been shown it and approved, the commerce server still refuses: bob's token is for
    # his own case, not this one.
    assert forged.carried is not None and forged.carried.proposal is not None
    bobs_token = (await started_input(world.cases.open(bobs.case_id).workflow)).applicant_token
    refused = await pay_straight(world, approval_of(forged.carried.proposal, applicant_token=bobs_token))
    assert refused.code == "applicant_unverified" and "token_for_another_case" in refused.message
    assert world.order("QH-2001").refunded_cents == 0 and world.refund_records() == []


# --- a continue-as-new from a workflow of another type --------------------------------------------


@workflow.defn(name="RelayIntoACase", sandboxed=False)
class RelayIntoACase:
    """A namespace writer's own workflow, on its own task queue and worker, that continues as new into
    the case workflow on the case task queue with a hand-made carried state."""

    @workflow.run
    async def run(self, forged: CaseInput, task_queue: str) -> None:
        workflow.continue_as_new(args=[forged], workflow=WORKFLOW_NAME, task_queue=task_queue)


async def test_a_continue_as_new_from_another_workflow_type_is_refused_and_shows_nothing(world: CaseWorld) -> None:
    forged, _ = await forged_case_of(world)
    relay_queue = f"relay-{uuid.uuid4().hex[:8]}"
    async with Worker(world.client, task_queue=relay_queue, workflows=[RelayIntoACase]):
        relay = await world.client.start_workflow(
            "RelayIntoACase",
            args=[forged, world.task_queue],
            id=workflow_id(forged.case_id),
            task_queue=relay_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )

        async def relayed() -> bool:
            return (await world.client.get_workflow_handle(relay.id).describe()).run_id != relay.result_run_id

        await wait_until(relayed, "the relay's continue-as-new", timeout=30)
    case_run = (await world.client.get_workflow_handle(relay.id).describe()).run_id
    case = world.client.get_workflow_handle(relay.id, run_id=case_run, result_type=CaseView)
    cause = await run_refused(case, "carried_state_not_continued: ")
    assert "'RelayIntoACase' workflow, not a case" in cause.message
    with pytest.raises(Exception, match=CASE_INPUT_REFUSED):
        await case.query("status")
    assert world.order("QH-2001").refunded_cents == 0 and world.refund_records() == []


# --- a retry of a run ----------------------------------------------------------------------------


async def test_a_retry_of_a_run_never_resumes_a_carried_state(
    idle_world: tuple[CaseWorld, RoutedWorker], world: CaseWorld
) -> None:
    """The first attempt times out while no worker serves its task queue; Temporal starts the retry with
    ``continued_run_id`` set; the worker that then returns refuses it at once."""
    idle, worker = idle_world
    forged, _ = await forged_case_of(world)  # bob's proposal from a running world
    handle = await idle.client.start_workflow(
        WORKFLOW_NAME,
        forged,
        id=workflow_id(forged.case_id),
        task_queue=idle.task_queue,
        run_timeout=timedelta(seconds=4),
        retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=2),
        result_type=CaseView,
    )
    first_run = handle.result_run_id

    async def retried() -> bool:
        return (await idle.client.get_workflow_handle(handle.id).describe()).run_id != first_run

    await wait_until(retried, "the retry of the timed-out first attempt", timeout=60)
    second_run = (await idle.client.get_workflow_handle(handle.id).describe()).run_id
    async with worker:
        second = idle.client.get_workflow_handle(handle.id, run_id=second_run, result_type=CaseView)
        cause = await run_refused(second, "carried_state_not_continued: ")
        await assert_read_and_showed_nothing(second)
    first = await idle.client.get_workflow_handle(handle.id, run_id=first_run).describe()
    assert first.status is WorkflowExecutionStatus.TIMED_OUT, first.status
    assert "only Temporal's continue-as-new" in cause.message


# --- a token copied from an earlier case ---------------------------------------------------------


async def test_an_applicant_token_copied_from_an_earlier_case_pays_no_later_run(world: CaseWorld) -> None:
    """Bob's earlier case C closed; his token (bound to case-C) is copied from its history once it has
    expired. A new run of case-C with it is refused at the start, and an approval of a proposal made by
    such a run, sent straight to the commerce server, is refused there."""
    cases = CaseClient.for_client(
        world.client, task_queue=world.task_queue, issuer=short_lived_issuer(timedelta(seconds=3))
    )
    earlier = await cases.start(BOB, "When will QH-2005 arrive?")
    closed = await earlier.settled(timeout=90, poll_seconds=0.2)
    assert closed.status is not CaseStatus.WAITING_APPROVAL, closed.status
    case = await started_input(earlier.workflow)
    expires = case_token_expiry(case)

    async def expired() -> bool:
        return datetime.now(UTC) > expires + timedelta(seconds=1)

    await wait_until(expired, "the copied token's expiry", timeout=30)
    again = await world.client.start_workflow(
        WORKFLOW_NAME,
        case.model_copy(update={"question": "Please refund QH-2001"}),
        id=workflow_id(case.case_id),
        task_queue=world.task_queue,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        result_type=CaseView,
    )
    ended: CaseView = await again.result()
    assert (ended.status, ended.reason) == (CaseStatus.FAILED, "applicant_unverified:token_expired")
    assert (ended.order_id, ended.proposal) == (None, None)

    # A proposal of case-C made now (a run that somehow skipped the check), approved by chen: refused.
    _, other = await waiting_refund(world, "Please refund QH-2001", profile="bob")
    assert other.proposal is not None
    now = datetime.now(UTC)
    proposal = other.proposal.model_copy(update={"case_id": case.case_id, "case_started_at": now, "created_at": now})
    refused = await pay_straight(world, approval_of(proposal, applicant_token=case.applicant_token))
    assert refused.code == "applicant_unverified" and "token_expired_at_case_start" in refused.message
    assert world.order("QH-2001").refunded_cents == 0 and world.refund_records() == []


def case_token_expiry(case: CaseInput) -> datetime:
    assert case.applicant_token is not None
    claims = jwt.decode(case.applicant_token, options={"verify_signature": False})
    return datetime.fromtimestamp(claims["exp"], UTC)


# --- a worker outage -----------------------------------------------------------------------------


async def test_cases_started_while_no_worker_runs_go_on_when_one_returns(
    idle_world: tuple[CaseWorld, RoutedWorker],
) -> None:
    """Two refunds asked during an outage longer than their tokens' lifetime reach a reviewer once a
    worker runs, and one of them is approved and paid once."""
    idle, worker = idle_world
    cases = CaseClient.for_client(
        idle.client, task_queue=idle.task_queue, issuer=short_lived_issuer(timedelta(seconds=2))
    )
    first = await cases.start(demo_identity("alice"), "Please refund QH-1001", ttl_seconds=900)
    second = await cases.start(demo_identity("alice"), "Please refund QH-1002", ttl_seconds=900)
    latest = max([case_token_expiry(await started_input(handle.workflow)) for handle in (first, second)])

    async def outlived() -> bool:
        return datetime.now(UTC) > latest + timedelta(seconds=1)

    await wait_until(outlived, "the tokens' expiry during the outage", timeout=30)
    async with worker:
        views = [await handle.settled(timeout=90, poll_seconds=0.2) for handle in (first, second)]
        for view in views:
            assert view.status is CaseStatus.WAITING_APPROVAL, (view.status, view.reason)
        view = views[0]
        assert view.digest is not None and view.proposal is not None
        assert view.proposal.case_started_at is not None
        await first.workflow.execute_update("review", signed_review("chen", view.case_id, view.digest))
        paid: CaseView = await first.workflow.result()
    assert paid.status is CaseStatus.COMPLETED and paid.receipt is not None, (paid.status, paid.reason)
    assert idle.order("QH-1001").refunded_cents == 12900 and len(idle.refund_records()) == 1

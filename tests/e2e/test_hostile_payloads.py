"""Hostile ``binary/zlib`` review payloads never wedge a case (real dev server, real worker, real
commerce server over stdio).

A plain client (the pydantic data converter, no case codec) and the low-level
``SignalWorkflowExecution`` request send a payload that claims ``encoding: binary/zlib`` but holds 15
bytes of text, a 17 KB bomb, or forty bombs at once. The worker's codec turns each into its
undecodable marker, so the workflow records a malformed review (the signal) or fails the update with
``malformed_review``, and the case goes on: it answers queries, then expires on time or pays exactly
once on a proper approval, and a fresh replayer replays its history.
"""

from __future__ import annotations

import asyncio
import uuid
import zlib
from datetime import timedelta

import pytest
from temporalio.api.common.v1 import Payload, Payloads, WorkflowExecution
from temporalio.api.workflowservice.v1 import SignalWorkflowExecutionRequest
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import RawValue
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer

from case_history.trail import trail_from_history
from contracts.case import CaseStatus, CaseView, Decision
from contracts.names import REVIEW, REVIEW_REFUSED, EventKind, ReviewRefusal
from contracts.payload_codec import CASE_DATA_CONVERTER, ENCODING
from tests.case_world import CaseWorld, event_details
from tests.credentials_support import signed_review
from workflows.sandbox import workflow_runner
from workflows.support_case import SupportCaseWorkflow

REFUND_QUESTION = "Please refund QH-1001 and explain the amount and the policy"
JUNK = Payload(metadata={"encoding": ENCODING.encode()}, data=b"fifteen bytes!!")
BOMB = Payload(
    metadata={"encoding": ENCODING.encode()},
    data=zlib.compress(
        Payload(metadata={"encoding": b"json/plain"}, data=b"\x00" * (17 * 1024 * 1024)).SerializeToString(), 9
    ),
)
APPROVAL_TTL_SECONDS = 20


def _plain_client(world: CaseWorld) -> Client:
    """A client of the same server without the case codec: what anyone with the CLI's rights can send."""
    config = world.client.config()
    config["data_converter"] = pydantic_data_converter
    return Client(**config)


async def _raw_signal(world: CaseWorld, workflow_id: str, payload: Payload) -> None:
    """The ``review`` signal as a bare ``SignalWorkflowExecution`` request carrying ``payload`` as it is."""
    await world.client.workflow_service.signal_workflow_execution(
        SignalWorkflowExecutionRequest(
            namespace=world.client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=workflow_id),
            signal_name=REVIEW,
            input=Payloads(payloads=[payload]),
            identity="hostile-payload-test",
            request_id=str(uuid.uuid4()),
        )
    )


async def _hostile_reviews(world: CaseWorld, handle: WorkflowHandle) -> None:
    """Junk and a bomb by plain-client signal, by bare request and by update; each update is refused."""
    plain = _plain_client(world).get_workflow_handle(handle.id)
    await plain.signal(REVIEW, RawValue(JUNK))
    await _raw_signal(world, handle.id, BOMB)
    for payload in (JUNK, BOMB):
        with pytest.raises(WorkflowUpdateFailedError) as failed:
            await plain.execute_update(REVIEW, RawValue(payload))
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError) and cause.type == REVIEW_REFUSED
        assert cause.message.startswith(ReviewRefusal.MALFORMED_REVIEW.value), cause.message


async def _refusals_recorded(handle: WorkflowHandle, count: int) -> list[str]:
    """The case's undecodable-review events, once there are ``count`` of them (signals are asynchronous)."""
    for _ in range(300):
        events = await event_details(handle, EventKind.REVIEW_REFUSED)
        undecodable = [e for e in events if "(undecodable)" in e]
        if len(undecodable) >= count:
            return undecodable
        await asyncio.sleep(0.1)
    raise AssertionError(f"expected {count} undecodable reviews recorded, have {events}")


async def _replays(handle: WorkflowHandle) -> None:
    """A fresh replayer (the production sandbox and converter) replays the case's whole history."""
    replayer = Replayer(
        workflows=[SupportCaseWorkflow], data_converter=CASE_DATA_CONVERTER, workflow_runner=workflow_runner()
    )
    result = await replayer.replay_workflow(await handle.fetch_history(), raise_on_replay_failure=True)
    assert result.replay_failure is None


async def test_hostile_payloads_are_refused_and_the_case_still_expires_on_time(world: CaseWorld) -> None:
    handle = await world.start(REFUND_QUESTION, ttl=APPROVAL_TTL_SECONDS)
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.proposal is not None

    await _hostile_reviews(world, handle)
    undecodable = await _refusals_recorded(handle, 4)
    assert sum("via signal" in e for e in undecodable) == sum("via update" in e for e in undecodable) == 2
    assert sum("is not zlib data" in e for e in undecodable) == 2, undecodable
    assert sum("inflates past" in e for e in undecodable) == 2, undecodable
    still = await handle.query("status", result_type=CaseView)
    assert still.status is CaseStatus.WAITING_APPROVAL and world.refund_records() == []

    final: CaseView = await asyncio.wait_for(handle.result(), timeout=APPROVAL_TTL_SECONDS + 60)
    assert final.status is CaseStatus.EXPIRED and final.receipt is None
    closed = (await handle.describe()).close_time
    assert closed is not None and closed <= view.proposal.expires_at + timedelta(seconds=30), (closed, view.proposal)
    assert world.refund_records() == [] and world.order("QH-1001").refunded_cents == 0
    await _replays(handle)
    trail = trail_from_history(await handle.fetch_history())  # the audit reads past the hostile reviews
    assert trail.case.value is not None and trail.review_tokens == []


async def test_after_a_flood_of_bombs_a_proper_approval_pays_exactly_once(world: CaseWorld) -> None:
    handle = await world.start(REFUND_QUESTION)
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None

    await _hostile_reviews(world, handle)
    await asyncio.gather(*(_raw_signal(world, handle.id, BOMB) for _ in range(40)))  # 40 x 17 KB at once
    await _refusals_recorded(handle, 4 + 40)
    assert (await handle.query("status", result_type=CaseView)).status is CaseStatus.WAITING_APPROVAL

    approval = signed_review("chen", view.case_id, view.digest, Decision.APPROVE)
    await handle.execute_update(REVIEW, approval)
    final: CaseView = await asyncio.wait_for(handle.result(), timeout=60)
    assert final.status is CaseStatus.COMPLETED and final.receipt is not None
    [refund] = world.refund_records()
    assert refund.amount_cents == final.receipt.amount_cents == 12900
    assert world.order("QH-1001").refunded_cents == 12900
    await _replays(handle)

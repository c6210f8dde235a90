"""The short steps as local activities (no patch marker since release 0.2): what the history holds.

A refund case on the production worker (rehearsal model, real commerce server over stdio, the real dev
server of ``tests/conftest.py``) records its applicant check and its read-only tool calls as
``MarkerRecorded`` events inside the running workflow task, instead of three activity events and a new
workflow task each; the model calls, the case record (its input is the case log an auditor reads) and
the settlement stay regular activities. The auditor's reader finds the local steps, with a tool's
arguments taken from the model's proposed call (a local activity's input is not recorded), and the
new history replays with the production sandbox, as a file too (the way tests/histories are replayed).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from case_history.audit import PROPOSED_ARGUMENTS, audit_from_history
from case_history.trail import local_activity
from cli.audit_render import audit_lines
from contracts.case import CaseStatus, CaseView
from contracts.errors import ConfigurationError, WireCode
from contracts.model_io import ToolObservation, ToolRequest
from contracts.names import ActivityName
from tests.credentials_support import signed_review
from tests.workflows.test_workflow_branches import mocked_case
from workflows.sandbox import workflow_runner
from workflows.support_case import SupportCaseWorkflow

REFUND_QUESTION = "Please refund QH-1001 and explain the amount and the policy"
HISTORIES = Path(__file__).parents[1] / "histories" / "v0.1"
BEFORE_THE_PATCH = HISTORIES / "approved_refund-2026-12-issue10.json"
"""A refund recorded with every step a regular activity (the generation before ``short-steps-local``)."""
RECORD = ActivityName.WRITE_CASE_RECORD.value
LOCAL = {ActivityName.VERIFY_APPLICANT.value, ActivityName.RUN_INVESTIGATION_TOOL.value}
REGULAR = {
    ActivityName.PLAN_CASE.value,
    ActivityName.INVESTIGATE_TURN.value,
    ActivityName.COMPOSE_ANSWER.value,
    ActivityName.REVIEW_ANSWER.value,
    ActivityName.WRITE_CASE_RECORD.value,
}


def _steps(events: list[HistoryEvent]) -> tuple[list[str], list[str]]:
    """(regular activities scheduled, local activities recorded), by type, in history order."""
    regular, local = [], []
    for event in events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            regular.append(event.activity_task_scheduled_event_attributes.activity_type.name)
        elif (marked := local_activity(event)) is not None:
            local.append(marked.activity_type)
    return regular, local


def _until_waiting(events: list[HistoryEvent]) -> list[HistoryEvent]:
    """The events up to the first case record (written when the case starts waiting for its reviewer)."""
    for index, event in enumerate(events):
        scheduled = event.activity_task_scheduled_event_attributes
        if event.HasField("activity_task_scheduled_event_attributes") and scheduled.activity_type.name == RECORD:
            return events[: index + 1]
    raise AssertionError("no case record was written")


def _workflow_tasks(events: list[HistoryEvent]) -> int:
    return sum(1 for event in events if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)


async def _replay(history: WorkflowHistory, client: Client) -> None:
    """Replay with the production sandbox and the converter the case ran with (its client's)."""
    replayer = Replayer(
        workflows=[SupportCaseWorkflow], data_converter=client.data_converter, workflow_runner=workflow_runner()
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None


def _patch_ids(events: list[HistoryEvent]) -> list[str]:
    found = []
    for event in events:
        details = event.marker_recorded_event_attributes.details
        if event.HasField("marker_recorded_event_attributes") and "patch-data" in details:
            found.append(json.loads(details["patch-data"].payloads[0].data)["id"])
    return found


async def test_a_refund_case_runs_its_short_steps_locally_and_the_audit_reads_them(world, tmp_path) -> None:
    handle = await world.start(REFUND_QUESTION)
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None

    waiting = _until_waiting(list((await handle.fetch_history()).events))
    assert _patch_ids(waiting) == []  # release 0.2 decides no patch
    regular, local = _steps(waiting)
    assert set(local) == LOCAL and set(regular) == REGULAR, (regular, local)
    counts = Counter(local)
    assert counts[ActivityName.VERIFY_APPLICANT] == 1 and counts[ActivityName.RUN_INVESTIGATION_TOOL] >= 3
    # Fewer workflow tasks than steps: each local step ran inside a task that was running anyway.
    assert _workflow_tasks(waiting) < len(regular) + len(local)

    # Against the same refund recorded before short steps ran locally: every step was a regular activity then.
    before = _until_waiting(list(WorkflowHistory.from_json("before", json.loads(BEFORE_THE_PATCH.read_text())).events))
    old_regular, old_local = _steps(before)
    assert old_local == [] and set(old_regular) == LOCAL | REGULAR
    assert len(old_regular) == len(regular) + len(local)  # the same steps, in both histories
    assert _workflow_tasks(waiting) < _workflow_tasks(before)
    assert len(waiting) < len(before)
    print(
        f"until waiting: {len(before)} events, {_workflow_tasks(before)} workflow tasks before short-steps-local; "
        f"{len(waiting)} events, {_workflow_tasks(waiting)} workflow tasks with {len(local)} local steps"
    )

    # The audit lists the local steps: the tools with the arguments of the model's proposed calls.
    audit = audit_from_history(await handle.fetch_history())
    tools = audit.tool_calls
    assert len(tools) == counts[ActivityName.RUN_INVESTIGATION_TOOL] and all(call.local for call in tools)
    by_name = {call.tool.name: call.tool for call in tools if call.tool is not None}
    assert by_name["get_order"].arguments == {"order_id": "QH-1001"}
    assert by_name["calculate_refund"].arguments["order_id"] == "QH-1001"
    assert all(tool.ok and tool.result and tool.arguments_from == PROPOSED_ARGUMENTS for tool in by_name.values())
    [verify] = [call for call in audit.activities if call.kind == ActivityName.VERIFY_APPLICANT]
    assert verify.local and verify.outcome == "completed" and verify.note is not None and "alice" in verify.note
    assert verify.summary == "verify applicant token (alice)"
    assert [call.kind for call in audit.activities if call.kind == RECORD] == [RECORD]
    assert audit.proposal is not None and audit.proposal.digest() == view.digest  # the record is still read
    text = "\n".join(audit_lines(audit))
    assert "tool get_order         ok, local: order_id=QH-1001" in text
    assert "local: a local activity, input not recorded" in text

    # The reviewer approves; the settlement is still a regular activity, and the whole run replays.
    await handle.execute_update("review", signed_review("chen", view.case_id, view.digest))
    final: CaseView = await handle.result()
    assert final.status is CaseStatus.COMPLETED and final.receipt is not None
    history = await handle.fetch_history()
    regular, _ = _steps(list(history.events))
    assert regular.count(ActivityName.EXECUTE_REFUND) == 1
    await _replay(history, world.client)
    # ...and as a file, the way the committed histories are replayed (never written under tests/histories).
    path = tmp_path / "approved_refund-local.json"
    path.write_text(history.to_json(), encoding="utf-8")
    await _replay(WorkflowHistory.from_json(handle.id, json.loads(path.read_text(encoding="utf-8"))), world.client)


async def test_a_local_tool_failure_is_decoded_as_before_and_audited_by_its_call(temporal_client: Client) -> None:
    def token_refused(request: ToolRequest, attempt: int) -> ToolObservation:
        raise ConfigurationError(WireCode("commerce_token_rejected"), "the commerce server refused this worker's token")

    async with mocked_case(temporal_client, {ActivityName.RUN_INVESTIGATION_TOOL: token_refused}) as case:
        handle = await case.start()
        final = await case.result()
        history = await handle.fetch_history()

    assert final.status is CaseStatus.FAILED and final.reason is not None
    assert final.reason.startswith("tool_configuration:commerce_token_rejected")
    regular, local = _steps(list(history.events))
    assert ActivityName.RUN_INVESTIGATION_TOOL not in regular and ActivityName.RUN_INVESTIGATION_TOOL in local
    [failed] = [call for call in audit_from_history(history).tool_calls if call.outcome == "failed"]
    assert failed.local and failed.tool is not None and failed.tool.name == "calculate_refund"
    assert failed.tool.ok is None and failed.tool.arguments_from == PROPOSED_ARGUMENTS
    assert failed.failure is not None and "commerce_token_rejected" in failed.failure
    await _replay(history, temporal_client)

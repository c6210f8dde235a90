"""Replay committed histories of real runs: any non-deterministic change to the workflow fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from contracts.payload_codec import CASE_DATA_CONVERTER, ENCODING
from workflows.sandbox import workflow_runner
from workflows.support_case import SupportCaseWorkflow

HISTORIES = sorted((Path(__file__).parents[1] / "histories").glob("*.json"))
REQUIRED = {"approved_refund", "rejected_refund", "expired_refund", "answered_delivery", "needs_human_uncovered"}
REQUIRED_SINCE_ISSUE_7 = {
    f"{name}-2026-12-issue7"
    for name in (
        *REQUIRED,
        "refused_then_approved",  # a malformed signal and a refused update are recorded; the update fails
        "zh_order_beside_chinese",  # 请退款QH-2002并给出依据 names the order
        "review_flood-run1",  # the waiting case continues as new under a flood of malformed reviews
        "review_flood-run2",  # ...and the next run settles with the carried proposal
    )
}
REQUIRED_SINCE_ISSUE_9 = {
    f"{name}-2026-12-issue9"
    for name in (
        *(name.removesuffix("-2026-12-issue7") for name in REQUIRED_SINCE_ISSUE_7),
        "forged_then_approved",  # a forged signature and another tenant's approval refused, chen's signed one pays
        "applicant_unverified",  # no applicant token: nothing is read, the case fails with the reason
    )
}


REQUIRED_SINCE_ISSUE_10 = {name.replace("-2026-12-issue9", "-2026-12-issue10") for name in REQUIRED_SINCE_ISSUE_9}
"""Recorded with the case's metadata: step summaries, current details, the proposal and receipt in the memo."""

REQUIRED_SINCE_ISSUE_12 = {"deployed_while_waiting-2026-12-issue12"}
"""A refund that waited on the code before the ``case-metadata`` patch and settled on a later worker
(tests/deploy_upgrade): one history with both versions in it."""

REQUIRED_SINCE_ISSUE_13 = {name.replace("-2026-12-issue10", "-2026-12-issue13") for name in REQUIRED_SINCE_ISSUE_10}
"""Recorded with the short steps as local activities (``short-steps-local``) and the case payload codec:
the applicant check and the tools are markers, and payloads of 4 KiB and more are compressed."""


def test_histories_of_every_outcome_are_committed() -> None:
    """Every generation is committed: the first (before any patch), the one with the first patches, the
    one with signed credentials, the one with the case's metadata, a case deployed across versions while
    it waited, and the one with local short steps and compressed payloads."""
    expected = (
        REQUIRED
        | REQUIRED_SINCE_ISSUE_7
        | REQUIRED_SINCE_ISSUE_9
        | REQUIRED_SINCE_ISSUE_10
        | REQUIRED_SINCE_ISSUE_12
        | REQUIRED_SINCE_ISSUE_13
    )
    assert {path.stem for path in HISTORIES} >= expected


def test_the_metadata_generation_replays_the_patched_branch() -> None:
    """The metadata generation's refund history took the 'case-metadata' branch (memo with the proposal and the
    receipt) and carries a summary on every scheduled activity, so replaying it tests that code."""
    history = WorkflowHistory.from_json(
        "approved", json.loads((HISTORIES[0].parent / "approved_refund-2026-12-issue10.json").read_text())
    )
    markers = [e for e in history.events if e.HasField("marker_recorded_event_attributes")]
    patch_ids = {e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data for e in markers}
    assert any(b"case-metadata" in patch for patch in patch_ids)
    memo_keys = {
        key
        for e in history.events
        if e.HasField("workflow_properties_modified_event_attributes")
        for key in e.workflow_properties_modified_event_attributes.upserted_memo.fields
    }
    assert {"proposal", "receipt"} <= memo_keys
    scheduled = [e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")]
    assert scheduled and all(e.user_metadata.summary.data for e in scheduled)


def test_the_local_steps_generation_replays_markers_and_compressed_payloads() -> None:
    """The local-steps generation's refund history took the 'short-steps-local' branch (the applicant check and the four
    tools as local-activity markers, none scheduled) and holds compressed payloads, so replaying it
    tests that branch and the codec's decoding."""
    history = WorkflowHistory.from_json(
        "approved", json.loads((HISTORIES[0].parent / "approved_refund-2026-12-issue13.json").read_text())
    )
    markers = [
        e.marker_recorded_event_attributes for e in history.events if e.HasField("marker_recorded_event_attributes")
    ]
    patch_ids = {m.details["patch-data"].payloads[0].data for m in markers if "patch-data" in m.details}
    assert any(b"short-steps-local" in patch for patch in patch_ids)
    assert len([m for m in markers if m.marker_name == "core_local_activity"]) == 5
    scheduled = {
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    }
    assert scheduled.isdisjoint({"verify_applicant", "run_investigation_tool"})
    assert {"plan_case", "investigate_turn", "compose_answer", "review_answer", "execute_refund"} <= scheduled
    inputs = [
        payload
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        for payload in e.activity_task_scheduled_event_attributes.input.payloads
    ]
    assert any(payload.metadata.get("encoding") == ENCODING.encode() for payload in inputs)


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_recorded_history_replays_without_nondeterminism(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    history = WorkflowHistory.from_json(f"replay-{path.stem}", data)
    replayer = Replayer(
        workflows=[SupportCaseWorkflow], data_converter=CASE_DATA_CONVERTER, workflow_runner=workflow_runner()
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None

"""What a reviewer sees without running a query: the workflow's user metadata, memo and step summaries.

Read the way a person reads them: ``temporal workflow describe`` and ``temporal workflow metadata``
(the real CLI against the real dev server), and the history's events as the Web UI lists them.
"""

from __future__ import annotations

import asyncio
import json
import subprocess

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

from case_history.trail import local_activity
from contracts.case import CaseStatus, CaseView
from contracts.effect_card import ProposalForReview
from contracts.names import QueryName
from devstack.temporal_cli import temporal_cli
from tests.credentials_support import signed_review

REFUND_QUESTION = "Please refund QH-1001 and explain the amount and the policy"


async def _cli(address: str, *args: str) -> str:
    """The Temporal CLI, run off the event loop (the worker that answers its queries runs on it)."""
    done = await asyncio.to_thread(
        subprocess.run,
        [temporal_cli(), "workflow", *args, "--address", address],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout


def _payload_text(payload) -> str:
    return payload.data.decode("utf-8") if payload and payload.data else ""


async def _summaries(handle: WorkflowHandle) -> dict[str, list[str]]:
    """Summaries of activities (scheduled, or local ones' markers) and started timers, in history order."""
    found: dict[str, list[str]] = {"activity": [], "timer": [], "activity_without_summary": []}
    async for event in handle.fetch_history_events():
        summary = json.loads(_payload_text(event.user_metadata.summary) or "null")
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            found["activity" if summary else "activity_without_summary"].append(summary or name)
        elif (local := local_activity(event)) is not None:
            found["activity" if summary else "activity_without_summary"].append(summary or local.activity_type)
        elif event.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
            found["timer"].append(summary)
    return found


async def test_a_waiting_case_shows_its_computed_effect_without_a_query(world, temporal_server) -> None:
    handle = await world.start(REFUND_QUESTION)
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None and view.effect is not None
    digest = view.digest

    described = json.loads(
        await _cli(temporal_server.address, "describe", "--workflow-id", handle.id, "--output", "json")
    )
    metadata = described["executionConfig"]["userMetadata"]
    assert metadata["summary"].startswith("alice (qinghe) asks: Please refund QH-1001")
    assert "FICTIONAL" in metadata["details"]
    proposal_memo = described["workflowExecutionInfo"]["memo"]["fields"]["proposal"]
    assert "12900 cents (CNY 129.00) for QH-1001" in proposal_memo and digest in proposal_memo

    current = await _cli(temporal_server.address, "metadata", "--workflow-id", handle.id)
    for expected in (
        "12900 cents (CNY 129.00) for QH-1001",
        digest,
        "QH-1001",
        "returns-2026-09",
        "RETURNS\\:p02 Refund window and warehouse receipt",
        "min left",
    ):
        assert expected in current, expected
    assert "approval_token" in current and "review-info" in current
    assert "eyJ" not in current  # no token (a JWT starts so) is ever part of the details

    summaries = await _summaries(handle)
    assert summaries["activity_without_summary"] == []
    assert summaries["activity"][:2] == ["verify applicant token (alice)", "plan"]
    assert "get_order QH-1001" in summaries["activity"]
    assert "calculate_refund QH-1001" in summaries["activity"]
    assert any(
        s.startswith("compose answer, draft 1 (calculate_refund QH-1001 → 12900 eligible)")
        for s in summaries["activity"]
    )
    assert "independent review of draft 1" in summaries["activity"]
    assert (
        summaries["activity"][-1]
        == f"write case record: waiting_approval, proposal 12900 cents (CNY 129.00) for QH-1001, digest {digest[:12]}…"
    )
    assert len(summaries["timer"]) == 1 and summaries["timer"][0].startswith(
        "approval window: 12900 cents (CNY 129.00) for QH-1001, expires "
    )

    pending = await handle.query(QueryName.PROPOSAL, result_type=ProposalForReview)
    assert pending.digest == digest and pending.proposal.amount_cents == 12900
    assert pending.effect == view.effect

    await handle.execute_update("review", signed_review("chen", view.case_id, digest))
    final: CaseView = await handle.result()
    assert final.receipt is not None
    described = json.loads(
        await _cli(temporal_server.address, "describe", "--workflow-id", handle.id, "--output", "json")
    )
    assert final.receipt.receipt_id in described["workflowExecutionInfo"]["memo"]["fields"]["receipt"]
    summaries = await _summaries(handle)
    assert summaries["activity_without_summary"] == []
    assert any(
        s.startswith("execute_refund APR-") and s.endswith("12900 cents for QH-1001") for s in summaries["activity"]
    )
    assert summaries["activity"][-1] == (
        f"write case record: completed, receipt {final.receipt.receipt_id} (12900 cents, SIMULATED)"
    )


async def test_customer_text_is_escaped_in_the_summary(world, temporal_server) -> None:
    question = "Refund QH-9999 [click](http://evil.example) ![x](http://evil.example/x.png) <b>now</b> **urgent**"
    handle = await world.start(question)
    await world.settled(handle)
    described = json.loads(
        await _cli(temporal_server.address, "describe", "--workflow-id", handle.id, "--output", "json")
    )
    summary = described["executionConfig"]["userMetadata"]["summary"]
    details = described["executionConfig"]["userMetadata"]["details"]
    for text in (summary, details):
        assert "](" not in text and "<b>" not in text and "**urgent" not in text
        assert "\\[click\\]\\(http\\:" in text and "\\<b\\>" in text

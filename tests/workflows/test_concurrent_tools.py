"""A turn's read-only tools run together; the order they complete in changes nothing.

Two local tools of one turn, the first scripted to finish last in one case and first in the other: both
cases end with the same case state and case log, and each history replays. Also: a case started with a
forged ``Tenant`` start attribute ends with its verified tenant in its search attributes.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.worker import Replayer, Worker

from contracts import search_attributes as sa
from contracts.case import CaseEvent, CaseStatus, CaseView
from contracts.case_input import CaseInput, CaseOptions
from contracts.knowledge import Language
from contracts.model_io import InvestigateRequest, InvestigateResult, ToolObservation, ToolRequest
from contracts.names import WORKFLOW_NAME, ActivityName, EventKind
from contracts.payload_codec import CASE_DATA_CONVERTER
from keystore import demo_identity
from tests.credentials_support import applicant_token
from tests.workflows.test_workflow_branches import QUESTION, Case, MockActivities, meta, mocked_case, tool_call
from workflows.sandbox import workflow_runner
from workflows.support_case import SupportCaseWorkflow

SLOW_SECONDS = 0.5
"""How long the slow tool of a turn waits before answering (the other answers at once)."""


def two_tools_then_stop(request: InvestigateRequest, attempt: int) -> InvestigateResult:
    calls = []
    if request.turn == 1:
        calls = [
            tool_call("call-quote", "calculate_refund", order_id="QH-1001"),
            tool_call("call-search", "search_knowledge", query="refund window"),
        ]
    return InvestigateResult(
        calls=calls, content=None, finish_reason="tool_calls" if calls else "stop", meta=meta(attempt)
    )


class TimedTools(MockActivities):
    """The mocks, with the tool ``slow`` answering :data:`SLOW_SECONDS` late; ``finished`` says in
    which order the tools answered."""

    def __init__(self, slow: str) -> None:
        super().__init__({ActivityName.INVESTIGATE_TURN: two_tools_then_stop})
        self.slow = slow
        self.finished: list[str] = []

    @activity.defn(name=ActivityName.RUN_INVESTIGATION_TOOL.value)
    async def run_investigation_tool(self, request: ToolRequest) -> ToolObservation:
        if request.name == self.slow:
            await asyncio.sleep(SLOW_SECONDS)
        observation = self._answer(ActivityName.RUN_INVESTIGATION_TOOL, request)
        self.finished.append(request.name)
        return observation


async def _waiting_case(client: Client, slow: str) -> tuple[TimedTools, Case, CaseView, list[CaseEvent]]:
    mocks = TimedTools(slow)
    task_queue = f"tools-{uuid.uuid4().hex[:8]}"
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[SupportCaseWorkflow],
        activities=mocks.all(),
        workflow_runner=workflow_runner(),
    ):
        case = Case(client, task_queue, mocks)
        await case.start()
        view = await case.waiting_for_approval()
        events = await case.events()
    return mocks, case, view, events


def _comparable(view: CaseView, events: list[CaseEvent]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The state and log of a case, less what differs between any two cases (ids, times, digests)."""
    state = view.model_dump(mode="json", exclude={"case_id", "proposal", "digest", "effect", "record_path"})
    assert view.effect is not None
    state["effect"] = view.effect.model_dump(mode="json", exclude={"digest", "expires_at"})
    state["conversation"] = [entry.model_dump(mode="json", exclude={"at"}) for entry in view.conversation]
    log = [(e.kind, e.detail) for e in events if e.kind not in (EventKind.PROPOSAL_CREATED,)]
    return state, log


async def test_the_order_tools_complete_in_changes_neither_state_nor_log(temporal_client: Client) -> None:
    first_last_mocks, first_last, first_last_view, first_last_events = await _waiting_case(
        temporal_client, slow="calculate_refund"
    )
    first_first_mocks, first_first, first_first_view, first_first_events = await _waiting_case(
        temporal_client, slow="search_knowledge"
    )
    assert first_last_mocks.finished == ["search_knowledge", "calculate_refund"]  # the first listed ends last
    assert first_first_mocks.finished == ["calculate_refund", "search_knowledge"]
    a = _comparable(first_last_view, first_last_events)
    b = _comparable(first_first_view, first_first_events)
    assert a == b
    ran = [detail for kind, detail in a[1] if kind == EventKind.TOOL_RAN]
    assert ran == ["calculate_refund ok=True", "search_knowledge ok=True"]  # in the calls' order
    assert first_last_view.quote is not None and first_last_view.status is CaseStatus.WAITING_APPROVAL
    replayer = Replayer(
        workflows=[SupportCaseWorkflow], data_converter=CASE_DATA_CONVERTER, workflow_runner=workflow_runner()
    )
    for case in (first_last, first_first):
        assert case.handle is not None
        history = await case.handle.fetch_history()
        result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
        assert result.replay_failure is None


async def test_a_forged_tenant_start_attribute_is_overwritten_by_the_verified_tenant(temporal_client: Client) -> None:
    alice = demo_identity("alice")
    async with mocked_case(temporal_client) as case:
        case_id = uuid.uuid4().hex[:12]
        forged = TypedSearchAttributes(
            [
                SearchAttributePair(sa.TENANT, "another-tenant"),
                SearchAttributePair(sa.APPLICANT, "mallory"),
                SearchAttributePair(sa.CASE_STATUS, CaseStatus.QUEUED.value),
            ]
        )
        case.handle = await temporal_client.start_workflow(
            WORKFLOW_NAME,
            CaseInput(
                case_id=case_id,
                question=QUESTION,
                language=Language.EN,
                applicant=alice,
                options=CaseOptions(approval_ttl_seconds=300),
                applicant_token=applicant_token(alice, case_id),
            ),
            id=f"case-{case_id}",
            task_queue=case.task_queue,
            search_attributes=forged,
            result_type=CaseView,
        )
        view = await case.approved_result()
    assert view.status is CaseStatus.COMPLETED
    attributes = (await case.handle.describe()).typed_search_attributes
    assert attributes.get(sa.TENANT) == alice.tenant and attributes.get(sa.APPLICANT) == alice.subject
    assert attributes.get(sa.CASE_STATUS) == CaseStatus.COMPLETED.value

"""The tool calls of one investigation turn: admitted by the gates, run as activities, folded in.

The read-only tools run as local activities since patch ``short-steps-local`` (regular ones before it).

Workflow code (it schedules activities), kept apart from the workflow class so that the class reads
as the case's lifecycle. Admission is decided by :mod:`workflows.turn_admission`, what a successful
observation adds by :mod:`workflows.evidence`; this module only sequences them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.case import CaseStatus, ProposedToolCall, ToolObservation
    from contracts.errors import ACTIVITY_FAILURES, ConfigurationError, decode_activity_failure
    from contracts.names import ActivityName, EventKind, StopCode, tool_activity_id
    from contracts.tools import INVESTIGATION_TOOLS, ToolName, ToolSource
    from workflows import activity_options as options
    from workflows import patches, requests
    from workflows.case_details import tool_summary
    from workflows.case_state import CaseState
    from workflows.evidence import fold_observation
    from workflows.outcomes import CaseStopped
    from workflows.short_steps import execute_short_step
    from workflows.turn_admission import SeenCalls, admit_turn


class ToolCalls:
    """Runs the tool calls the model proposes, against one case's state."""

    def __init__(
        self, state: CaseState, record: Callable[[EventKind, str], None], upsert_attributes: Callable[[], None]
    ) -> None:
        self._s = state
        self._record = record
        self._upsert_attributes = upsert_attributes

    async def run_turn(self, calls: list[ProposedToolCall], seen: SeenCalls) -> list[ToolObservation]:
        """Admit the turn's calls, run the admitted ones together, and return one observation per call."""
        s = self._s
        assert s.plan is not None
        admission = admit_turn(calls, s.budgets, bound_order_id=s.plan.order_id, seen=seen)
        s.budgets = admission.budgets
        for verdict in admission.verdicts:
            if verdict.refusal:
                self._record(EventKind.TOOL_REFUSED, f"{verdict.call.name[:60]}: {verdict.refusal}")
        if admission.tool_budget_exhausted:
            raise CaseStopped(CaseStatus.NEEDS_HUMAN, StopCode.TOOL_BUDGET_EXHAUSTED)
        results = iter(await asyncio.gather(*(self._run_tool(call) for call in admission.admitted)))
        return [next(results) if verdict.refusal is None else verdict.refused() for verdict in admission.verdicts]

    async def _run_tool(self, call: ProposedToolCall) -> ToolObservation:
        s = self._s
        assert call.arguments is not None
        if INVESTIGATION_TOOLS[call.name].source is ToolSource.CASE:
            s.notes.append(str(call.arguments["note"]))
            self._record(EventKind.TOOL_RAN, ToolName.SAVE_CASE_NOTE)
            return ToolObservation(call_id=call.call_id, name=call.name, ok=True, result={"saved": True})
        request = requests.tool_request(s, call)
        summary = tool_summary(call.name, call.arguments)
        try:
            observation = await execute_short_step(
                ActivityName.RUN_INVESTIGATION_TOOL,
                request,
                result_type=ToolObservation,
                summary=summary,
                regular=options.TOOL,
                local=options.TOOL_LOCAL,
                activity_id=tool_activity_id(call.call_id),
            )
        except ACTIVITY_FAILURES as error:  # a local activity's failure may arrive unwrapped
            failure = decode_activity_failure(error)
            if isinstance(failure, ConfigurationError) and workflow.patched(patches.CONFIGURATION_FAILS_CASE):
                self._record(EventKind.TOOL_FAILED, f"{call.name}: {failure.reported_class}: {failure.code}")
                raise CaseStopped(CaseStatus.FAILED, StopCode.TOOL_CONFIGURATION, str(failure)) from None
            observation = ToolObservation(
                call_id=call.call_id,
                name=call.name,
                ok=False,
                error_code="tool_unavailable",
                error_message=failure.code,
            )
        self._record(
            EventKind.TOOL_RAN,
            f"{call.name} ok={observation.ok}" + (f" error={observation.error_code}" if not observation.ok else ""),
        )
        if observation.ok:
            quote = fold_observation(call.name, observation, s.facts, s.evidence)
            if quote is not None:
                s.quote = quote
                self._upsert_attributes()
        return observation

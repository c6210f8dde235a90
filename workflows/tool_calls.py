"""The tool calls of one investigation turn: admitted by the gates, run together, folded in order.

Workflow code (it schedules activities), kept apart from the workflow class so that the class reads
as the case's lifecycle. Admission is decided by :mod:`workflows.turn_admission`, what a successful
observation adds by :mod:`workflows.evidence`; this module only sequences them.

The read-only tools run as local activities, together (``asyncio.gather``). Each coroutine only runs
its activity and returns what came back; once every call of the turn has returned, the results are
folded into the case state, recorded in the case log and upserted in the calls' order (the order the
model listed them). So the order in which the activities complete changes no command and no state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.case import CaseStatus
    from contracts.case_input import CaseState
    from contracts.errors import ConfigurationError, SupportError, rebuilt_activity_failures
    from contracts.model_io import ProposedToolCall, ToolObservation
    from contracts.names import ActivityName, EventKind, StopCode, tool_activity_id
    from contracts.tools import INVESTIGATION_TOOLS, ToolName, ToolSource
    from workflows import activity_options as options
    from workflows import case_metrics, requests
    from workflows.case_details import tool_summary
    from workflows.evidence import fold_observation
    from workflows.outcomes import CaseStopped
    from workflows.short_steps import execute_short_step
    from workflows.tool_gate import ToolRefusal, requested_order_id
    from workflows.turn_admission import SeenCalls, admit_turn


@dataclass(frozen=True)
class ToolResult:
    """What one call returned: an observation, or the configuration failure that fails the case."""

    call: ProposedToolCall
    observation: ToolObservation
    configuration_failure: ConfigurationError | None = None


class ToolCalls:
    """Runs the tool calls the model proposes, against one case's state."""

    def __init__(
        self,
        state: CaseState,
        record: Callable[[EventKind, str], None],
        upsert_attributes: Callable[[], None],
        announce: Callable[[str], None] = lambda _: None,
    ) -> None:
        self._s = state
        self._record = record
        self._upsert_attributes = upsert_attributes
        self._announce = announce
        """Tells the customer's progress stream which tool runs (its name only; the order is the bound one)."""

    async def run_turn(self, calls: list[ProposedToolCall], seen: SeenCalls) -> list[ToolObservation]:
        """Admit the turn's calls, run the admitted ones together, fold their results in the calls'
        order, and return one observation per call."""
        s = self._s
        assert s.plan is not None
        admission = admit_turn(calls, s.budgets, bound_order_id=s.plan.order_id, seen=seen, case_writes=len(s.notes))
        s.budgets = admission.budgets
        for verdict in admission.verdicts:
            if verdict.refusal:
                asked = requested_order_id(verdict.call)
                detail = f"{verdict.call.name[:60]}: {verdict.refusal}"
                self._record(EventKind.TOOL_REFUSED, detail + (f" (order_id={asked})" if asked else ""))
                case_metrics.tool_call_refused(s, verdict.refusal)
        if admission.tool_budget_exhausted:
            raise CaseStopped(CaseStatus.NEEDS_HUMAN, StopCode.TOOL_BUDGET_EXHAUSTED)
        for call in admission.admitted:
            self._announce(call.name)
        results = await asyncio.gather(*(self._run_tool(call) for call in admission.admitted))
        for result in results:
            self._fold(result)
        observations = iter(result.observation for result in results)
        return [next(observations) if verdict.refusal is None else verdict.refused() for verdict in admission.verdicts]

    async def _run_tool(self, call: ProposedToolCall) -> ToolResult:
        """Run one call; it changes nothing in the case state (:meth:`_fold` does, in order)."""
        assert call.arguments is not None
        if INVESTIGATION_TOOLS[call.name].source is ToolSource.CASE:
            saved = ToolObservation(call_id=call.call_id, name=call.name, ok=True, result={"saved": True})
            return ToolResult(call, saved)
        request = requests.tool_request(self._s, call)
        try:
            with rebuilt_activity_failures():
                observation = await execute_short_step(
                    ActivityName.RUN_INVESTIGATION_TOOL,
                    request,
                    result_type=ToolObservation,
                    summary=tool_summary(call.name, call.arguments),
                    local=options.TOOL_LOCAL,
                    activity_id=tool_activity_id(call.call_id),
                )
        except SupportError as failure:
            observation = ToolObservation(
                call_id=call.call_id,
                name=call.name,
                ok=False,
                error_code=ToolRefusal.TOOL_UNAVAILABLE,
                error_message=failure.code,
            )
            if isinstance(failure, ConfigurationError):
                return ToolResult(call, observation, failure)
        return ToolResult(call, observation)

    def _fold(self, result: ToolResult) -> None:
        """Fold one call's result into the case state and the case log; a configuration failure ends the
        case ``failed`` (the calls after it in the turn are not folded)."""
        s, call, observation = self._s, result.call, result.observation
        assert call.arguments is not None
        if INVESTIGATION_TOOLS[call.name].source is ToolSource.CASE:
            s.notes.append(str(call.arguments["note"]))
            self._record(EventKind.TOOL_RAN, ToolName.SAVE_CASE_NOTE)
            return
        failure = result.configuration_failure
        if failure is not None:
            self._record(EventKind.TOOL_FAILED, f"{call.name}: {failure.reported_class}: {failure.code}")
            raise CaseStopped(CaseStatus.FAILED, StopCode.TOOL_CONFIGURATION, str(failure))
        self._record(
            EventKind.TOOL_RAN,
            f"{call.name} ok={observation.ok}" + (f" error={observation.error_code}" if not observation.ok else ""),
        )
        if observation.ok:
            quote = fold_observation(call.name, observation, s.facts, s.evidence)
            if quote is not None:
                s.quote = quote
                self._upsert_attributes()

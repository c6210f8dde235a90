"""Turn admission: which of the tool calls the model proposed in one turn may run.

Pure and deterministic. Each proposed call is charged to the tool budget, then checked by the tool
gate (or refused as one of too many calls in the turn); a call beyond the tool budget ends the turn
and the investigation. The workflow records the refusals and schedules the admitted calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts.case import Budgets
from contracts.model_io import ProposedToolCall, ToolObservation
from contracts.tools import INVESTIGATION_TOOLS
from workflows.tool_gate import ToolRefusal, call_fingerprint, refuse_call

TOO_MANY_CALLS_IN_TURN = ToolRefusal.TOO_MANY_CALLS_IN_TURN


@dataclass
class SeenCalls:
    """Call ids and admitted actions of the whole investigation: none may repeat."""

    call_ids: set[str] = field(default_factory=set)
    fingerprints: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class CallVerdict:
    call: ProposedToolCall
    refusal: ToolRefusal | None
    """The refusal code, or None when the call may run."""

    def refused(self) -> ToolObservation:
        """What the model reads for a refused call in its next turn."""
        assert self.refusal is not None
        return ToolObservation(
            call_id=self.call.call_id,
            name=self.call.name[:60],
            ok=False,
            error_code=self.refusal,
            error_message="The host refused this call.",
        )


@dataclass(frozen=True)
class TurnAdmission:
    verdicts: list[CallVerdict]
    """One per call charged to the budget, in the order the model proposed them."""
    budgets: Budgets
    tool_budget_exhausted: bool
    """A call arrived after the tool budget was spent; it and the calls after it were not charged."""

    @property
    def admitted(self) -> list[ProposedToolCall]:
        return [verdict.call for verdict in self.verdicts if verdict.refusal is None]


def admit_turn(
    calls: list[ProposedToolCall],
    budgets: Budgets,
    *,
    bound_order_id: str | None,
    seen: SeenCalls,
    case_writes: int = 0,
) -> TurnAdmission:
    """Charge and check each call of a turn; ``seen`` is updated with what this turn used. ``case_writes``:
    the declared case writes (notes) the case held before this turn."""
    too_many = len(calls) > budgets.max_calls_per_turn
    verdicts: list[CallVerdict] = []
    for call in calls:
        if budgets.tool_requests >= budgets.max_tool_requests:
            return TurnAdmission(verdicts, budgets, tool_budget_exhausted=True)
        budgets = budgets.model_copy(update={"tool_requests": budgets.tool_requests + 1})
        refusal = (
            TOO_MANY_CALLS_IN_TURN
            if too_many
            else refuse_call(
                call,
                bound_order_id=bound_order_id,
                seen_call_ids=seen.call_ids,
                seen_fingerprints=seen.fingerprints,
                case_writes=case_writes,
            )
        )
        seen.call_ids.add(call.call_id)
        if refusal is None:
            seen.fingerprints.add(call_fingerprint(call))
            spec = INVESTIGATION_TOOLS.get(call.name)
            if spec is not None and spec.case_write_cap is not None:
                case_writes += 1
        verdicts.append(CallVerdict(call, refusal))
    return TurnAdmission(verdicts, budgets, tool_budget_exhausted=False)

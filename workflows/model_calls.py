"""Model requests of a case: within the model budget, each failure mapped to what it means for the case.

Workflow code (it schedules activities), kept apart from the workflow class so that the class reads
as the case's lifecycle. Every attempt is charged to the budget (a failed activity reports how many
it made); the first reply names the model in the case's memo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.case import CaseStatus
    from contracts.case_input import CaseState
    from contracts.errors import ContractError, SupportError, rebuilt_activity_failures
    from contracts.model_io import ComposedAnswer, ComposeResult, ModelCallMeta
    from contracts.names import ActivityName, EventKind, StopCode
    from workflows import activity_options as options
    from workflows import case_metrics, requests
    from workflows.outcomes import CaseStopped, ContractViolation, model_failure
    from workflows.requests import ResultT


class ModelCalls:
    """Calls the model activities for one case's state."""

    def __init__(self, state: CaseState, record: Callable[[EventKind, str], None]) -> None:
        self._s = state
        self._record = record

    async def compose(self, previous: ComposedAnswer | None, problems: list[str], *, summary: str) -> ComposedAnswer:
        """One draft; a draft that breaks the answer contract is recorded and raised as ContractViolation."""
        s = self._s
        assert s.plan is not None
        request = requests.compose_request(s, previous, problems)
        try:
            result = await self.call(
                ActivityName.COMPOSE_ANSWER, request, ComposeResult, summary=summary, contract_ok=True
            )
        except ContractViolation as violation:
            self._record(EventKind.DRAFT_REFUSED, violation.code)
            raise
        answer = result.answer
        self._record(
            EventKind.DRAFTED, f"next_action={answer.next_action.value} citations={','.join(answer.citations)}"
        )
        return answer

    async def call(
        self,
        activity: ActivityName,
        request: Any,
        result_type: type[ResultT],
        *,
        summary: str,
        contract_ok: bool = False,
    ) -> ResultT:
        """Call a model activity within the model budget; a failure ends the case by its error class.
        ``summary`` names the step on the Web UI's timeline ("plan", "investigate turn 2")."""
        remaining = self._s.budgets.max_model_requests - self._s.budgets.model_requests
        if remaining <= 0:
            raise CaseStopped(CaseStatus.NEEDS_HUMAN, StopCode.MODEL_BUDGET_EXHAUSTED)
        attempts = min(options.MODEL_ATTEMPTS_PER_CALL, remaining)
        try:
            with rebuilt_activity_failures():
                result = await workflow.execute_activity(
                    activity,
                    request,
                    result_type=result_type,
                    summary=summary,
                    **options.model_options(attempts).kwargs(),
                )
        except SupportError as failure:
            self._charge_model(failure.attempt or attempts, ModelCallMeta.of_failure(failure, attempts), activity)
            self._record(EventKind.MODEL_FAILED, f"{activity}: {failure.reported_class}: {failure.code}")
            if isinstance(failure, ContractError) and contract_ok:
                raise ContractViolation(failure.code) from None
            raise CaseStopped.after(model_failure(failure)) from None
        self._charge_model(result.meta.attempt, result.meta, activity)
        return result

    def _charge_model(self, count: int, meta: ModelCallMeta | None, kind: ActivityName) -> None:
        budgets = self._s.budgets
        self._s.budgets = budgets.model_copy(update={"model_requests": budgets.model_requests + count})
        if meta is not None:
            case_metrics.model_reply(self._s, meta)
        if meta is not None:
            self._s.model.count(meta, kind.value)  # the memo names the model from the next upsert on

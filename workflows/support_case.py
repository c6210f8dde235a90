"""SupportCaseWorkflow: one customer question, from plan to a paid (simulated) refund or an answer.

The workflow decides; it performs no I/O, reads no clock but ``workflow.now()`` and draws no random
numbers. Activities (named by string, so none of their I/O is imported here) touch the world. The
model proposes intent, tool calls and wording; the gates in this package decide what happens.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from contracts import search_attributes as sa
    from contracts.case import (
        REHEARSAL_LABEL,
        AnswerSource,
        Budgets,
        CarriedCase,
        CaseEvent,
        CaseInput,
        CaseRecord,
        CaseStatus,
        CaseView,
        ComposedAnswer,
        ComposeRequest,
        ComposeResult,
        Decision,
        InvestigateRequest,
        InvestigateResult,
        ModelCallMeta,
        Phase,
        Plan,
        PlanRequest,
        PlanResult,
        ProposedToolCall,
        ReviewDecision,
        ReviewOutcome,
        ReviewRequest,
        ReviewResult,
        SettleRequest,
        ToolObservation,
        ToolRequest,
        TranscriptEntry,
        Verdict,
    )
    from contracts.commerce import RefundProposal, RefundQuote, RefundReceipt, order_ids_in
    from contracts.errors import ErrorClass, bounded, decode_activity_failure
    from contracts.identity import PROFILES, Role
    from contracts.knowledge import Passage
    from contracts.tools import INVESTIGATION_TOOLS
    from workflows import activity_options as options
    from workflows import patches
    from workflows.customer_notice import receipt_notice, status_notice
    from workflows.deliver_gate import decide_delivery
    from workflows.tool_gate import call_fingerprint, refuse_call
    from workflows.transitions import Stage, check_transition

MAX_EVENTS = 300
"""Events beyond this many are counted, not kept; lifecycle events are always kept."""
BOUNDED_EVENT_KINDS = frozenset({"review_refused", "tool_refused", "tool_ran", "continued_as_new"})
"""Kinds an outsider or the model can multiply (refused reviews, tool calls, the runs a flood forces)."""
MAX_EVIDENCE = 12
MAX_OBSERVATION_CHARS = 6000


class CaseStopped(Exception):
    """Raised inside the workflow to end the case in a terminal status (never leaves the workflow)."""

    def __init__(self, status: CaseStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@workflow.defn(name="SupportCaseWorkflow")
class SupportCaseWorkflow:
    @workflow.init
    def __init__(self, case: CaseInput) -> None:
        self._case = case
        self._stage: Stage = Phase.PLAN
        self._phase = Phase.PLAN
        self._status = CaseStatus.RUNNING
        self._budgets = Budgets()
        self._events: list[CaseEvent] = []
        self._dropped_events = 0
        self._notes: list[str] = []
        self._model_label: str | None = None
        self._tokens_known = 0
        self._tokens_unknown_calls = 0
        self._plan: Plan | None = None
        self._facts: dict[str, Any] = {}
        self._evidence: dict[str, Passage] = {}
        self._quote: RefundQuote | None = None
        self._answer: ComposedAnswer | None = None
        self._answer_admitted = False
        self._proposal: RefundProposal | None = None
        self._digest: str | None = None
        self._decision: ReviewDecision | None = None
        self._decided_at = None
        self._receipt: RefundReceipt | None = None
        self._reason: str | None = None
        self._record_path: str | None = None
        self._record_error: str | None = None
        self._continued = 0
        self._may_continue_as_new = True
        if case.carried is not None:
            self._restore(case.carried)

    # --- entry point -----------------------------------------------------------------------------

    @workflow.run
    async def run(self, case: CaseInput) -> CaseView:
        try:
            if case.carried is None:
                self._event("case_started", f"question from {case.applicant.subject} ({case.language.value})")
                await self._plan_case()
                await self._investigate()
                await self._draft_and_review()
                waiting = await self._deliver()
            else:
                waiting = True  # a run continued from a case waiting for its reviewer
            if waiting:
                await self._await_review()
                await self._settle()
        except CaseStopped as stop:
            self._finish(stop.status, stop.reason)
        await self._write_record()
        return self._view()

    # --- phases ----------------------------------------------------------------------------------

    async def _plan_case(self) -> None:
        ids = order_ids_in(self._case.question, before_cjk_patch=not workflow.patched(patches.ORDER_IDS_BESIDE_CJK))
        if len(ids) > 1:
            raise CaseStopped(CaseStatus.NEEDS_INPUT, "one_order_per_case: ask about each order separately")
        result = await self._call_model(
            "plan_case",
            PlanRequest(case_id=self._case.case_id, question=self._case.question, language=self._case.language),
            PlanResult,
        )
        plan = result.plan
        if plan.order_id is not None and plan.order_id not in ids:
            raise CaseStopped(CaseStatus.NEEDS_HUMAN, "plan_names_order_not_in_question")
        self._plan = plan
        self._event("planned", f"intent={plan.intent.value} order={plan.order_id} action={plan.action_requested}")
        self._upsert_attributes()

    async def _investigate(self) -> None:
        assert self._plan is not None
        self._move(Phase.INVESTIGATE)
        transcript: list[TranscriptEntry] = []
        seen_ids: set[str] = set()
        seen_fingerprints: set[str] = set()
        tool_names = list(INVESTIGATION_TOOLS)
        while True:
            if self._budgets.turns >= self._budgets.max_turns:
                raise CaseStopped(CaseStatus.NEEDS_HUMAN, "turn_budget_exhausted")
            turn = self._budgets.turns + 1
            request = InvestigateRequest(
                case_id=self._case.case_id,
                question=self._case.question,
                language=self._case.language,
                plan=self._plan,
                transcript=transcript,
                tool_names=tool_names,
                turn=turn,
            )
            result = await self._call_model("investigate_turn", request, InvestigateResult)
            self._budgets = self._budgets.model_copy(update={"turns": turn})
            if not result.calls:
                self._event("investigation_done", f"model stopped after {turn} turn(s)")
                return
            transcript.append(TranscriptEntry(role="assistant", calls=result.calls, content=result.content or ""))
            observations = await self._run_turn(result.calls, seen_ids, seen_fingerprints)
            for observation in observations:
                content = json.dumps(observation.model_dump(mode="json"), ensure_ascii=False)
                transcript.append(
                    TranscriptEntry(role="tool", call_id=observation.call_id, content=content[:MAX_OBSERVATION_CHARS])
                )

    async def _draft_and_review(self) -> None:
        assert self._plan is not None
        self._move(Phase.REVIEW)
        problems: list[str] = []
        previous: ComposedAnswer | None = None
        refused_draft: str | None = None
        for attempt in (1, 2):
            try:
                candidate = await self._compose(previous, problems)
            except _ContractViolation as violation:
                refused_draft = violation.code
                problems = [f"the draft violated the answer contract ({violation.code})"]
                continue
            refused_draft = None
            verdict = await self._call_model(
                "review_answer",
                ReviewRequest(
                    case_id=self._case.case_id,
                    question=self._case.question,
                    language=self._case.language,
                    facts=self._facts,
                    evidence=list(self._evidence.values()),
                    quote=self._quote,
                    candidate=candidate,
                    receipt_exists=self._receipt is not None,
                ),
                ReviewResult,
            )
            self._event(
                "reviewed",
                f"draft {attempt}: {verdict.verdict.verdict.value} {'; '.join(verdict.verdict.problems)}".strip(),
            )
            if verdict.verdict.verdict is Verdict.PASS:
                self._answer = candidate
                return
            if verdict.verdict.verdict is Verdict.INSUFFICIENT and attempt == 2:
                raise CaseStopped(CaseStatus.NEEDS_INPUT, "review_insufficient_evidence")
            previous, problems = candidate, list(verdict.verdict.problems)
        if refused_draft is not None:
            raise CaseStopped(CaseStatus.NEEDS_HUMAN, f"draft_refused:{refused_draft}")
        raise CaseStopped(CaseStatus.NEEDS_HUMAN, "review_failed_after_rewrite")

    async def _deliver(self) -> bool:
        """Return True when a refund proposal was created and the case must wait for a reviewer."""
        assert self._plan is not None and self._answer is not None
        self._move(Phase.DELIVER)
        decision = decide_delivery(self._plan, self._answer, self._quote, set(self._evidence))
        self._answer_admitted = decision.admits_draft
        self._event("deliver_gate", decision.reason)
        if decision.outcome is not None:
            raise CaseStopped(decision.outcome, decision.reason)
        assert self._quote is not None
        now = workflow.now()
        self._proposal = RefundProposal(
            case_id=self._case.case_id,
            applicant=self._case.applicant.subject,
            tenant=self._case.applicant.tenant,
            order_id=self._quote.order_id,
            order_version=self._quote.order_version,
            rule_version=self._quote.rule_version,
            amount_cents=self._quote.amount_cents,
            currency=self._quote.currency,
            quote_id=self._quote.quote_id,
            created_at=now,
            expires_at=now + timedelta(seconds=self._case.options.approval_ttl_seconds),
            ledger_id=self._quote.ledger_id,
        )
        self._digest = self._proposal.digest()
        self._move(Phase.WAITING_APPROVAL)
        self._status = CaseStatus.WAITING_APPROVAL
        self._event(
            "proposal_created",
            f"{self._proposal.amount_cents} cents for {self._proposal.order_id}, "
            f"digest {self._digest}, expires {self._proposal.expires_at.isoformat()}",
        )
        self._upsert_attributes()
        await self._write_record()
        return True

    async def _await_review(self) -> None:
        """Wait for a decision or the expiry timer; continue as new if a flood grows the history."""
        assert self._proposal is not None
        while self._decision is None:
            remaining = (self._proposal.expires_at - workflow.now()).total_seconds()
            try:
                await workflow.wait_condition(
                    self._decided_or_history_too_long, timeout=timedelta(seconds=max(remaining, 0.001))
                )
            except TimeoutError:
                raise CaseStopped(CaseStatus.EXPIRED, "proposal_expired_without_decision") from None
            if self._decision is None:
                if workflow.patched(patches.CONTINUE_AS_NEW_WHILE_WAITING):
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    if self._decision is None:
                        self._continue_as_new()
                self._may_continue_as_new = False  # replaying a run from before the patch: keep waiting
        if self._decision.decision is Decision.REJECT:
            raise CaseStopped(CaseStatus.REJECTED, f"rejected by {self._decision.reviewer}")

    async def _settle(self) -> None:
        assert self._proposal is not None and self._digest is not None and self._decision is not None
        self._move(Phase.SETTLE)
        self._status = CaseStatus.RUNNING
        self._upsert_attributes()
        approval_id = f"APR-{self._digest[:32]}"
        request = SettleRequest(
            case_id=self._case.case_id,
            applicant=self._case.applicant,
            approval_id=approval_id,
            proposal=self._proposal,
            digest=self._digest,
            reviewer=self._decision.reviewer,
            approved_at=self._decided_at,
        )
        try:
            receipt = await workflow.execute_activity(
                "execute_refund",
                request,
                result_type=RefundReceipt,
                **options.SETTLE.kwargs(),
            )
        except ActivityError as error:
            failure = decode_activity_failure(error)
            code, error_class = failure.code, failure.error_class
            self._event("settlement_failed", f"{error_class}: {code}")
            if error_class == ErrorClass.CONFIGURATION and workflow.patched(patches.CONFIGURATION_FAILS_CASE):
                # Refused before the commerce server ran the tool (e.g. its token): nothing was paid.
                raise CaseStopped(CaseStatus.FAILED, f"settlement_configuration:{failure.message}") from None
            if error_class in (ErrorClass.BUSINESS, ErrorClass.AUTHORIZATION):
                raise CaseStopped(CaseStatus.NEEDS_HUMAN, f"settlement_refused:{code}") from None
            # Anything else (retries exhausted, a malformed receipt) leaves the outcome unknown: a
            # human reconciles it; a retry with the same approval id would return the original receipt.
            raise CaseStopped(CaseStatus.NEEDS_HUMAN, f"settlement_unconfirmed:{code}") from None
        self._receipt = receipt
        self._event("settled", f"receipt {receipt.receipt_id} for {receipt.amount_cents} cents (SIMULATED)")
        self._finish(CaseStatus.COMPLETED, "refund_settled")

    # --- investigation helpers -------------------------------------------------------------------

    async def _run_turn(
        self, calls: list[ProposedToolCall], seen_ids: set[str], seen_fingerprints: set[str]
    ) -> list[ToolObservation]:
        assert self._plan is not None
        too_many = len(calls) > self._budgets.max_calls_per_turn
        admitted: list[ProposedToolCall] = []
        observations: dict[str, ToolObservation] = {}
        order: list[str] = []
        for index, call in enumerate(calls):
            key = f"{index}:{call.call_id}"
            order.append(key)
            if self._budgets.tool_requests >= self._budgets.max_tool_requests:
                raise CaseStopped(CaseStatus.NEEDS_HUMAN, "tool_budget_exhausted")
            self._budgets = self._budgets.model_copy(update={"tool_requests": self._budgets.tool_requests + 1})
            refusal = (
                "too_many_calls_in_turn"
                if too_many
                else refuse_call(
                    call,
                    bound_order_id=self._plan.order_id,
                    seen_call_ids=seen_ids,
                    seen_fingerprints=seen_fingerprints,
                )
            )
            seen_ids.add(call.call_id)
            if refusal:
                self._event("tool_refused", f"{call.name[:60]}: {refusal}")
                observations[key] = ToolObservation(
                    call_id=call.call_id,
                    name=call.name[:60],
                    ok=False,
                    error_code=refusal,
                    error_message="The host refused this call.",
                )
                continue
            seen_fingerprints.add(call_fingerprint(call))
            admitted.append(call)
        results = await asyncio.gather(*(self._run_tool(call) for call in admitted))
        admitted_keys = [k for k in order if k not in observations]
        observations.update(zip(admitted_keys, results, strict=True))
        return [observations[k] for k in order]

    async def _run_tool(self, call: ProposedToolCall) -> ToolObservation:
        assert call.arguments is not None
        if INVESTIGATION_TOOLS[call.name].source == "case":
            self._notes.append(str(call.arguments["note"]))
            self._event("tool_ran", "save_case_note")
            return ToolObservation(call_id=call.call_id, name=call.name, ok=True, result={"saved": True})
        request = ToolRequest(
            case_id=self._case.case_id,
            applicant=self._case.applicant,
            language=self._case.language,
            call_id=call.call_id,
            name=call.name,
            arguments={k: str(v) for k, v in call.arguments.items()},
        )
        try:
            observation = await workflow.execute_activity(
                "run_investigation_tool",
                request,
                result_type=ToolObservation,
                **options.TOOL.kwargs(),
            )
        except ActivityError as error:
            failure = decode_activity_failure(error)
            if failure.error_class == ErrorClass.CONFIGURATION and workflow.patched(patches.CONFIGURATION_FAILS_CASE):
                self._event("tool_failed", f"{call.name}: {failure.error_class}: {failure.code}")
                raise CaseStopped(CaseStatus.FAILED, f"tool_configuration:{failure.message}") from None
            observation = ToolObservation(
                call_id=call.call_id,
                name=call.name,
                ok=False,
                error_code="tool_unavailable",
                error_message=failure.code,
            )
        self._event(
            "tool_ran",
            f"{call.name} ok={observation.ok}" + (f" error={observation.error_code}" if not observation.ok else ""),
        )
        if observation.ok:
            self._absorb(call.name, observation)
        return observation

    def _absorb(self, tool: str, observation: ToolObservation) -> None:
        """Keep authorized facts and evidence from a successful observation."""
        result = observation.result or {}
        if tool == "calculate_refund" and "quote" in result:
            self._quote = RefundQuote.model_validate(result["quote"])
            self._facts["quote"] = result["quote"]
            self._upsert_attributes()
        elif tool in {"get_order", "get_shipment", "get_invoice", "get_product", "get_ticket", "list_orders"}:
            self._facts[tool.removeprefix("get_")] = result
        elif tool == "get_language_preference":
            self._facts["language_preference"] = result
        passages = result.get("passages", [])
        if tool == "read_knowledge" and "passage_id" in result:
            passages = [result]
        priority = tool == "calculate_refund"
        for raw in passages:
            passage = _to_passage(raw)
            if passage is None or passage.passage_id in self._evidence:
                continue
            if len(self._evidence) >= MAX_EVIDENCE and not priority:
                continue
            self._evidence[passage.passage_id] = passage

    # --- model helpers ---------------------------------------------------------------------------

    async def _compose(self, previous: ComposedAnswer | None, problems: list[str]) -> ComposedAnswer:
        """One draft; a draft that breaks the answer contract is recorded and raised as _ContractViolation."""
        assert self._plan is not None
        request = ComposeRequest(
            case_id=self._case.case_id,
            question=self._case.question,
            language=self._case.language,
            plan=self._plan,
            facts=self._facts,
            evidence=list(self._evidence.values()),
            quote=self._quote,
            receipt_exists=self._receipt is not None,
            previous=previous,
            problems=problems,
        )
        try:
            result = await self._call_model("compose_answer", request, ComposeResult, contract_ok=True)
        except _ContractViolation as violation:
            self._event("draft_refused", violation.code)
            raise
        self._event(
            "drafted",
            f"next_action={result.answer.next_action.value} citations={','.join(result.answer.citations)}",
        )
        return result.answer

    async def _call_model(self, activity: str, request: Any, result_type: type, *, contract_ok: bool = False):
        remaining = self._budgets.max_model_requests - self._budgets.model_requests
        if remaining <= 0:
            raise CaseStopped(CaseStatus.NEEDS_HUMAN, "model_budget_exhausted")
        attempts = min(options.MODEL_ATTEMPTS_PER_CALL, remaining)
        try:
            result = await workflow.execute_activity(
                activity,
                request,
                result_type=result_type,
                **options.model_options(attempts).kwargs(),
            )
        except ActivityError as error:
            failure = decode_activity_failure(error)
            code, error_class = failure.code, failure.error_class
            self._charge_model(failure.attempt or attempts, None)
            self._event("model_failed", f"{activity}: {error_class}: {code}")
            if error_class == ErrorClass.CONTRACT and contract_ok:
                raise _ContractViolation(code) from None
            if error_class == ErrorClass.CONFIGURATION:
                raise CaseStopped(CaseStatus.FAILED, f"model_configuration:{failure.message}") from None
            if error_class == ErrorClass.CONTRACT:
                raise CaseStopped(CaseStatus.NEEDS_HUMAN, f"model_contract:{code}") from None
            raise CaseStopped(CaseStatus.NEEDS_HUMAN, f"model_unavailable:{code}") from None
        self._charge_model(result.meta.attempt, result.meta)
        return result

    def _charge_model(self, requests: int, meta: ModelCallMeta | None) -> None:
        self._budgets = self._budgets.model_copy(update={"model_requests": self._budgets.model_requests + requests})
        if meta is None:
            return
        if self._model_label is None:
            self._model_label = meta.provider if meta.provider == REHEARSAL_LABEL else f"{meta.provider}:{meta.model}"
            workflow.upsert_memo({"model": self._model_label})
        if meta.usage is None:
            self._tokens_unknown_calls += 1
        else:
            self._tokens_known += meta.usage.total_tokens

    # --- approval --------------------------------------------------------------------------------

    @workflow.signal(name="review")
    def review_signal(self, payload: RawValue) -> None:
        """Approve or reject by signal (Temporal CLI `workflow signal`, Web UI).

        The payload arrives raw so that a malformed one is recorded as a refusal instead of being
        dropped by payload decoding where nobody sees it.
        """
        decision = self._decode_review(payload, via="signal")
        if decision is not None:
            self._review(decision, via="signal")

    @workflow.update(name="review")
    def review_update(self, payload: RawValue) -> ReviewOutcome:
        """Approve or reject with a synchronous answer (starter.py review, `workflow update execute`).

        A refused or malformed attempt is recorded in the case events and fails the update, so the
        caller sees a failure (a non-zero exit, a failed update in the Web UI), never "successful".
        """
        decision = self._decode_review(payload, via="update")
        if decision is None:
            raise ApplicationError("malformed_review", {"code": "malformed_review"}, type="review_refused")
        outcome = self._review(decision, via="update")
        if not outcome.accepted and workflow.patched(patches.REFUSED_REVIEW_UPDATE_FAILS):
            raise ApplicationError(outcome.reason, {"code": outcome.reason}, type="review_refused")
        return outcome

    def _decode_review(self, payload: RawValue, *, via: str) -> ReviewDecision | None:
        """The review payload as a :class:`ReviewDecision`, or None after recording why it is not one."""
        try:
            return workflow.payload_converter().from_payload(payload.payload, ReviewDecision)
        except Exception as error:  # any decoding failure is the sender's, never the case's
            size = len(payload.payload.data)
            self._event("review_refused", f"malformed payload via {via} ({size} bytes): {_decode_problem(error)}")
            return None

    def _review(self, decision: ReviewDecision, *, via: str) -> ReviewOutcome:
        refusal = self._review_refusal(decision)
        who = decision.reviewer[:40]
        if refusal:
            self._event("review_refused", f"{who} via {via}: {refusal}")
            return ReviewOutcome(accepted=False, status=self._status, reason=refusal)
        self._decision = decision
        self._decided_at = workflow.now()
        self._event(
            "review_accepted",
            f"{who} via {via}: {decision.decision.value}" + (f" ({decision.note[:200]})" if decision.note else ""),
        )
        return ReviewOutcome(accepted=True, status=self._status, reason=decision.decision.value)

    def _review_refusal(self, decision: ReviewDecision) -> str | None:
        if self._status is not CaseStatus.WAITING_APPROVAL or self._proposal is None:
            return "case_not_waiting_for_review"
        if self._decision is not None:
            return "already_decided"
        reviewer = PROFILES.get(decision.reviewer)
        if reviewer is None:
            return "unknown_reviewer"
        if reviewer.subject == self._case.applicant.subject:
            return "applicant_cannot_review"
        if reviewer.role is not Role.REVIEWER:
            return "not_a_reviewer"
        if reviewer.tenant != self._case.applicant.tenant:
            return "reviewer_of_another_tenant"
        if decision.digest != self._digest:
            return "digest_mismatch"
        if workflow.now() >= self._proposal.expires_at:
            return "proposal_expired"
        return None

    # --- continue-as-new -------------------------------------------------------------------------

    def _decided_or_history_too_long(self) -> bool:
        return self._decision is not None or (
            self._may_continue_as_new and workflow.info().is_continue_as_new_suggested()
        )

    def _continue_as_new(self) -> None:
        """Start the next run of this case with its whole state; the pending proposal stays as it is."""
        assert self._plan and self._quote and self._answer and self._proposal
        info = workflow.info()
        self._event(
            "continued_as_new",
            f"history at {info.get_current_history_size()} bytes / {info.get_current_history_length()} events; "
            f"run {self._continued + 2} keeps waiting for a reviewer",
        )
        carried = CarriedCase(
            continued=self._continued + 1,
            budgets=self._budgets,
            events=list(self._events),
            dropped_events=self._dropped_events,
            notes=list(self._notes),
            model_label=self._model_label,
            tokens_known=self._tokens_known,
            tokens_unknown_calls=self._tokens_unknown_calls,
            plan=self._plan,
            facts=self._facts,
            evidence=list(self._evidence.values()),
            quote=self._quote,
            answer=self._answer,
            answer_admitted=self._answer_admitted,
            proposal=self._proposal,
            record_path=self._record_path,
            record_error=self._record_error,
        )
        workflow.continue_as_new(
            self._case.model_copy(update={"carried": carried}),
            memo=dict(workflow.memo()),
            search_attributes=info.typed_search_attributes,
        )

    def _restore(self, carried: CarriedCase) -> None:
        """The state of a case that continued as new while waiting for a reviewer."""
        self._stage = Phase.WAITING_APPROVAL
        self._phase = Phase.WAITING_APPROVAL
        self._status = CaseStatus.WAITING_APPROVAL
        self._continued = carried.continued
        self._budgets = carried.budgets
        self._events = list(carried.events)
        self._dropped_events = carried.dropped_events
        self._notes = list(carried.notes)
        self._model_label = carried.model_label
        self._tokens_known = carried.tokens_known
        self._tokens_unknown_calls = carried.tokens_unknown_calls
        self._plan = carried.plan
        self._facts = dict(carried.facts)
        self._evidence = {passage.passage_id: passage for passage in carried.evidence}
        self._quote = carried.quote
        self._answer = carried.answer
        self._answer_admitted = carried.answer_admitted
        self._proposal = carried.proposal
        self._digest = carried.proposal.digest()
        self._record_path = carried.record_path
        self._record_error = carried.record_error

    # --- queries ---------------------------------------------------------------------------------

    @workflow.query(name="status")
    def status(self) -> CaseView:
        return self._view()

    @workflow.query(name="proposal")
    def proposal(self) -> RefundProposal | None:
        return self._proposal

    @workflow.query(name="events")
    def events(self) -> list[CaseEvent]:
        return list(self._events)

    @workflow.query(name="budgets")
    def budgets(self) -> Budgets:
        return self._budgets

    # --- state helpers ---------------------------------------------------------------------------

    def _move(self, phase: Phase) -> None:
        self._stage = check_transition(self._stage, phase)
        self._phase = phase
        self._upsert_attributes()

    def _finish(self, status: CaseStatus, reason: str) -> None:
        self._stage = check_transition(self._stage, status)
        self._status = status
        self._reason = reason
        if self._dropped_events:
            self._event("events_dropped", f"{self._dropped_events} refused attempts were counted, not listed")
        self._event("case_finished", f"{status.value}: {reason}")
        self._upsert_attributes()

    def _event(self, kind: str, detail: str) -> None:
        """Record an event. Floods of refusals are capped so they cannot push lifecycle events out."""
        if kind in BOUNDED_EVENT_KINDS and len(self._events) >= MAX_EVENTS:
            self._dropped_events += 1
            return
        self._events.append(CaseEvent(at=workflow.now(), kind=kind, detail=detail[:500]))

    def _upsert_attributes(self) -> None:
        updates = [
            sa.CASE_STATUS.value_set(self._status.value),
            sa.CASE_PHASE.value_set(self._phase.value),
            sa.TENANT.value_set(self._case.applicant.tenant),
        ]
        if self._plan and self._plan.order_id:
            updates.append(sa.ORDER_ID.value_set(self._plan.order_id))
        if self._proposal:
            updates.append(sa.REFUND_CENTS.value_set(self._proposal.amount_cents))
        workflow.upsert_search_attributes(updates)

    def _tokens(self) -> str:
        """Tokens the provider reported; "unknown" when it reported none (never a made-up zero)."""
        if not self._tokens_known:
            return "unknown"
        suffix = f" (+{self._tokens_unknown_calls} calls unknown)" if self._tokens_unknown_calls else ""
        return f"{self._tokens_known}{suffix}"

    def _customer_answer(self) -> tuple[str | None, AnswerSource | None]:
        """The admitted draft while the gate's outcome holds; otherwise a message written by code."""
        if self._receipt is not None:
            return receipt_notice(self._receipt, self._case.language), AnswerSource.RECEIPT
        draft_holds = self._phase is not Phase.SETTLE and self._status not in (CaseStatus.REJECTED, CaseStatus.EXPIRED)
        if self._answer is not None and self._answer_admitted and draft_holds:
            return self._answer.answer, AnswerSource.MODEL_DRAFT
        notice = status_notice(self._status, self._case.language)
        return (notice, AnswerSource.STATUS_NOTICE) if notice else (None, None)

    def _view(self) -> CaseView:
        answer, answer_source = self._customer_answer()
        return CaseView(
            case_id=self._case.case_id,
            status=self._status,
            phase=self._phase,
            applicant=self._case.applicant.subject,
            tenant=self._case.applicant.tenant,
            question=self._case.question,
            language=self._case.language,
            model=self._model_label or "not yet called",
            intent=self._plan.intent if self._plan else None,
            order_id=self._plan.order_id if self._plan else None,
            answer=answer,
            answer_source=answer_source,
            citations=self._answer.citations if self._answer else [],
            next_action=self._answer.next_action if self._answer else None,
            quote=self._quote,
            proposal=self._proposal,
            digest=self._digest,
            receipt=self._receipt,
            reason=self._reason,
            record_path=self._record_path,
            record_error=self._record_error,
            budgets=self._budgets,
            tokens=self._tokens(),
        )

    async def _write_record(self) -> None:
        """Write the case record. A failure is an event, never a reason to lose the case's status."""
        record = CaseRecord(case=self._view(), events=list(self._events), notes=list(self._notes))
        try:
            self._record_path = await workflow.execute_activity(
                "write_case_record",
                record,
                result_type=str,
                **options.RECORD.kwargs(),
            )
        except ActivityError as error:
            self._record_error = decode_activity_failure(error).code
            self._event("record_write_failed", self._record_error)


class _ContractViolation(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def _decode_problem(error: Exception) -> str:
    """What was wrong with a payload, briefly: field and message, never the (possibly huge) input."""
    if isinstance(error, ValidationError):
        problems = [
            f"{'.'.join(str(part) for part in item['loc']) or 'payload'}: {item['msg']}" for item in error.errors()[:3]
        ]
        return bounded("; ".join(problems), 200)
    return type(error).__name__


def _to_passage(raw: Any) -> Passage | None:
    if not isinstance(raw, dict):
        return None
    try:
        return Passage.model_validate({k: v for k, v in raw.items() if k in Passage.model_fields})
    except ValueError:
        return None

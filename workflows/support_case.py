"""SupportCaseWorkflow: one customer question, from plan to a paid (simulated) refund or an answer.

The workflow decides; it performs no I/O, reads no clock but ``workflow.now()`` and draws no random
numbers. Activities (named by string, so none of their I/O is imported here) touch the world. The
model proposes intent, tool calls and wording; the gates beside this file decide what happens:
``tool_gate`` and ``turn_admission`` what may run, ``evidence`` what is kept, ``deliver_gate`` what
may be shown or proposed, ``approval_gate`` who may decide. All state lives in one ``CaseState``.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from contracts import search_attributes as sa
    from contracts.case import (
        Budgets,
        CaseEvent,
        CaseStatus,
        CaseView,
        Decision,
        Phase,
        ReviewDecision,
        ReviewOutcome,
    )
    from contracts.case_input import CaseState
    from contracts.commerce import ProposalOutcome, order_ids_in
    from contracts.credentials import SignedReview
    from contracts.effect_card import ProposalForReview
    from contracts.model_io import InvestigateResult, PlanResult, TranscriptEntry
    from contracts.names import (
        CASE_INPUT_REFUSED,
        REVIEW,
        WORKFLOW_NAME,
        ActivityName,
        CaseInputRefusal,
        EventKind,
        QueryName,
        ReviewRefusal,
        StopCode,
        stop_reason,
    )
    from workflows import case_details, case_metrics, requests
    from workflows.applicant_check import verify_applicant
    from workflows.approval_gate import refused_review_error
    from workflows.case_input import AdmittedInput, admit_case_input, query_refusal
    from workflows.case_view import case_effect_card, case_memo, case_view, search_attribute_changes
    from workflows.continued_run import confirm_continued_run
    from workflows.deliver_gate import decide_delivery
    from workflows.drafting import draft_and_review
    from workflows.evidence import transcript_content
    from workflows.model_calls import ModelCalls
    from workflows.outcomes import CaseStopped
    from workflows.proposal_closure import close_proposal
    from workflows.refund_settlement import execute_refund, write_case_record
    from workflows.review_attempt import decoded_review, review_attempt
    from workflows.review_directory import read_for_review
    from workflows.tool_calls import ToolCalls
    from workflows.turn_admission import SeenCalls


@workflow.defn(name=WORKFLOW_NAME)
class SupportCaseWorkflow:
    @workflow.init
    def __init__(self, start: RawValue) -> None:
        """``start`` is a :class:`CaseInput`, taken raw so that an input the run refuses ends it failed
        with the reason instead of failing every workflow task (:mod:`workflows.case_input`)."""
        info = workflow.info()
        self._input = admit_case_input(
            workflow.payload_converter(),
            start.payload,
            run_workflow_id=info.workflow_id,
            continued_run_id=info.continued_run_id,
            cron_schedule=info.cron_schedule,
            attempt=info.attempt,
        )
        self._state: CaseState | None = None
        case = self._input.case
        self._carried = case is not None and case.carried is not None
        """This run resumes the state of a case that continued as new while waiting for its reviewer."""
        self._resuming = self._carried
        """A carried state is neither shown nor decided on until Temporal confirms where it came from."""
        if case is not None:
            self._state = CaseState.of(case)
            self._tools = ToolCalls(self._state, self._event, self._upsert_attributes)
            self._model = ModelCalls(self._state, self._event)

    @property
    def _s(self) -> CaseState:
        assert self._state is not None, "a run that refused its input has no case state"
        return self._state

    # --- entry point -----------------------------------------------------------------------------

    @workflow.run
    async def run(self, start: RawValue) -> CaseView:
        self._admit_input()
        if self._resuming:
            await self._confirm_continued_run()
        case = self._s.case
        try:
            self._show()
            if not self._carried:
                self._event(EventKind.CASE_STARTED, f"question from {case.applicant.subject} ({case.language.value})")
                await verify_applicant(self._s, self._event)
                case_metrics.case_started(self._s)
                self._upsert_attributes()  # queued -> running; the verified tenant and applicant replace the start's
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
        return case_view(self._s)

    # --- phases ----------------------------------------------------------------------------------

    async def _plan_case(self) -> None:
        case = self._s.case
        ids = order_ids_in(case.question)
        if len(ids) > 1:
            raise CaseStopped(CaseStatus.NEEDS_INPUT, StopCode.ONE_ORDER_PER_CASE, ",".join(sorted(ids)))
        named = ids[0] if ids else None  # one order named: a host fact, bound before the plan
        request = requests.plan_request(self._s, named)
        plan = (await self._model.call(ActivityName.PLAN_CASE, request, PlanResult, summary="plan")).plan
        if plan.order_id is not None and plan.order_id not in ids:
            raise CaseStopped(CaseStatus.NEEDS_HUMAN, StopCode.PLAN_NAMES_ORDER_NOT_IN_QUESTION)
        if plan.order_id is None and named is not None:
            plan = plan.model_copy(update={"order_id": named})
        self._s.plan = plan
        self._event(
            EventKind.PLANNED, f"intent={plan.intent.value} order={plan.order_id} action={plan.action_requested}"
        )  # the order id is upserted with the investigate phase, next and in this same workflow task

    async def _investigate(self) -> None:
        s = self._s
        assert s.plan is not None
        self._move(Phase.INVESTIGATE)
        transcript: list[TranscriptEntry] = []
        seen = SeenCalls()
        while True:
            if s.budgets.turns >= s.budgets.max_turns:
                raise CaseStopped(CaseStatus.NEEDS_HUMAN, StopCode.TURN_BUDGET_EXHAUSTED)
            turn = s.budgets.turns + 1
            request = requests.investigate_request(s, transcript, turn)
            summary = f"investigate turn {turn}{case_details.finding_summary(s)}"
            result = await self._model.call(ActivityName.INVESTIGATE_TURN, request, InvestigateResult, summary=summary)
            s.budgets = s.budgets.model_copy(update={"turns": turn})
            if not result.calls:
                self._event(EventKind.INVESTIGATION_DONE, f"model stopped after {turn} turn(s)")
                return
            transcript.append(TranscriptEntry(role="assistant", calls=result.calls, content=result.content or ""))
            for observation in await self._tools.run_turn(result.calls, seen):
                transcript.append(
                    TranscriptEntry(role="tool", call_id=observation.call_id, content=transcript_content(observation))
                )

    async def _draft_and_review(self) -> None:
        self._move(Phase.REVIEW)
        await draft_and_review(self._s, self._model, self._event)

    async def _deliver(self) -> bool:
        """Return True when a refund proposal was created and the case must wait for a reviewer."""
        s = self._s
        assert s.plan is not None and s.answer is not None
        self._move(Phase.DELIVER, upsert=False)  # no await before waiting or finishing upserts (same task)
        decision = decide_delivery(s.plan, s.answer, s.quote, set(s.evidence))
        s.answer_admitted = decision.admits_draft
        self._event(EventKind.DELIVER_GATE, decision.reason)
        if decision.outcome is not None:
            raise CaseStopped(decision.outcome, decision.code, decision.detail)
        assert s.quote is not None
        started = workflow.info().workflow_start_time  # proposals are made only in a case's first run
        s.proposal = requests.refund_proposal(s, workflow.now(), case_started_at=started)
        s.digest = s.proposal.digest()
        self._event(
            EventKind.PROPOSAL_CREATED,
            f"{s.proposal.amount_cents} cents for {s.proposal.order_id}, "
            f"digest {s.digest}, expires {s.proposal.expires_at.isoformat()}",
        )
        self._move(Phase.WAITING_APPROVAL)  # its upsert's memo carries the proposal's line
        self._show()
        await self._write_record()
        return True

    async def _await_review(self) -> None:
        """Wait for a decision or the expiry timer; continue as new if a flood grows the history."""
        s = self._s
        card = case_effect_card(s)
        assert s.proposal is not None and card is not None
        while s.decision is None:
            remaining = (s.proposal.expires_at - workflow.now()).total_seconds()
            try:
                await workflow.wait_condition(
                    self._decided_or_history_too_long,
                    timeout=timedelta(seconds=max(remaining, 0.001)),
                    timeout_summary=case_details.approval_timer_summary(card),
                )
            except TimeoutError:
                await close_proposal(self._s, self._event, ProposalOutcome.EXPIRED)
                raise CaseStopped(CaseStatus.EXPIRED, StopCode.PROPOSAL_EXPIRED_WITHOUT_DECISION) from None
            if s.decision is None:
                await workflow.wait_condition(workflow.all_handlers_finished)
                if s.decision is None:
                    self._continue_as_new()
        if s.decision.decision is Decision.REJECT:
            await close_proposal(self._s, self._event, ProposalOutcome.REJECTED)
            raise CaseStopped(CaseStatus.REJECTED, StopCode.REJECTED, s.decision.reviewer)

    async def _settle(self) -> None:
        s = self._s
        self._move(Phase.SETTLE)
        receipt = await execute_refund(s, self._event)
        s.receipt = receipt
        case_metrics.refund_paid(s, receipt.amount_cents)
        self._event(EventKind.SETTLED, f"receipt {receipt.receipt_id} for {receipt.amount_cents} cents (SIMULATED)")
        self._finish(CaseStatus.COMPLETED, stop_reason(StopCode.REFUND_SETTLED))

    # --- approval --------------------------------------------------------------------------------

    @workflow.signal(name=REVIEW, description=case_details.REVIEW_SIGNAL_HELP)
    async def review_signal(self, payload: RawValue) -> None:
        """Approve or reject by signal (Temporal CLI `workflow signal`, Web UI).

        The payload arrives raw so that a malformed one is recorded as a refusal instead of being
        dropped by payload decoding where nobody sees it.
        """
        if not await self._takes_reviews():
            return  # the run refused its input and is ending: there is nothing to decide
        decision = self._decode_review(payload, via="signal")
        if decision is not None:
            unread = await read_for_review(self._s, decision, self._event, via="signal")
            self._review(decision, via="signal", refusal=unread)

    @workflow.update(name=REVIEW, description=case_details.REVIEW_UPDATE_HELP)
    async def review_update(self, payload: RawValue) -> ReviewOutcome:
        """Approve or reject with a synchronous answer (starter.py review, `workflow update execute`).

        A refused or malformed attempt is recorded in the case events and fails the update, so the
        caller sees a failure (a non-zero exit, a failed update in the Web UI), never "successful".
        """
        if not await self._takes_reviews():
            raise refused_review_error(CASE_INPUT_REFUSED)
        decision = self._decode_review(payload, via="update")
        if decision is None:
            raise refused_review_error(ReviewRefusal.MALFORMED_REVIEW.value)
        unread = await read_for_review(self._s, decision, self._event, via="update")
        outcome, subject = self._review(decision, via="update", refusal=unread)
        if not outcome.accepted:
            raise refused_review_error(outcome.reason, reviewer=subject)
        return outcome

    async def _takes_reviews(self) -> bool:
        """False when the run refused its input; a run resuming a carried state first waits until Temporal
        has confirmed where it came from, so a review sent meanwhile is judged then, never lost."""
        if self._resuming:
            await workflow.wait_condition(lambda: not self._resuming or self._input.refusal is not None)
        return self._input.refusal is None

    def _decode_review(self, payload: RawValue, *, via: str) -> ReviewDecision | SignedReview | None:
        return decoded_review(workflow.payload_converter(), payload.payload, self._s, self._event, via=via)

    def _review(
        self, review: ReviewDecision | SignedReview, *, via: str, refusal: ReviewRefusal | None = None
    ) -> tuple[ReviewOutcome, str]:
        outcome = review_attempt(self._s, review, self._event, now=workflow.now(), via=via, refusal=refusal)
        self._show()
        return outcome

    # --- continue-as-new -------------------------------------------------------------------------

    def _decided_or_history_too_long(self) -> bool:
        return self._s.decision is not None or workflow.info().is_continue_as_new_suggested()

    def _continue_as_new(self) -> None:
        """Start the next run of this case with its whole state; the pending proposal stays as it is."""
        info = workflow.info()
        self._event(
            EventKind.CONTINUED_AS_NEW,
            f"history at {info.get_current_history_size()} bytes / {info.get_current_history_length()} events; "
            f"run {self._s.continued + 2} keeps waiting for a reviewer",
        )
        workflow.continue_as_new(
            self._s.next_run_input(),
            memo=dict(workflow.memo()),
            search_attributes=info.typed_search_attributes,
        )

    # --- queries ---------------------------------------------------------------------------------

    @workflow.query(name=QueryName.STATUS, description="The case as its applicant or reviewer sees it (JSON).")
    def status(self) -> CaseView:
        self._refuse_query()
        return case_view(self._s)

    @workflow.query(
        name=QueryName.PROPOSAL,
        description="The pending refund proposal, the digest an approval must name, and its computed effect.",
    )
    def proposal(self) -> ProposalForReview | None:
        self._refuse_query()
        s = self._s
        if s.proposal is None or s.digest is None:
            return None
        return ProposalForReview(proposal=s.proposal, digest=s.digest, effect=case_effect_card(s))

    @workflow.query(name=QueryName.EVENTS, description="The case's events: every step, refusal and decision.")
    def events(self) -> list[CaseEvent]:
        self._refuse_query()
        return list(self._s.log.events)

    @workflow.query(name=QueryName.BUDGETS, description="Model, tool and turn budgets used and allowed.")
    def budgets(self) -> Budgets:
        self._refuse_query()
        return self._s.budgets

    # --- the run's input -------------------------------------------------------------------------

    def _admit_input(self) -> None:
        """End the run failed, at once, when it refuses its input (:mod:`workflows.case_input`); it then
        reads nothing, shows nothing to a reviewer and pays nothing."""
        if self._input.refusal is not None:
            workflow.set_current_details(case_details.refused_input_details(self._input.reason))
            raise self._input.failure()

    def _refuse_query(self) -> None:
        refused = query_refusal(self._input, resuming=self._resuming)
        if refused is not None:
            raise refused

    async def _confirm_continued_run(self) -> None:
        """Resume the carried state only once Temporal confirms where this run came from; otherwise end
        the run failed at once, like a refused input (:mod:`workflows.continued_run`)."""
        refused = await confirm_continued_run()
        if refused:
            case = self._input.case
            self._input = AdmittedInput(case, CaseInputRefusal.CARRIED_STATE_NOT_CONTINUED, refused)
            self._admit_input()
        self._resuming = False

    # --- state helpers ---------------------------------------------------------------------------

    def _move(self, phase: Phase, *, upsert: bool = True) -> None:
        """Enter ``phase``; ``upsert`` False when the next upsert comes before the workflow next waits
        (one upsert event instead of two in a row)."""
        self._s.lifecycle.enter(phase)
        if upsert:
            self._upsert_attributes()
        self._show()

    def _finish(self, status: CaseStatus, reason: str) -> None:
        self._s.lifecycle.finish(status)
        self._s.reason = reason
        if self._s.log.dropped:
            self._event(EventKind.EVENTS_DROPPED, f"{self._s.log.dropped} refused attempts were counted, not listed")
        self._event(EventKind.CASE_FINISHED, f"{status.value}: {reason}")
        case_metrics.case_ended(self._s)
        self._upsert_attributes()
        self._show()

    def _show(self) -> None:
        """The Web UI's current details (markdown; no command, so no replay concern)."""
        workflow.set_current_details(case_details.current_details(self._s, workflow.now()))

    def _event(self, kind: EventKind, detail: str) -> None:
        self._s.log.add(workflow.now(), kind, detail)

    def _upsert_attributes(self) -> None:
        """Upsert the search attributes whose value differs from the run's (the start's and earlier
        upserts', as ``workflow.info()`` holds them, deterministically); nothing when none changed."""
        changed = search_attribute_changes(self._s, workflow.info().typed_search_attributes)
        if not changed:
            return
        workflow.upsert_search_attributes(changed)
        if not any(update.key == sa.CASE_STATUS for update in changed):
            return  # the memo follows the status (running, waiting, ended): one memo upsert each at most
        stale = {key: value for key, value in case_memo(self._s).items() if workflow.memo_value(key, None) != value}
        if stale:
            workflow.upsert_memo(stale)

    async def _write_record(self) -> None:
        await write_case_record(self._s, self._event)

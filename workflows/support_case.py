"""SupportCaseWorkflow: one customer conversation, from its first message to a paid (simulated) refund,
an answer, or a close.

Each customer message is a turn: plan, investigate, draft, review, deliver. Where the service needs
something from the customer it replies and waits for the next message (``waiting_customer``); while a
refund proposal waits for its reviewer, messages are answered from the case's records by code, and
"withdraw" closes the proposal unpaid. Further messages arrive by the ``message`` update
(:mod:`workflows.customer_messages`); what a customer watches is the case's progress stream
(:mod:`workflows.progress`).

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
from temporalio.contrib.workflow_streams import WorkflowStream

with workflow.unsafe.imports_passed_through():
    from contracts.action_policy import ActionKind
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
    from contracts.conversation import (
        MAX_MODEL_TURNS_PER_CASE,
        ProgressKind,
    )
    from contracts.credentials import SignedReview
    from contracts.effect_card import ProposalForReview
    from contracts.model_io import InvestigateResult, NextAction, PlanResult, TranscriptEntry
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
    from workflows.action_gate import REFUND_AS_ACTION_PATCH, refunds_as_action
    from workflows.action_steps import ActionSteps
    from workflows.applicant_check import verify_applicant
    from workflows.approval_gate import refused_review_error
    from workflows.case_input import AdmittedInput, admit_case_input
    from workflows.case_view import case_effect_card, case_view
    from workflows.continued_run import confirm_continued_run
    from workflows.conversation_handlers import ConversationHandlers
    from workflows.deliver_gate import decide_delivery
    from workflows.drafting import draft_and_review
    from workflows.escalation import Wake, next_wake, on_near_expiry, timer_summary
    from workflows.evidence import transcript_content
    from workflows.model_calls import ModelCalls
    from workflows.outcomes import CaseStopped
    from workflows.progress import Progress, prior_stream, refuse_outside_publishes
    from workflows.proposal_closure import close_proposal
    from workflows.refund_settlement import execute_refund
    from workflows.review_attempt import decoded_review, review_attempt
    from workflows.review_directory import read_for_review
    from workflows.tool_calls import ToolCalls
    from workflows.turn_admission import SeenCalls


@workflow.defn(name=WORKFLOW_NAME)
class SupportCaseWorkflow(ActionSteps, ConversationHandlers):
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
        offset = self._state.stream_offset if self._state is not None and self._input.refusal is None else 0
        self._stream = WorkflowStream(prior_stream(offset))
        refuse_outside_publishes()
        if self._state is not None:
            self._progress = Progress(self._stream, self._state)
            self._tools = ToolCalls(self._state, self._event, self._upsert_attributes, self._announce_tool)
            self._model = ModelCalls(self._state, self._event)

    # --- entry point -----------------------------------------------------------------------------

    @workflow.run
    async def run(self, start: RawValue) -> CaseView:
        self._admit_input()
        if self._resuming:
            await self._confirm_continued_run()
        s = self._s
        try:
            self._show()
            if not self._carried:
                self._event(
                    EventKind.CASE_STARTED, f"question from {s.case.applicant.subject} ({s.case.language.value})"
                )
                await verify_applicant(s, self._event)
                s.started_at = workflow.info().workflow_start_time
                s.conversation.take_first(s.case.question, workflow.now())
                case_metrics.case_started(s)
                self._upsert_attributes()  # queued -> running; the verified tenant and applicant replace the start's
                self._progress.say(ProgressKind.MESSAGE_RECEIVED)
            await self._converse()
        except CaseStopped as stop:
            self._finish(stop.status, stop.reason)
        await self._write_record()
        self._stream.detach_pollers()  # a reader's waiting poll returns the last items; it then reads by query
        await workflow.wait_condition(workflow.all_handlers_finished)
        return case_view(s)

    async def _converse(self) -> None:
        """Turn after turn until the case ends: a turn for each message the customer sends while the
        case waits for them; once a proposal waits, the reviewer decides and messages are answered by code."""
        s = self._s
        while True:
            if s.lifecycle.phase is Phase.WAITING_APPROVAL and s.action is not None:
                await self._await_agreement()
                await self._execute_action()
                return
            if s.lifecycle.phase is Phase.WAITING_APPROVAL:
                await self._await_review()
                await self._settle()
                return
            if s.lifecycle.phase is Phase.WAITING_CUSTOMER:
                await self._await_customer()
                self._next_turn()
            await self._turn()

    async def _turn(self) -> None:
        """One message's work: plan to deliver. Needing the customer, or an answer with more messages
        already waiting, leaves the case open for the next turn; every other stop ends it."""
        s = self._s
        s.conversation.model_turns += 1
        if s.conversation.model_turns > MAX_MODEL_TURNS_PER_CASE:
            raise CaseStopped(CaseStatus.NEEDS_HUMAN, StopCode.CONVERSATION_TURN_LIMIT)
        try:
            await self._plan_case()
            await self._investigate()
            await self._draft_and_review()
            await self._deliver()
        except CaseStopped as stop:
            if stop.status is CaseStatus.NEEDS_INPUT:
                await self._ask_customer(stop.reason)
            elif stop.status is CaseStatus.COMPLETED and s.conversation.inbox:
                self._reply()
                s.conversation.answered()
                self._move(Phase.WAITING_CUSTOMER)
            else:
                raise

    # --- phases ----------------------------------------------------------------------------------

    async def _plan_case(self) -> None:
        self._progress.say(ProgressKind.PLANNING)
        ids = order_ids_in(self._s.conversation.latest) or order_ids_in(self._s.question)
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
        await draft_and_review(self._s, self._model, self._event, lambda kind: self._progress.say(kind))

    async def _deliver(self) -> None:
        """Create the refund or action proposal the case then waits on, or stop with the gate's outcome."""
        s = self._s
        assert s.plan is not None and s.answer is not None
        self._move(Phase.DELIVER, upsert=False)  # no await before waiting or finishing upserts (same task)
        decision = decide_delivery(s.plan, s.answer, s.quote, set(s.evidence))
        s.answer_admitted = decision.admits_draft
        self._event(EventKind.DELIVER_GATE, decision.reason)
        if decision.outcome is not None:
            raise CaseStopped(decision.outcome, decision.code, decision.detail)
        if s.answer.next_action is NextAction.PROPOSE_ACTION:
            await self._propose_action()
            return
        assert s.quote is not None
        if refunds_as_action(s) and workflow.patched(REFUND_AS_ACTION_PATCH):
            await self._propose_action(ActionKind.REFUND_ORDER)  # the same quote, through the action contract
            return
        started = s.started_at or workflow.info().workflow_start_time  # the first run's start
        s.proposal = requests.refund_proposal(s, workflow.now(), case_started_at=started)
        s.digest = s.proposal.digest()
        self._event(
            EventKind.PROPOSAL_CREATED,
            f"{s.proposal.amount_cents} cents for {s.proposal.order_id}, "
            f"digest {s.digest}, expires {s.proposal.expires_at.isoformat()}",
        )
        self._move(Phase.WAITING_APPROVAL)  # its upsert's memo carries the proposal's line
        self._reply()
        self._progress.say(ProgressKind.WAITING_FOR_REVIEWER, until=s.proposal.expires_at)
        self._show()
        await self._write_record()

    async def _await_review(self) -> None:
        """Wait for a decision or the expiry timer, answering the customer's messages meanwhile; continue
        as new when the run has taken many messages or a flood grows the history."""
        s = self._s
        card = case_effect_card(s)
        assert s.proposal is not None and card is not None
        while s.decision is None:
            if s.conversation.inbox:
                await self._answer_while_waiting()
                continue
            wake, why = next_wake(s, s.proposal.created_at, s.proposal.expires_at)
            try:
                await workflow.wait_condition(
                    lambda: s.decision is not None or bool(s.conversation.inbox) or self._run_is_long(),
                    timeout=timedelta(seconds=max((wake - workflow.now()).total_seconds(), 0.001)),
                    timeout_summary=timer_summary(why, case_details.approval_timer_summary(card)),
                )
            except TimeoutError:
                if why is not Wake.EXPIRE:
                    on_near_expiry(s, why, self._event, workflow.now(), s.proposal.expires_at)
                    self._show()
                    continue
                await close_proposal(self._s, self._event, ProposalOutcome.EXPIRED)
                raise CaseStopped(CaseStatus.EXPIRED, StopCode.PROPOSAL_EXPIRED_WITHOUT_DECISION) from None
            if s.decision is None and not s.conversation.inbox:
                await self._continue_as_new()
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

    def _decode_review(self, payload: RawValue, *, via: str) -> ReviewDecision | SignedReview | None:
        return decoded_review(workflow.payload_converter(), payload.payload, self._s, self._event, via=via)

    def _review(
        self, review: ReviewDecision | SignedReview, *, via: str, refusal: ReviewRefusal | None = None
    ) -> tuple[ReviewOutcome, str]:
        outcome = review_attempt(self._s, review, self._event, now=workflow.now(), via=via, refusal=refusal)
        self._show()
        return outcome

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

    async def _confirm_continued_run(self) -> None:
        """Resume the carried state only once Temporal confirms where this run came from; otherwise end
        the run failed at once, like a refused input (:mod:`workflows.continued_run`)."""
        refused = await confirm_continued_run()
        if refused:
            case = self._input.case
            self._input = AdmittedInput(case, CaseInputRefusal.CARRIED_STATE_NOT_CONTINUED, refused)
            self._admit_input()
        self._resuming = False

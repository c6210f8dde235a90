"""A case that proposes an action (cancel an order): the proposal, the wait for agreement, the execution.

A mixin of :class:`workflows.support_case.SupportCaseWorkflow`. The deliver gate admitted a draft that
proposes the plan's action; code then asks the commerce server to compute it (``preview_action``),
keeps the proposal only if :mod:`workflows.action_gate` admits it, states its effect to the customer
(:mod:`workflows.action_notice`) and waits, answering messages by code, until everyone the rule names
has agreed: the customer's signed confirmation (taken by the ``message`` update) and reviewers'
approvals (the ``review`` update, over the action's digest). The agreed proposal is executed once
(``execute_action``, keyed by case and proposal); a proposal not agreed in time, withdrawn or rejected
executes nothing.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

CLOSE_ACTION_PATCH = "close-action-proposal"
"""An action proposal that ends unagreed is closed at the commerce server (release 0.12 on); the histories
recorded before it end without the call."""

with workflow.unsafe.imports_passed_through():
    from contracts.action_policy import ActionKind
    from contracts.actions import ActionProposal, ActionReceipt
    from contracts.case import (
        ActionCloseRequest,
        ActionExecuteRequest,
        ActionPreviewRequest,
        CaseStatus,
        Decision,
        Phase,
    )
    from contracts.commerce import ProposalClosed, ProposalOutcome
    from contracts.conversation import ProgressKind, ReplySource
    from contracts.errors import SupportError, rebuilt_activity_failures
    from contracts.names import ActivityName, EventKind, StopCode, stop_reason
    from workflows import activity_options as options
    from workflows import case_details, case_metrics
    from workflows.action_gate import ActionRefusal, action_request, admit_proposal
    from workflows.action_notice import proposal_notice, waiting_notice
    from workflows.case_run import CaseRun
    from workflows.customer_messages import asks_to_withdraw
    from workflows.escalation import Wake, next_wake, on_near_expiry, timer_summary
    from workflows.outcomes import CaseStopped, settlement_failure


class ActionSteps(CaseRun):
    def _refuse_action(
        self, code: StopCode, detail: str | None, event: str, status: CaseStatus = CaseStatus.NEEDS_HUMAN
    ) -> CaseStopped:
        """Record why no action is proposed; the draft that offered it is no longer shown."""
        self._s.answer_admitted = False
        self._event(EventKind.ACTION_REFUSED, event)
        return CaseStopped(status, code, detail)

    async def _propose_action(self, kind: ActionKind | None = None) -> None:
        """Ask the commerce server for ``kind`` (default: the plan's action) and keep its proposal, or stop
        saying why not."""
        s = self._s
        assert s.plan is not None and s.answer is not None
        request = action_request(s.plan, s, kind)
        if isinstance(request, ActionRefusal):
            raise self._refuse_action(
                request.code, request.detail, f"not asked: {stop_reason(request.code, request.detail)}", request.status
            )
        request = request.model_copy(update={"expires_in_seconds": s.case.options.approval_ttl_seconds})
        preview = ActionPreviewRequest(case_id=s.case.case_id, applicant=s.case.applicant, request=request)
        try:
            with rebuilt_activity_failures():
                proposal = await workflow.execute_activity(
                    ActivityName.PREVIEW_ACTION,
                    preview,
                    result_type=ActionProposal,
                    summary=f"preview {request.kind.value} of {request.order_id}",
                    **options.PREVIEW.kwargs(),
                )
        except SupportError as failure:
            raise self._refuse_action(
                StopCode.ACTION_REFUSED, failure.code, f"commerce server: {failure.reported_class}: {failure.code}"
            ) from None
        refusal = admit_proposal(proposal, request, s, s.answer, now=workflow.now())
        if refusal is not None:
            raise self._refuse_action(
                refusal.code, refusal.detail, f"proposal {proposal.proposal_id}: {refusal.code.value}"
            )
        s.action, s.digest = proposal, proposal.digest
        requires = proposal.requires
        self._event(
            EventKind.ACTION_PROPOSED,
            f"{proposal.kind.value} of {proposal.effect.target} ({proposal.proposal_id}): rule "
            f"{proposal.rule.model_dump_json()} applied; needs the customer's confirmation: "
            f"{'yes' if requires.customer else 'no'}, reviewers: {requires.reviewers}; digest {proposal.digest}, "
            f"expires {proposal.expires_at.isoformat()}",
        )
        self._move(Phase.WAITING_APPROVAL)
        self._say(proposal_notice(proposal, s.case.language), ReplySource.CASE_RECORDS)
        waiting = ProgressKind.WAITING_FOR_CUSTOMER if requires.customer else ProgressKind.WAITING_FOR_REVIEWER
        self._progress.say(waiting, until=proposal.expires_at)
        self._show()
        await self._write_record()

    async def _await_agreement(self) -> None:
        """Until everyone the rule names has agreed; a rejection, a withdrawal or the expiry ends the case
        with nothing executed. Messages meanwhile are answered by code."""
        s = self._s
        action = s.action
        assert action is not None

        def rejected() -> bool:
            return s.decision is not None and s.decision.decision is Decision.REJECT

        while not s.agreed:
            if s.decision is not None and rejected():
                await self._close_action(ProposalOutcome.REJECTED)
                raise CaseStopped(CaseStatus.REJECTED, StopCode.REJECTED, s.decision.reviewer)
            if s.conversation.inbox:
                await self._answer_while_agreeing()
                continue
            wake, why = next_wake(s, action.created_at, action.expires_at)
            try:
                await workflow.wait_condition(
                    lambda: s.agreed or rejected() or bool(s.conversation.inbox) or self._run_is_long(),
                    timeout=timedelta(seconds=max((wake - workflow.now()).total_seconds(), 0.001)),
                    timeout_summary=timer_summary(why, f"{action.kind.value} proposal expires"),
                )
            except TimeoutError:
                if why is not Wake.EXPIRE:
                    on_near_expiry(s, why, self._event, workflow.now(), action.expires_at)
                    self._show()
                    continue
                self._event(EventKind.PROPOSAL_CLOSED, "expired without agreement: nothing was executed")
                await self._close_action(ProposalOutcome.EXPIRED)
                raise CaseStopped(CaseStatus.EXPIRED, StopCode.ACTION_EXPIRED_WITHOUT_AGREEMENT) from None
            if not s.agreed and not rejected() and not s.conversation.inbox:
                await self._continue_as_new()
        while s.conversation.inbox:  # the confirming message, and any sent with it: the receipt answers them
            s.conversation.take_next()

    async def _answer_while_agreeing(self) -> None:
        """A message while the action waits: "withdraw" ends it unexecuted; any other is answered from the
        proposal by code (a confirmation it carried was taken when the message was)."""
        s = self._s
        assert s.action is not None
        message = s.conversation.take_next()
        if asks_to_withdraw(message.text):
            s.withdrawn_at = workflow.now()
            self._event(EventKind.WITHDRAWN, f"message {message.turn}: the customer withdrew the proposal")
            self._progress.say(ProgressKind.WITHDRAWN)
            await self._close_action(ProposalOutcome.WITHDRAWN)
            raise CaseStopped(CaseStatus.WITHDRAWN, StopCode.CUSTOMER_WITHDREW)
        if s.agreed:
            return  # the confirmation this message carried completes the agreement: the receipt answers it
        confirmed = s.confirmation is not None
        self._say(waiting_notice(s.action, confirmed, s.case.language, workflow.now()), ReplySource.CASE_RECORDS)

    async def _close_action(self, outcome: ProposalOutcome) -> None:
        """Close the unagreed proposal at the commerce server, so that no agreement signed in time executes it
        afterwards, whoever presents it (the close-action-proposal patch of 0.12; earlier runs ended without).
        A failure to close is recorded; the case ends as it would have either way."""
        s = self._s
        action = s.action
        if action is None or not workflow.patched(CLOSE_ACTION_PATCH):
            return
        request = ActionCloseRequest(
            case_id=s.case.case_id, applicant=s.case.applicant, proposal=action, outcome=outcome
        )
        try:
            with rebuilt_activity_failures():
                closed = await workflow.execute_activity(
                    ActivityName.CLOSE_ACTION_PROPOSAL,
                    request,
                    result_type=ProposalClosed,
                    summary=f"close_action_proposal {outcome.value}: {action.kind.value} of {action.effect.target}",
                    **options.CLOSE.kwargs(),
                )
        except SupportError as failure:
            self._event(EventKind.PROPOSAL_CLOSE_FAILED, f"{failure.reported_class}: {failure.code}")
            return
        at = closed.closed_at.isoformat(timespec="seconds")
        self._event(
            EventKind.PROPOSAL_CLOSED,
            f"closed as {closed.outcome.value} at the commerce server at {at}: nothing of this case executes",
        )

    async def _execute_action(self) -> None:
        """Execute the agreed action once and state the receipt, or stop saying why there is none."""
        s = self._s
        action = s.action
        assert action is not None
        self._move(Phase.SETTLE)
        request = ActionExecuteRequest(
            case_id=s.case.case_id,
            applicant=s.case.applicant,
            proposal=action,
            idempotency_key=f"{s.case.case_id}:{action.proposal_id}"[-128:],
            confirmation_token=s.confirmation.confirmation_token if s.confirmation else None,
            approval_tokens=[approval.approval_token for approval in s.approvals],
        )
        try:
            with rebuilt_activity_failures():
                receipt = await workflow.execute_activity(
                    ActivityName.EXECUTE_ACTION,
                    request,
                    result_type=ActionReceipt,
                    summary=case_details.action_summary(action),
                    **options.SETTLE.kwargs(),
                )
        except SupportError as failure:
            self._event(EventKind.SETTLEMENT_FAILED, f"{failure.reported_class}: {failure.code}")
            raise CaseStopped.after(settlement_failure(failure)) from None
        s.action_receipt = receipt
        if receipt.kind is ActionKind.REFUND_ORDER:  # the workflow takes one receipt, replayed or not
            case_metrics.refund_paid(s, receipt.refund_cents)
        self._event(
            EventKind.ACTION_EXECUTED,
            f"receipt {receipt.receipt_id}: {receipt.kind.value} of {receipt.target}, agreed by "
            f"{', '.join(receipt.agreed_by) or 'the rule alone'}{' (replayed)' if receipt.replay else ''}",
        )
        self._finish(CaseStatus.COMPLETED, stop_reason(StopCode.ACTION_EXECUTED))

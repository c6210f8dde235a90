"""The customer's side of a case (workflow code): the ``message`` and ``reply`` updates, the
``conversation`` query, and the waits in which messages are taken.

A mixin of :class:`workflows.support_case.SupportCaseWorkflow` (Temporal finds handlers on base
classes too); the admission rules are :mod:`workflows.customer_messages`.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from contracts.case import (
        AcceptedConfirmation,
        Budgets,
        CaseStatus,
        Phase,
    )
    from contracts.case_facts import CaseFacts
    from contracts.commerce import ProposalOutcome
    from contracts.conversation import (
        CONVERSATION,
        MESSAGE,
        REPLY,
        ConversationView,
        MessageAccepted,
        MessageRefusal,
        ProgressKind,
        ReplySource,
        ReplyWait,
        TurnReply,
    )
    from contracts.names import (
        EventKind,
        StopCode,
    )
    from workflows import case_metrics
    from workflows.action_gate import judge_confirmation
    from workflows.case_run import CaseRun
    from workflows.case_view import (
        conversation_view,
    )
    from workflows.customer_messages import (
        admission_refusal,
        asks_to_withdraw,
        credential_of,
        decoded_message,
        idle_limit,
        refusal_error,
        refused,
        token_fingerprint,
        verify_sender,
    )
    from workflows.customer_notice import waiting_notice
    from workflows.outcomes import CaseStopped
    from workflows.proposal_closure import close_proposal


class ConversationHandlers(CaseRun):
    # --- the conversation ------------------------------------------------------------------------

    @workflow.update(name=MESSAGE, description="A further message from the case's customer, under their credential.")
    async def message(self, payload: RawValue) -> MessageAccepted:
        """Take a customer message: refused (one sentence, the text not kept) unless its credential proves
        the case's own customer now and the case can take it (:mod:`workflows.customer_messages`)."""
        if not await self._takes_reviews():
            case_metrics.message_refused(self._state, MessageRefusal.CASE_CLOSED)
            raise refusal_error(MessageRefusal.CASE_CLOSED, None)
        s = self._s
        message = decoded_message(workflow.payload_converter(), payload.payload)
        if isinstance(message, MessageRefusal):
            raise refused(s, message, self._event)
        accepted_at = workflow.now()
        refusal = admission_refusal(s, message, accepted_at)
        if refusal is None and message.message_id not in s.conversation.message_ids:
            sender, refusal, code = await verify_sender(s, message.token, accepted_at)
            if refusal is not None:
                raise refused(s, refusal, self._event, detail=code)
            refusal = admission_refusal(s, message, accepted_at)  # other messages may have been taken meanwhile
            if refusal is None and message.message_id not in s.conversation.message_ids:
                assert sender is not None
                confirmation: AcceptedConfirmation | None = None
                if message.confirmation is not None:
                    next_turn = s.conversation.messages + 1
                    judged = judge_confirmation(
                        message.confirmation, s, sender.identity, now=accepted_at, message=next_turn
                    )
                    if isinstance(judged, str):
                        self._event(EventKind.CONFIRMATION_REFUSED, f"with message {next_turn}: {judged}")
                        raise refused(s, MessageRefusal.CONFIRMATION_INVALID, self._event, detail=judged)
                    confirmation = judged
                credential = credential_of(sender, message.token)
                turn = s.conversation.accept(message.text, message.message_id, workflow.now(), credential)
                case_metrics.message_accepted(s)
                self._event(
                    EventKind.MESSAGE_ACCEPTED,
                    f"message {turn} from {credential.subject} under {credential.issuer} credential "
                    f"{credential.fingerprint}",
                )
                if confirmation is not None:
                    s.confirmation = confirmation.model_copy(update={"message": turn})
                    self._event(
                        EventKind.CONFIRMATION_ACCEPTED,
                        f"{confirmation.subject} confirmed the proposal with message {turn} under an issuer-signed "
                        f"confirmation {token_fingerprint(confirmation.confirmation_token)} over digest {s.digest}",
                    )
                self._progress.say(ProgressKind.MESSAGE_RECEIVED)
                self._show()
                return MessageAccepted(case_id=s.case.case_id, message_id=message.message_id, turn=turn)
        if refusal is not None:
            raise refused(s, refusal, self._event)
        turn = s.conversation.message_ids[message.message_id]
        return MessageAccepted(case_id=s.case.case_id, message_id=message.message_id, turn=turn, duplicate=True)

    @message.validator
    def _validate_message(self, payload: RawValue) -> None:
        """Refuse before Temporal records anything: a malformed, over-long or too frequent message, or one
        to a case that has ended."""
        if self._state is None or self._input.refusal is not None:
            case_metrics.message_refused(self._state, MessageRefusal.CASE_CLOSED)
            raise refusal_error(MessageRefusal.CASE_CLOSED, None)
        message = decoded_message(workflow.payload_converter(), payload.payload)
        refusal = (
            message if isinstance(message, MessageRefusal) else admission_refusal(self._s, message, workflow.now())
        )
        if refusal is not None:
            case_metrics.message_refused(self._s, refusal)
            raise refusal_error(refusal, self._s)

    @workflow.update(name=REPLY, description="Wait up to 30 s for the reply to one customer message.")
    async def reply(self, wait: ReplyWait) -> TurnReply:
        if self._state is None or not await self._takes_reviews():
            raise refusal_error(MessageRefusal.CASE_CLOSED, None)
        conversation, lifecycle = self._s.conversation, self._s.lifecycle
        if wait.wait_seconds > 0:
            with contextlib.suppress(TimeoutError):  # the case as it is, reply or not
                await workflow.wait_condition(
                    lambda: conversation.reply_to(wait.turn) is not None or lifecycle.outcome is not None,
                    timeout=timedelta(seconds=wait.wait_seconds),
                    timeout_summary="wait for a reply",
                )
        return TurnReply(
            case_id=self._s.case.case_id,
            turn=wait.turn,
            status=lifecycle.status,
            reply=conversation.reply_to(wait.turn),
            progress_offset=self._progress.offset(),
        )

    @workflow.query(name=CONVERSATION, description="The customer's messages and the service's replies.")
    def conversation(self) -> ConversationView:
        self._refuse_query()
        return conversation_view(self._s)

    def _announce_tool(self, name: str) -> None:
        self._progress.tool(name, self._s.plan.order_id if self._s.plan else None)

    # --- waiting for the customer, or answering while a reviewer decides ---

    async def _answer_while_waiting(self) -> None:
        """A message while the proposal waits: "withdraw" closes it unpaid; anything else is answered
        from the proposal by code (no model reads it)."""
        s = self._s
        assert s.proposal is not None
        message = s.conversation.take_next()
        if asks_to_withdraw(message.text):
            s.withdrawn_at = workflow.now()  # from here on no review is accepted
            self._event(EventKind.WITHDRAWN, f"message {message.turn}: the customer withdrew the proposal")
            await close_proposal(s, self._event, ProposalOutcome.WITHDRAWN)
            self._progress.say(ProgressKind.WITHDRAWN)
            raise CaseStopped(CaseStatus.WITHDRAWN, StopCode.CUSTOMER_WITHDREW)
        self._say(waiting_notice(s.proposal, s.case.language, workflow.now()), ReplySource.CASE_RECORDS)

    async def _ask_customer(self, reason: str) -> None:
        """The service needs something from the customer: reply, and wait for the next message."""
        s = self._s
        self._move(Phase.WAITING_CUSTOMER, upsert=False)
        s.reason = reason  # why the service waits; the next turn clears it
        s.conversation.waiting_until = workflow.now() + idle_limit(s)
        self._event(
            EventKind.WAITING_FOR_CUSTOMER, f"{reason}; waiting until {s.conversation.waiting_until.isoformat()}"
        )
        self._reply()
        self._progress.say(ProgressKind.WAITING_FOR_CUSTOMER, until=s.conversation.waiting_until)
        self._upsert_attributes()
        self._show()
        await self._write_record()

    async def _await_customer(self) -> None:
        """Until a message is waiting; closes the case ``needs_input`` at the tenant's idle limit."""
        s = self._s
        while not s.conversation.inbox:
            until = s.conversation.waiting_until or workflow.now()
            try:
                await workflow.wait_condition(
                    lambda: bool(s.conversation.inbox) or self._run_is_long(),
                    timeout=timedelta(seconds=max((until - workflow.now()).total_seconds(), 0.001)),
                    timeout_summary="close the case if the customer does not write",
                )
            except TimeoutError:
                self._event(EventKind.IDLE_CLOSED, f"no message since {until.isoformat()}")
                raise CaseStopped(CaseStatus.NEEDS_INPUT, StopCode.CUSTOMER_IDLE) from None
            if not s.conversation.inbox:
                await self._continue_as_new()

    def _next_turn(self) -> None:
        """Take the next message; the turn starts afresh (its findings and budgets), the request goes on.
        A message that only says "withdraw" closes the case instead."""
        s = self._s
        message = s.conversation.take_next()
        if asks_to_withdraw(message.text):
            self._event(EventKind.WITHDRAWN, f"message {message.turn}: the customer withdrew the request")
            self._progress.say(ProgressKind.WITHDRAWN)
            raise CaseStopped(CaseStatus.WITHDRAWN, StopCode.CUSTOMER_WITHDREW)
        s.conversation.waiting_until, s.reason = None, None
        s.plan, s.quote, s.answer, s.answer_admitted = None, None, None, False
        s.facts, s.evidence, s.budgets = CaseFacts(), {}, Budgets()
        self._move(Phase.PLAN)

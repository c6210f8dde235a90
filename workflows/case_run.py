"""The state of one run of a case and the helpers every part of the workflow shares (workflow code).

:class:`CaseRun` holds the run's input, its :class:`contracts.case_input.CaseState`, the progress
stream, and the moves every handler and phase makes the same way: enter a phase, finish, record an
event, upsert what changed, reply to the customer, continue as new. The handlers live in
:mod:`workflows.conversation_handlers`; the lifecycle in :mod:`workflows.support_case`.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.contrib.workflow_streams import WorkflowStream

with workflow.unsafe.imports_passed_through():
    from contracts import search_attributes as sa
    from contracts.case import (
        CaseStatus,
        Phase,
    )
    from contracts.case_input import CaseState
    from contracts.conversation import (
        MESSAGES_PER_RUN,
        ProgressKind,
        ReplySource,
        Speaker,
    )
    from contracts.names import (
        EventKind,
    )
    from workflows import case_details, case_metrics
    from workflows.case_input import AdmittedInput, query_refusal
    from workflows.case_view import (
        case_memo,
        customer_answer,
        search_attribute_changes,
    )
    from workflows.progress import Progress
    from workflows.refund_settlement import write_case_record


class CaseRun:
    """What a run of the case workflow holds (set in ``SupportCaseWorkflow.__init__``)."""

    _input: AdmittedInput
    _state: CaseState | None
    _resuming: bool
    _stream: WorkflowStream
    _progress: Progress

    @property
    def _s(self) -> CaseState:
        assert self._state is not None, "a run that refused its input has no case state"
        return self._state

    async def _takes_reviews(self) -> bool:
        """False when the run refused its input; a run resuming a carried state first waits until Temporal
        has confirmed where it came from, so a review sent meanwhile is judged then, never lost."""
        if self._resuming:
            await workflow.wait_condition(lambda: not self._resuming or self._input.refusal is not None)
        return self._input.refusal is None

    def _refuse_query(self) -> None:
        refused = query_refusal(self._input, resuming=self._resuming)
        if refused is not None:
            raise refused

    def _reply(self) -> None:
        """Send the customer what :func:`customer_answer` says they are shown now, once."""
        text, source = customer_answer(self._s)
        if text is not None and source is not None:
            self._say(text, ReplySource(source.value))

    def _say(self, text: str, source: ReplySource) -> None:
        conversation = self._s.conversation
        last = conversation.entries[-1] if conversation.entries else None
        if (
            last is not None
            and last.speaker is Speaker.SERVICE
            and last.text == text
            and last.turn == conversation.turn
        ):
            return  # already said for this message (a close right after the reply it repeats)
        entry = conversation.add(Speaker.SERVICE, text, workflow.now(), turn=conversation.turn, source=source)
        self._event(EventKind.REPLY_SENT, f"reply {entry.seq} to message {entry.turn} ({source.value})")
        case_metrics.reply_sent(self._s, source)
        kind = ProgressKind.RECEIPT if source is ReplySource.RECEIPT else ProgressKind.REPLY
        self._progress.publish(kind, entry.text)

    # --- continue-as-new -------------------------------------------------------------------------

    def _run_is_long(self) -> bool:
        return self._s.conversation.run_messages >= MESSAGES_PER_RUN or workflow.info().is_continue_as_new_suggested()

    async def _continue_as_new(self) -> None:
        """Start the next run of this case with its whole state, once every handler has finished; the
        pending proposal or the wait for the customer stays as it is. A review accepted meanwhile is
        decided in this run instead (its readers of progress then catch up when the case ends)."""
        self._stream.detach_pollers()
        await workflow.wait_condition(workflow.all_handlers_finished)
        if not self._s.waiting_undecided:
            return
        info = workflow.info()
        waiting = "the customer" if self._s.lifecycle.phase is Phase.WAITING_CUSTOMER else "a reviewer"
        self._event(
            EventKind.CONTINUED_AS_NEW,
            f"history at {info.get_current_history_size()} bytes / {info.get_current_history_length()} events; "
            f"run {self._s.continued + 2} keeps waiting for {waiting}",
        )
        workflow.continue_as_new(
            self._s.next_run_input(stream_offset=self._progress.offset()),
            memo=dict(workflow.memo()),
            search_attributes=info.typed_search_attributes,
        )

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
        self._s.conversation.turn = max(self._s.conversation.messages, 1)  # the last message gets the close
        self._reply()
        self._progress.say(ProgressKind.CLOSED)
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

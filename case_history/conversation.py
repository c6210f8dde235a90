"""A case's conversation as its workflow histories record it: every further customer message (a
``message`` update: its text, message id and credential, and the answer it got) and the transcript the
case kept (its question, the customer's messages and the service's replies).

Pure, like the rest of :mod:`case_history`: nothing is verified here (:mod:`case_history.verify_conversation`
checks the credentials). A message's token is kept for that check and never shown: every reader prints
its fingerprint (:func:`token_fingerprint`) instead, as the case's own transcript does.

A case that continued as new keeps a bounded transcript in each run; :func:`whole_conversation` joins
the runs of one case (first run first) into the whole conversation, each entry once, by its number.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory

from case_history.trail import decode, decode_payload, event_time, failure_text
from contracts.case import CaseEvent, CaseRecord, CaseView
from contracts.case_input import CaseInput
from contracts.conversation import (
    MESSAGE,
    ConversationEntry,
    CustomerMessage,
    MessageAccepted,
    ReplySource,
    Speaker,
)
from contracts.names import MESSAGE_REFUSED, ActivityName, EventKind

BUILT_IN_ISSUER = "built-in"
"""The issuer a case names for a token its own keystore's issuer key signed."""
MESSAGE_EVENT_KINDS = frozenset(
    {
        EventKind.MESSAGE_ACCEPTED,
        EventKind.MESSAGE_REFUSED,
        EventKind.REPLY_SENT,
        EventKind.WAITING_FOR_CUSTOMER,
        EventKind.WITHDRAWN,
        EventKind.IDLE_CLOSED,
    }
)
"""The case-log kinds a conversation adds (shown with the conversation)."""


REPLY_AUTHORS = {
    ReplySource.MODEL_DRAFT: "model draft (reviewed)",
    ReplySource.RECEIPT: "receipt (written by code)",
    ReplySource.STATUS_NOTICE: "status notice (written by code)",
    ReplySource.CASE_RECORDS: "case records (answered by code)",
}
"""Who wrote a service entry, as the audit names it."""


def token_fingerprint(token: str) -> str:
    """The fingerprint a case records for a credential: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]


class MessageOutcome(StrEnum):
    ACCEPTED = "accepted"
    REFUSED = "refused"
    FAILED = "failed"
    """The update failed for a reason other than a refusal of the message."""
    PENDING = "pending"
    """No answer recorded in this run (yet)."""


@dataclass(frozen=True)
class MessageUpdate:
    """One ``message`` update Temporal accepted, as its payload claims it (nothing here is verified)."""

    event_id: int
    at: datetime
    """When Temporal accepted the update (its ``WorkflowExecutionUpdateAccepted`` event)."""
    update_id: str
    sender: str
    """The Temporal client identity that sent it (free text the client chose)."""
    text: str | None = None
    message_id: str | None = None
    token: str | None = field(default=None, repr=False)
    """The credential: kept for :mod:`case_history.verify_conversation`, never printed."""
    problem: str | None = None
    """Why the payload is not a customer message, when it is not one."""
    outcome: MessageOutcome = MessageOutcome.PENDING
    refusal: str | None = None
    """A refused message's code (:class:`contracts.conversation.MessageRefusal`)."""
    answer: str | None = None
    """The sentence a refused or failed update answered (what the customer read)."""
    turn: int | None = None
    """An accepted message's number among the customer's messages (the question is 1)."""
    duplicate: bool = False
    """Accepted before under the same message id: nothing new was taken."""
    run_id: str = ""

    @property
    def fingerprint(self) -> str | None:
        return token_fingerprint(self.token) if self.token else None


@dataclass(frozen=True)
class RunConversation:
    """What one run's history says about the conversation."""

    run_id: str
    messages: list[MessageUpdate]
    entries: list[ConversationEntry]
    """Every entry the run carried in, wrote to a case record or returned, by number."""
    dropped: int = 0
    read_from: str = "nothing recorded"
    events: list[CaseEvent] = field(default_factory=list)
    """The run's case-log events of the conversation kinds (:data:`MESSAGE_EVENT_KINDS`)."""


@dataclass(frozen=True)
class Conversation:
    """The whole conversation of a case across its runs, first message first."""

    entries: list[ConversationEntry] = field(default_factory=list)
    messages: list[MessageUpdate] = field(default_factory=list)
    """Every ``message`` update of the runs read, in history order (accepted, refused or pending)."""
    events: list[CaseEvent] = field(default_factory=list)
    missing: int = 0
    """Entry numbers up to the last one read that no run read holds (in a run not read)."""
    runs: int = 0
    read_from: str = "nothing recorded"

    @property
    def customer_entries(self) -> list[ConversationEntry]:
        return [entry for entry in self.entries if entry.speaker is Speaker.CUSTOMER]

    @property
    def replies(self) -> list[ConversationEntry]:
        return [entry for entry in self.entries if entry.speaker is Speaker.SERVICE]

    @property
    def refused(self) -> list[MessageUpdate]:
        return [message for message in self.messages if message.outcome is MessageOutcome.REFUSED]


def run_conversation(history: WorkflowHistory) -> RunConversation:
    """The conversation one run's history records (see the module docstring): every entry the run
    carried in, wrote to a case record or returned, each once by its number."""
    events: list[HistoryEvent] = list(history.events)
    run_id, carried = _start(events)
    state = carried.carried if carried else None
    messages: dict[str, MessageUpdate] = {}
    entries = {entry.seq: entry for entry in (state.conversation.entries if state else [])}
    dropped, read_from = (state.conversation.dropped, "the state it carried in") if state else (0, "nothing recorded")
    log = list(state.log.events) if state else []
    for event in events:
        kind = event.event_type
        view: CaseView | None = None
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            accepted = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if accepted.input.name == MESSAGE:
                update = _message(event, accepted.meta.update_id, accepted.meta.identity, accepted.input.args, run_id)
                messages[update.update_id] = update
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
            completed = event.workflow_execution_update_completed_event_attributes
            if completed.meta.update_id in messages:
                messages[completed.meta.update_id] = _answered(messages[completed.meta.update_id], completed.outcome)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name == ActivityName.WRITE_CASE_RECORD:
                record = decode(attributes.input, CaseRecord).value
                if record is not None:
                    view, log, read_from = record.case, list(record.events), "the case records"
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            view = decode(event.workflow_execution_completed_event_attributes.result, CaseView).value
            read_from = "the workflow's result" if view is not None else read_from
        if view is not None:
            entries |= {entry.seq: entry for entry in view.conversation}
            dropped = view.conversation_dropped
    ours = [event for event in log if event.kind in MESSAGE_EVENT_KINDS]
    kept = [entries[seq] for seq in sorted(entries)]
    return RunConversation(run_id, list(messages.values()), kept, dropped, read_from, ours)


def whole_conversation(runs: list[RunConversation]) -> Conversation:
    """The runs' conversations joined (``runs`` first run first): each entry once by its number, the
    latest run's copy kept; every message update in order."""
    by_seq: dict[int, ConversationEntry] = {}
    for run in runs:
        for entry in run.entries:
            by_seq[entry.seq] = entry
    entries = [by_seq[seq] for seq in sorted(by_seq)]
    missing = entries[-1].seq - len(entries) if entries else max((run.dropped for run in runs), default=0)
    read_from = runs[-1].read_from if runs else "nothing recorded"
    if len(runs) > 1:
        read_from = f"{read_from} and the transcripts of {len(runs) - 1} earlier run(s)"
    events: dict[tuple[object, ...], CaseEvent] = {}
    for run in runs:  # a run's log holds the events its state carried in: each once
        for event in run.events:
            events.setdefault((event.at, event.kind, event.detail), event)
    return Conversation(
        entries=entries,
        messages=[message for run in runs for message in run.messages],
        events=list(events.values()),
        missing=missing,
        runs=len(runs),
        read_from=read_from,
    )


def conversation_of(history: WorkflowHistory) -> Conversation:
    """The conversation one run's history records, as a whole conversation of that run alone."""
    return whole_conversation([run_conversation(history)])


def _start(events: list[HistoryEvent]) -> tuple[str, CaseInput | None]:
    if not events or events[0].event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        return "", None
    started = events[0].workflow_execution_started_event_attributes
    return started.original_execution_run_id, decode(started.input, CaseInput).value


def _message(event: HistoryEvent, update_id: str, sender: str, args: Any, run_id: str) -> MessageUpdate:
    update = MessageUpdate(event.event_id, event_time(event), update_id, sender, run_id=run_id)
    decoded = decode(args, CustomerMessage)
    if decoded.value is None:
        return replace(update, problem=f"not a customer message ({decoded.problem})")
    message = decoded.value
    return replace(update, text=message.text, message_id=message.message_id, token=message.token)


def _answered(update: MessageUpdate, outcome: Any) -> MessageUpdate:
    if outcome.HasField("failure"):
        failure = outcome.failure
        info = failure.application_failure_info if failure.HasField("application_failure_info") else None
        if info is not None and info.type == MESSAGE_REFUSED:
            payloads = info.details.payloads
            details = decode_payload(payloads[0], dict[str, Any]).value if payloads else None
            code = details.get("code") if isinstance(details, dict) else None
            return replace(
                update, outcome=MessageOutcome.REFUSED, refusal=str(code or "refused"), answer=failure.message
            )
        return replace(update, outcome=MessageOutcome.FAILED, answer=failure_text(failure))
    answer = decode(outcome.success, MessageAccepted).value
    if answer is None:
        return replace(update, outcome=MessageOutcome.FAILED, answer="answered, but not with a message acceptance")
    return replace(update, outcome=MessageOutcome.ACCEPTED, turn=answer.turn, duplicate=answer.duplicate)

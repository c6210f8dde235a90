"""A case's trail as its workflow history records it: what was asked, proposed, reviewed and paid.

:func:`trail_from_history` decodes one run's history (fetched from Temporal, or an exported JSON file
as ``temporal workflow show --output json`` writes it) into a :class:`CaseTrail`, and
:func:`run_chain` orders the runs of one case (a waiting case continues as new) by the run ids
Temporal recorded in each start event. Both are pure: no server, no keys, no clock. They read only
what the history carries and never judge it; a payload that does not decode is kept as a problem,
for :mod:`case_history.verify` to name.

Nothing here trusts the history. It is data that anyone with write access to the namespace, or a
compromised worker, could have shaped; only the signatures :mod:`case_history.verify` checks, with
public keys from outside the history, give it weight.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Generic, TypeVar

import jwt
from pydantic import ValidationError
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory

from case_history.earlier_inputs import earlier_carried_input
from contracts.case import CaseRecord, CaseStatus, CaseView, SettleRequest
from contracts.case_input import CaseInput
from contracts.commerce import RefundProposal, RefundReceipt
from contracts.credentials import SignedReview
from contracts.errors import ContractError
from contracts.names import REVIEW, ActivityName, EventKind
from contracts.payload_codec import HISTORY_PAYLOAD_CONVERTER

T = TypeVar("T")
LOCAL_ACTIVITY_MARKER = "core_local_activity"
"""The marker name of a local activity's ``MarkerRecorded`` event (Temporal's core SDK writes it)."""
_CONVERTER = HISTORY_PAYLOAD_CONVERTER


class End(StrEnum):
    """How an activity or a run ended, as the audit names it."""

    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed out"
    CANCELED = "canceled"
    TERMINATED = "terminated"
    CONTINUED_AS_NEW = "continued as new"
    PENDING = "pending"
    """An activity scheduled that has not ended (yet)."""


ACTIVITY_ENDS = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: End.COMPLETED,
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: End.FAILED,
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: End.TIMED_OUT,
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: End.CANCELED,
}
RUN_ENDS = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: End.COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: End.FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: End.TIMED_OUT,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: End.CANCELED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: End.TERMINATED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: End.CONTINUED_AS_NEW,
}


class HistoryErrorCode(StrEnum):
    HISTORY_UNREADABLE = "history_unreadable"
    """An exported history that is not a case's history this code can read."""


@dataclass(frozen=True)
class Decoded(Generic[T]):
    """A payload decoded as ``T``, or why it is not one (``value`` None and ``problem`` set)."""

    value: T | None = None
    problem: str | None = None


@dataclass(frozen=True)
class Settlement:
    """The last ``execute_refund`` activity of the run: what it was asked and what it returned."""

    scheduled_event_id: int
    scheduled_at: datetime
    request: Decoded[SettleRequest]
    outcome: str
    """``completed``, ``failed``, ``timed out``, ``canceled``, or ``pending`` (no end recorded yet)."""
    receipt: Decoded[RefundReceipt] = Decoded()


@dataclass(frozen=True)
class CaseTrail:
    """What one run's history says about the case (nothing here is verified)."""

    workflow_id: str
    started_at: datetime | None
    """When this case started as this run's history tells it: the run's start, or for a run continued as
    new the ``case_started`` event its carried state holds (a claim: :attr:`run_started_at` is Temporal's)."""
    case: Decoded[CaseInput]
    proposal: RefundProposal | None = None
    """The last proposal written to a case record (what a waiting case showed its reviewer)."""
    review_tokens: list[str] = field(default_factory=list)
    """The approval tokens of every review signal and update, in history order (valid or not)."""
    settlement: Settlement | None = None
    run_end: str | None = None
    """How the run ended (``completed``, ``continued as new``, ...); None while it runs."""
    final_status: CaseStatus | None = None
    final_reason: str | None = None
    run_id: str = ""
    """This run's id, as Temporal recorded it in the start event."""
    continued_from: str = ""
    """The run Temporal continued this one from; empty for a run that a client started."""
    run_started_at: datetime | None = None
    """When Temporal started this run (its start event)."""


MAX_CHAIN_RUNS = 1000
"""A walk back through a case's runs stops here (a case continues as new only under a review flood)."""


def run_chain(trails: list[CaseTrail]) -> list[CaseTrail]:
    """The runs of one case in the order Temporal ran them, from ``trails`` given in any order: the last
    run is the one no other run continued from, and each run before it is the one it names as
    ``continued_from``. The walk stops where a named run is missing: the first run returned then still
    has ``continued_from`` set, which :mod:`case_history.verify` reports as a broken chain."""
    if not trails:
        return []
    by_run = {trail.run_id: trail for trail in trails}
    continued = {trail.continued_from for trail in trails if trail.continued_from}
    lasts = [trail for trail in trails if trail.run_id not in continued]
    chain = [lasts[-1] if lasts else trails[-1]]
    while chain[0].continued_from and len(chain) < MAX_CHAIN_RUNS:
        earlier = by_run.get(chain[0].continued_from)
        if earlier is None or earlier in chain:
            break
        chain.insert(0, earlier)
    return chain


def decode(payloads: Payloads | None, kind: type[T]) -> Decoded[T]:
    """The first payload of ``payloads`` as ``kind``, or the problem (never an exception)."""
    if payloads is None or not payloads.payloads:
        return Decoded(problem="no payload")
    return decode_payload(payloads.payloads[0], kind)


def _earlier_input(payload: Payload) -> CaseInput | None:
    """The input of a run that an earlier release continued as new (:mod:`case_history.earlier_inputs`)."""
    try:
        return earlier_carried_input(_CONVERTER.from_payload(payload))
    except Exception:  # anything a writer of the history put there: not an earlier input, never raised
        return None


def decode_payload(payload: Payload, kind: type[T]) -> Decoded[T]:
    try:
        return Decoded(value=_CONVERTER.from_payload(payload, kind))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "payload"
        return Decoded(problem=f"{where}: {first['msg']}"[:200])
    except Exception as error:  # anything a writer of the history put there is reported, never raised
        return Decoded(problem=f"not decodable ({type(error).__name__})")


@dataclass(frozen=True)
class LocalActivity:
    """A local activity as its ``MarkerRecorded`` event records it: type, id, attempt, and its result or
    failure. Its input is never in the history (Temporal does not record it)."""

    activity_type: str
    activity_id: str
    attempt: int
    seq: int = 0
    """The workflow's sequence number of the activity (the order it scheduled its activities in)."""
    result: Payload | None = None
    failure: Failure | None = None
    problem: str | None = None
    """Why the marker's ``data`` did not decode, if it did not."""

    @property
    def outcome(self) -> str:
        return End.FAILED if self.failure is not None or self.result is None else End.COMPLETED


def local_activity(event: HistoryEvent) -> LocalActivity | None:
    """The local activity ``event`` records, or None when it is not a local activity's marker."""
    if event.event_type != EventType.EVENT_TYPE_MARKER_RECORDED:
        return None
    marker = event.marker_recorded_event_attributes
    if marker.marker_name != LOCAL_ACTIVITY_MARKER:
        return None
    details = marker.details
    data = decode(details.get("data"), dict[str, Any])
    raw: dict[str, Any] = data.value if isinstance(data.value, dict) else {}
    result = details.get("result")
    results = result.payloads if result is not None else []
    attempt, seq = raw.get("attempt"), raw.get("seq")
    return LocalActivity(
        activity_type=str(raw.get("activity_type") or "?"),
        activity_id=str(raw.get("activity_id") or ""),
        attempt=attempt if isinstance(attempt, int) and attempt > 0 else 1,
        seq=seq if isinstance(seq, int) else 0,
        result=results[0] if results else None,
        failure=marker.failure if marker.HasField("failure") else None,
        problem=data.problem,
    )


def trail_from_history(history: WorkflowHistory) -> CaseTrail:
    """Decode one run of a case workflow (see the module docstring)."""
    events: list[HistoryEvent] = list(history.events)
    if not events or events[0].event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        return CaseTrail(history.workflow_id, None, Decoded(problem="the history has no start event"))
    start = events[0]
    started = start.workflow_execution_started_event_attributes
    case = decode(started.input, CaseInput)
    if case.value is None and started.input.payloads:
        earlier = _earlier_input(started.input.payloads[0])
        case = Decoded(value=earlier) if earlier is not None else case
    settlement: Settlement | None = None
    proposal: RefundProposal | None = None
    tokens: list[str] = []
    run_end: str | None = None
    final: CaseView | None = None
    for event in events[1:]:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            name = attributes.activity_type.name
            if name == ActivityName.EXECUTE_REFUND:
                request = decode(attributes.input, SettleRequest)
                settlement = Settlement(event.event_id, event_time(event), request, "pending")
            elif name == ActivityName.WRITE_CASE_RECORD:
                record = decode(attributes.input, CaseRecord).value
                if record is not None and record.case.proposal is not None:
                    proposal = record.case.proposal
        elif kind in ACTIVITY_ENDS:
            settlement = _ended(settlement, event)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            signal = event.workflow_execution_signaled_event_attributes
            if signal.signal_name == REVIEW:
                tokens += _token(signal.input)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            update = event.workflow_execution_update_accepted_event_attributes.accepted_request.input
            if update.name == REVIEW:
                tokens += _token(update.args)
        elif kind in RUN_ENDS:
            run_end = RUN_ENDS[kind]
            if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
                final = decode(event.workflow_execution_completed_event_attributes.result, CaseView).value
    return CaseTrail(
        workflow_id=history.workflow_id,
        started_at=_case_started_at(case.value, event_time(start)),
        case=case,
        proposal=proposal,
        review_tokens=tokens,
        settlement=settlement,
        run_end=run_end,
        final_status=final.status if final else None,
        final_reason=final.reason if final else None,
        run_id=started.original_execution_run_id,
        continued_from=started.continued_execution_run_id,
        run_started_at=event_time(start),
    )


def recorded_workflow_id(document: Any, fallback: str) -> str:
    """The workflow id a history's start event names (the server records it there), else ``fallback``.

    A replay must run under the workflow id the case had: the workflow checks that a carried state
    belongs to its own workflow id (workflows/case_input.py), so a continued run replayed under another
    id would refuse its input where the recorded run went on."""
    try:
        started = document["events"][0]["workflowExecutionStartedEventAttributes"]
        workflow_id = started.get("workflowId")
    except (KeyError, IndexError, TypeError, AttributeError):
        return fallback
    return workflow_id if isinstance(workflow_id, str) and workflow_id else fallback


def history_from_json(text: str, workflow_id: str) -> WorkflowHistory:
    """A history exported by ``temporal workflow show --output json`` (or ``WorkflowHistory.to_json``)."""
    try:
        data: Any = json.loads(text)
        return WorkflowHistory.from_json(workflow_id, data)
    except Exception as error:  # a file that is not a history is the caller's input, said in one line
        raise ContractError(
            HistoryErrorCode.HISTORY_UNREADABLE,
            f"not a workflow history in JSON ({type(error).__name__}); export one with "
            "`temporal workflow show --workflow-id case-CASE --output json`",
        ) from None


def history_from_file(path: Path, workflow_id: str) -> WorkflowHistory:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ContractError(
            HistoryErrorCode.HISTORY_UNREADABLE, f"cannot read {path}: {type(error).__name__}"
        ) from None
    return history_from_json(text, workflow_id)


def _ended(settlement: Settlement | None, event: HistoryEvent) -> Settlement | None:
    """The settlement with the end of its activity, when ``event`` ends the last ``execute_refund``."""
    if settlement is None:
        return None
    ended = activity_end(event, settlement.scheduled_event_id, RefundReceipt)
    if ended is None:
        return settlement  # another activity, or an earlier settlement's end
    end, receipt = ended
    return Settlement(settlement.scheduled_event_id, settlement.scheduled_at, settlement.request, end, receipt)


def activity_end(event: HistoryEvent, scheduled_id: int, result_type: type[T]) -> tuple[End, Decoded[T]] | None:
    """How ``event`` (one of :data:`ACTIVITY_ENDS`) ends the activity scheduled as ``scheduled_id``, with its
    result decoded as ``result_type`` when it completed; None when it ends another activity."""
    if scheduled_event_id(event) != scheduled_id:
        return None
    result: Decoded[T] = Decoded()
    if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
        result = decode(event.activity_task_completed_event_attributes.result, result_type)
    return ACTIVITY_ENDS[event.event_type], result


def scheduled_event_id(end: HistoryEvent) -> int:
    """The ``ActivityTaskScheduled`` event that ``end`` (one of :data:`ACTIVITY_ENDS`) ends."""
    return {
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: end.activity_task_completed_event_attributes.scheduled_event_id,
        EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: end.activity_task_failed_event_attributes.scheduled_event_id,
        EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: end.activity_task_timed_out_event_attributes.scheduled_event_id,
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: end.activity_task_canceled_event_attributes.scheduled_event_id,
    }[end.event_type]


def activity_failure(end: HistoryEvent) -> str | None:
    """Why an activity failed or timed out, in one line; None for any other end."""
    if end.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
        return failure_text(end.activity_task_failed_event_attributes.failure)
    if end.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
        return failure_text(end.activity_task_timed_out_event_attributes.failure)
    return None


def failure_text(failure: Failure) -> str:
    """A Temporal failure as one line: its application type (when it has one) and its message."""
    kind = failure.application_failure_info.type if failure.HasField("application_failure_info") else ""
    message = failure.message or (failure.cause.message if failure.HasField("cause") else "") or "no message"
    return f"{kind}: {message}" if kind and not message.startswith(kind) else message


def event_summary(event: HistoryEvent) -> str | None:
    """The event's user-metadata summary (what the workflow said the step is), if it has one."""
    if not event.HasField("user_metadata") or not event.user_metadata.HasField("summary"):
        return None
    summary = decode_payload(event.user_metadata.summary, str)
    return summary.value if summary.value is not None else f"(summary not readable: {summary.problem})"


def unverified_claims(token: str | None) -> dict[str, Any] | None:
    """A token's claims read WITHOUT checking its signature: what it claims, never what it proves."""
    if not token:
        return None
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except Exception:  # anything a writer of the history put there: unreadable, never raised
        return None
    return claims if isinstance(claims, dict) else None


def _token(payloads: Payloads) -> list[str]:
    review = decode(payloads, SignedReview).value
    return [review.approval_token] if review is not None else []


def _case_started_at(case: CaseInput | None, run_started: datetime) -> datetime:
    """The case's own start as the run tells it: this run's, or for a continued run the first
    ``case_started`` event of its carried state."""
    if case is not None and case.carried is not None:
        for event in case.carried.log.events:
            if event.kind == EventKind.CASE_STARTED:
                return event.at
    return run_started


def event_time(event: HistoryEvent) -> datetime:
    """When the history recorded ``event`` (UTC)."""
    return event.event_time.ToDatetime(tzinfo=UTC)

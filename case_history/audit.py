"""A case as an auditor reads it from its workflow history alone (:func:`audit_from_history`, pure: no
server, worker, database, keys or clock): who asked what, every model request and tool call, the
evidence, the proposal, the review attempts (:mod:`case_history.audit_reviews`), what was paid and what
the customer was told. Nothing is verified: tokens are decoded without checking their signatures.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory
from temporalio.exceptions import ApplicationError

from case_history.action_trail import action_trail
from case_history.audit_reviews import ReviewAttempt, paired, review_attempt, update_answer
from case_history.audit_shapes import (
    MODEL_KINDS,
    NO_PROPOSED_CALL,
    NOT_VERIFIED,
    PROPOSED_ARGUMENTS,
    REFUSAL_KINDS,
    ActivityCall,
    CaseAudit,
    Ending,
    ToolCall,
)
from case_history.conversation import conversation_of
from case_history.trail import (
    ACTIVITY_ENDS,
    CaseTrail,
    End,
    LocalActivity,
    activity_failure,
    decode,
    decode_payload,
    event_summary,
    event_time,
    failure_text,
    local_activity,
    scheduled_event_id,
    trail_from_history,
    unverified_claims,
)
from contracts.case import CaseRecord, CaseView
from contracts.commerce import RefundReceipt
from contracts.conversation import VerifiedSender
from contracts.credentials import VerifiedApplicant
from contracts.errors import decode_activity_failure
from contracts.model_io import (
    ComposeResult,
    InvestigateResult,
    ModelCallMeta,
    PlanResult,
    ProposedToolCall,
    ReviewResult,
    ToolObservation,
    ToolRequest,
)
from contracts.names import REVIEW, ActivityName, tool_activity_id

__all__ = [
    "NOT_VERIFIED",
    "PROPOSED_ARGUMENTS",
    "REFUSAL_KINDS",
    "ActivityCall",
    "CaseAudit",
    "Ending",
    "ToolCall",
    "audit_from_history",
]


def audit_from_history(history: WorkflowHistory) -> CaseAudit:
    """Everything one run's history says about the case (see the module docstring)."""
    trail = trail_from_history(history)
    events: list[HistoryEvent] = list(history.events)
    scheduled: dict[int, HistoryEvent] = {}
    local: dict[int, tuple[HistoryEvent, LocalActivity]] = {}
    attempts: dict[int, int] = {}
    ends: dict[int, HistoryEvent] = {}
    reviews: list[ReviewAttempt] = []
    update_ids: dict[int, str] = {}
    answers: dict[str, str] = {}
    record: CaseRecord | None = None
    result: CaseView | None = None
    problems: list[str] = []
    signed = trail.case.value is not None and trail.case.value.applicant_token is not None
    for event in events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[event.event_id] = event
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name == ActivityName.WRITE_CASE_RECORD:
                decoded = decode(attributes.input, CaseRecord)
                record = decoded.value or record
                if decoded.problem:
                    problems.append(f"case record at event {event.event_id}: {decoded.problem}")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started = event.activity_task_started_event_attributes
            attempts[started.scheduled_event_id] = started.attempt
        elif kind in ACTIVITY_ENDS:
            ends[scheduled_event_id(event)] = event
        elif (marked := local_activity(event)) is not None:
            local[event.event_id] = (event, marked)
            if marked.problem:
                problems.append(f"local activity at event {event.event_id}: {marked.problem}")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            signal = event.workflow_execution_signaled_event_attributes
            if signal.signal_name == REVIEW:
                reviews.append(review_attempt(event, "signal", signal.identity, list(signal.input.payloads), signed))
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            accepted = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if accepted.input.name == REVIEW:
                update_ids[event.event_id] = accepted.meta.update_id
                reviews.append(
                    review_attempt(event, "update", accepted.meta.identity, list(accepted.input.args.payloads), signed)
                )
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
            completed = event.workflow_execution_update_completed_event_attributes
            answers[completed.meta.update_id] = update_answer(completed.outcome)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            decoded_result = decode(event.workflow_execution_completed_event_attributes.result, CaseView)
            result = decoded_result.value
            if decoded_result.problem:
                problems.append(f"the workflow's result: {decoded_result.problem}")
    case = trail.case.value
    carried = case.carried if case else None
    log = list(record.events) if record else list(carried.log.events if carried else [])
    own_events = log[len(carried.log.events) :] if carried and record else ([] if carried else log)
    reviews = [
        replace(review, answer=answers.get(update_ids[review.event_id])) if review.event_id in update_ids else review
        for review in reviews
    ]
    view = result or (record.case if record else None)
    proposal = (view.proposal if view else None) or trail.proposal or (carried.proposal if carried else None)
    if trail.case.problem:
        problems.insert(0, f"case input: {trail.case.problem}")
    activities = [
        _activity(event, attempts.get(event.event_id, 1), ends.get(event.event_id)) for event in scheduled.values()
    ]
    proposed = _proposed_calls(scheduled, ends)
    activities += [_local_activity(event, marked, proposed) for event, marked in local.values()]
    order = _scheduling_order(local)
    return CaseAudit(
        trail=trail,
        activities=sorted(activities, key=lambda call: order.get(call.event_id, (call.event_id, 0))),
        reviews=paired(reviews, own_events),
        events=log,
        view=view,
        proposal=proposal,
        ending=_ending(trail, result, record),
        applicant_claims=unverified_claims(case.applicant_token if case else None),
        continued=carried.continued if carried else 0,
        problems=problems,
        conversation=conversation_of(history),
        action=action_trail([history]),
    )


# --- activities -----------------------------------------------------------------------------------


def _activity(event: HistoryEvent, attempt: int, end: HistoryEvent | None) -> ActivityCall:
    attributes = event.activity_task_scheduled_event_attributes
    kind = attributes.activity_type.name
    outcome = ACTIVITY_ENDS[end.event_type] if end is not None else End.PENDING
    call = ActivityCall(event.event_id, event_time(event), kind, outcome, attempt, summary=event_summary(event))
    result: Payload | None = None
    if end is not None and end.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
        payloads = end.activity_task_completed_event_attributes.result.payloads
        result = payloads[0] if payloads else None
    elif end is not None:
        call = replace(call, failure=activity_failure(end), model=_failed_meta(kind, end, attempt))
    if kind == ActivityName.RUN_INVESTIGATION_TOOL:
        return replace(call, tool=_tool(decode(attributes.input, ToolRequest).value, result, call.failure))
    if kind == ActivityName.WRITE_CASE_RECORD and (record := decode(attributes.input, CaseRecord).value):
        return replace(call, note=f"the record of a {record.case.status.value} case, {len(record.events)} events")
    if result is None:
        return call
    return replace(call, model=_meta(result), note=_note(kind, result))


def _scheduling_order(local: dict[int, tuple[HistoryEvent, LocalActivity]]) -> dict[int, tuple[int, int]]:
    """Sort keys that put local activities in the order the workflow scheduled them (their sequence
    numbers) among the other events: markers are recorded as the activities finish, so two tools run
    together may be recorded in either order, even in different workflow tasks. Each sorts at the
    earliest marker of itself and every activity scheduled after it, then by its sequence number."""
    order: dict[int, tuple[int, int]] = {}
    earliest = None
    for event_id, (_, marked) in sorted(local.items(), key=lambda item: item[1][1].seq, reverse=True):
        earliest = event_id if earliest is None else min(earliest, event_id)
        order[event_id] = (earliest, marked.seq)
    return order


def _proposed_calls(
    scheduled: dict[int, HistoryEvent], ends: dict[int, HistoryEvent]
) -> dict[str, list[tuple[int, ProposedToolCall]]]:
    """The tool calls the model proposed (completed ``investigate_turn`` results), by the activity id the
    workflow runs each under as a local activity (:func:`contracts.names.tool_activity_id`), each with
    the event id of the result that proposed it. A conversation's later turns may reuse a call id of an
    earlier turn (the model numbers its calls per turn): a marker pairs with the latest proposal before it."""
    proposed: dict[str, list[tuple[int, ProposedToolCall]]] = {}
    for event_id, event in scheduled.items():
        end = ends.get(event_id)
        kind = event.activity_task_scheduled_event_attributes.activity_type.name
        if kind == ActivityName.INVESTIGATE_TURN and end and end.HasField("activity_task_completed_event_attributes"):
            turn = decode(end.activity_task_completed_event_attributes.result, InvestigateResult).value
            for call in turn.calls if turn else []:
                proposals = proposed.setdefault(tool_activity_id(call.call_id), [])
                if not proposals or proposals[-1][0] != end.event_id:  # a reused id within a turn is refused
                    proposals.append((end.event_id, call))
    return proposed  # each list in event order, as ``scheduled`` is


def _proposal_before(proposals: list[tuple[int, ProposedToolCall]], event_id: int) -> ProposedToolCall | None:
    earlier = [call for proposed_at, call in proposals if proposed_at < event_id]
    return earlier[-1] if earlier else None


def _local_activity(
    event: HistoryEvent, marked: LocalActivity, proposed: dict[str, list[tuple[int, ProposedToolCall]]]
) -> ActivityCall:
    """A local activity from its marker: its result or failure; a tool's arguments from the proposed call."""
    kind = marked.activity_type
    failure = failure_text(marked.failure) if marked.failure is not None else None
    call = ActivityCall(
        event.event_id,
        event_time(event),
        kind,
        marked.outcome,
        marked.attempt,
        failure=failure,
        summary=event_summary(event),
        local=True,
    )
    if kind == ActivityName.RUN_INVESTIGATION_TOOL:
        asked = _proposal_before(proposed.get(marked.activity_id, []), event.event_id)
        return replace(call, tool=_local_tool(marked, asked, failure))
    if marked.result is None:
        return call
    return replace(call, model=_meta(marked.result), note=_note(kind, marked.result))


def _local_tool(marked: LocalActivity, asked: ProposedToolCall | None, failure: str | None) -> ToolCall:
    observation = decode_payload(marked.result, ToolObservation).value if marked.result is not None else None
    if asked is not None:
        arguments = {key: str(value) for key, value in (asked.arguments or {}).items()}
        call = ToolCall(asked.name, arguments, asked.call_id, error=failure, arguments_from=PROPOSED_ARGUMENTS)
    elif observation is not None:
        call = ToolCall(observation.name, {}, observation.call_id, error=failure, arguments_from=NO_PROPOSED_CALL)
    else:
        return ToolCall(name="?", arguments={}, error=failure or "the tool's observation does not decode")
    return _observed(call, observation)


def _meta(result: Payload) -> ModelCallMeta | None:
    """The model identity and usage of a result that carries them (every model request's does)."""
    raw = decode_payload(result, dict[str, Any]).value
    if not isinstance(raw, dict) or not isinstance(raw.get("meta"), dict):
        return None
    try:
        return ModelCallMeta.model_validate(raw["meta"])
    except ValueError:
        return None


def _failed_meta(kind: str, end: HistoryEvent, attempt: int) -> ModelCallMeta | None:
    """The model and tokens a failed model request names (a refused reply), read as the workflow reads
    them (:func:`contracts.errors.decode_activity_failure`), so that the audit counts what ``status`` shows."""
    if kind not in MODEL_KINDS or not end.HasField("activity_task_failed_event_attributes"):
        return None
    failure = end.activity_task_failed_event_attributes.failure
    if not failure.HasField("application_failure_info"):
        return None
    info = failure.application_failure_info
    payloads = info.details.payloads
    details = decode_payload(payloads[0], dict[str, Any]).value if payloads else None
    error = ApplicationError(failure.message, details or {}, type=info.type or None)
    try:
        return ModelCallMeta.of_failure(decode_activity_failure(error), attempt)
    except ValueError:  # usage a writer of the history made up: shown as unknown, never raised
        return None


def _note(kind: str, result: Payload) -> str | None:
    """What a completed activity returned, in a few words."""
    if kind == ActivityName.PLAN_CASE and (plan := decode_payload(result, PlanResult).value):
        asked = "action requested" if plan.plan.action_requested else "no action requested"
        return f"intent {plan.plan.intent.value}, order {plan.plan.order_id or '-'}, {asked}"
    if kind == ActivityName.INVESTIGATE_TURN and (turn := decode_payload(result, InvestigateResult).value):
        if turn.calls:
            return "asks for " + ", ".join(call.name for call in turn.calls)
        return f"asks for no tool (finish {turn.finish_reason or '-'})"
    if kind == ActivityName.COMPOSE_ANSWER and (composed := decode_payload(result, ComposeResult).value):
        cites = ", ".join(composed.answer.citations) or "nothing"
        return f"draft: next action {composed.answer.next_action.value}; cites {cites}"
    if kind == ActivityName.REVIEW_ANSWER and (review := decode_payload(result, ReviewResult).value):
        problems = "; ".join(review.verdict.problems)
        return f"verdict {review.verdict.verdict.value}" + (f": {problems}" if problems else "")
    if kind == ActivityName.VERIFY_APPLICANT and (verified := decode_payload(result, VerifiedApplicant).value):
        who = verified.identity
        return f"the worker says it verified {who.subject} ({who.tenant}, {who.role.value})"
    if kind == ActivityName.VERIFY_CUSTOMER_MESSAGE and (sender := decode_payload(result, VerifiedSender).value):
        who = sender.identity
        return f"the worker says the message's credential proves {who.subject} ({who.tenant}), issuer {sender.issuer}"
    if kind == ActivityName.EXECUTE_REFUND and (receipt := decode_payload(result, RefundReceipt).value):
        return f"receipt {receipt.receipt_id}: {receipt.amount_cents} cents {receipt.currency} (SIMULATED)"
    return None


def _tool(request: ToolRequest | None, result: Payload | None, failure: str | None) -> ToolCall:
    if request is None:
        return ToolCall(name="?", arguments={}, error="the tool request does not decode")
    call = ToolCall(request.name, dict(request.arguments), request.call_id, error=failure)
    return _observed(call, decode_payload(result, ToolObservation).value if result is not None else None)


def _observed(call: ToolCall, observation: ToolObservation | None) -> ToolCall:
    """``call`` with what its observation says (ok, result, error), when one came back."""
    if observation is None:
        return call
    error = None if observation.ok else f"{observation.error_code or 'error'}: {observation.error_message or ''}"
    return replace(call, ok=observation.ok, result=observation.result, error=error.rstrip(": ") if error else None)


# --- the end --------------------------------------------------------------------------------------


def _ending(trail: CaseTrail, result: CaseView | None, record: CaseRecord | None) -> Ending:
    if result is not None:
        return Ending(result.status, result.reason, trail.run_end, "the workflow's result")
    if record is not None:
        return Ending(record.case.status, record.case.reason, trail.run_end, "the last case record")
    return Ending(None, None, trail.run_end, "nothing recorded")

"""What a case's histories say about its action (release 0.12 on): the proposal it showed, the
confirmations its customer's messages carried, and the ``execute_action`` request and receipt.

Nothing here is verified (:mod:`case_history.verify_action` does that); a payload that does not decode
is kept as its problem, never raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory

from case_history.trail import ACTIVITY_ENDS, Decoded, activity_end, decode
from contracts.actions import ActionProposal, ActionReceipt
from contracts.case import ActionExecuteRequest, CaseRecord
from contracts.conversation import MESSAGE, CustomerMessage
from contracts.names import ActivityName


@dataclass(frozen=True)
class ActionExecution:
    """The last ``execute_action`` activity: what it was asked and what it returned."""

    scheduled_event_id: int
    request: Decoded[ActionExecuteRequest]
    outcome: str = "pending"
    receipt: Decoded[ActionReceipt] = field(default_factory=Decoded)


@dataclass
class ActionTrail:
    proposal: ActionProposal | None = None
    """The last action proposal a case record showed (what the customer was asked to confirm)."""
    confirmations: list[str] = field(default_factory=list)
    """The confirmation tokens the customer's messages carried, in history order (valid or not)."""
    execution: ActionExecution | None = None

    @property
    def proposes(self) -> bool:
        return self.proposal is not None or self.execution is not None


def action_trail(histories: Sequence[WorkflowHistory]) -> ActionTrail:
    """The action of the case whose runs are ``histories`` (first run first)."""
    trail = ActionTrail()
    for history in histories:
        for event in history.events:
            kind = event.event_type
            if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                attributes = event.activity_task_scheduled_event_attributes
                name = attributes.activity_type.name
                if name == ActivityName.EXECUTE_ACTION:
                    request = decode(attributes.input, ActionExecuteRequest)
                    trail.execution = ActionExecution(event.event_id, request)
                elif name == ActivityName.WRITE_CASE_RECORD:
                    record = decode(attributes.input, CaseRecord).value
                    if record is not None and record.case.action is not None:
                        trail.proposal = record.case.action
            elif kind in ACTIVITY_ENDS and trail.execution is not None:
                execution = trail.execution
                ended = activity_end(event, execution.scheduled_event_id, ActionReceipt)
                if ended is not None:
                    end, receipt = ended
                    trail.execution = ActionExecution(execution.scheduled_event_id, execution.request, end, receipt)
            elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
                update = event.workflow_execution_update_accepted_event_attributes.accepted_request.input
                if update.name == MESSAGE:
                    message = decode(update.args, CustomerMessage).value
                    if message is not None and message.confirmation:
                        trail.confirmations.append(message.confirmation)
    return trail

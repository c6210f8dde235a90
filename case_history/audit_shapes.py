"""What :func:`case_history.audit.audit_from_history` reads a case into: its activities, tool calls,
ending and the whole :class:`CaseAudit`, and the fixed wording the audit's readers share."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from case_history.action_trail import ActionTrail
from case_history.audit_reviews import ReviewAttempt
from case_history.conversation import Conversation
from case_history.trail import CaseTrail, End
from contracts.case import CaseEvent, CaseStatus, CaseView
from contracts.commerce import RefundProposal, RefundReceipt
from contracts.model_io import ModelCallMeta
from contracts.names import ActivityName, EventKind

MODEL_KINDS = frozenset(
    {ActivityName.PLAN_CASE, ActivityName.INVESTIGATE_TURN, ActivityName.COMPOSE_ANSWER, ActivityName.REVIEW_ANSWER}
)
NOT_VERIFIED = "read from the workflow history alone; nothing here is verified"
REFUSAL_KINDS = frozenset(
    {
        EventKind.TOOL_REFUSED,
        EventKind.TOOL_FAILED,
        EventKind.MODEL_FAILED,
        EventKind.DRAFT_REFUSED,
        EventKind.SETTLEMENT_FAILED,
        EventKind.RECORD_WRITE_FAILED,
        EventKind.EVENTS_DROPPED,
    }
)
"""Case-log kinds shown on the timeline (review refusals are shown with their review attempts)."""
PROPOSED_ARGUMENTS = "the model's proposed call (investigate_turn result); a local activity's input is not recorded"
"""Where a local tool activity's arguments were read (its request is not in the history)."""
NO_PROPOSED_CALL = "nowhere: no proposed call in the history has this call id"


@dataclass(frozen=True)
class ToolCall:
    """A ``run_investigation_tool`` activity: what the workflow asked, and what came back."""

    name: str
    arguments: dict[str, Any]
    call_id: str | None = None
    ok: bool | None = None
    """None when no observation came back (the activity failed, or is still running)."""
    result: dict[str, Any] | None = None
    error: str | None = None
    arguments_from: str | None = None
    """Where the arguments were read when not from the activity's own input (a local activity)."""


@dataclass(frozen=True)
class ActivityCall:
    """One activity of the run, in the order it was scheduled."""

    event_id: int
    at: datetime
    kind: str
    """The activity's name: ``plan_case``, ``run_investigation_tool``, ``execute_refund``, ..."""
    outcome: str
    """``completed``, ``failed``, ``timed out``, ``canceled`` or ``pending``."""
    attempt: int = 1
    failure: str | None = None
    summary: str | None = None
    """The user-metadata summary the workflow gave the activity, if any."""
    model: ModelCallMeta | None = None
    note: str | None = None
    """What the result says, in a few words (the whole result is in the history)."""
    tool: ToolCall | None = None
    local: bool = False
    """A local activity: one ``MarkerRecorded`` event (result or failure), no recorded input."""

    @property
    def is_model_request(self) -> bool:
        return self.kind in MODEL_KINDS or self.model is not None


@dataclass(frozen=True)
class Ending:
    status: CaseStatus | None
    reason: str | None
    run_end: str | None
    source: str
    """Where status and reason were read: the workflow's result, the last case record, or nowhere."""

    @property
    def still_running(self) -> bool:
        return self.run_end is None or self.run_end == End.CONTINUED_AS_NEW


@dataclass(frozen=True)
class CaseAudit:
    trail: CaseTrail
    """What :func:`~case_history.trail.trail_from_history` read (the case input, the settlement, ...)."""
    activities: list[ActivityCall]
    reviews: list[ReviewAttempt]
    events: list[CaseEvent]
    """The case's own event log, from the last case record of the run."""
    view: CaseView | None
    """The workflow's result, else the last case record's view."""
    proposal: RefundProposal | None
    ending: Ending
    applicant_claims: dict[str, Any] | None = None
    continued: int = 0
    problems: list[str] = field(default_factory=list)
    conversation: Conversation = field(default_factory=Conversation)
    """The customer's messages (the ``message`` updates) and the transcript: this run's, or the whole
    case's when every run was read (``starter.py audit`` from Temporal)."""
    action: ActionTrail = field(default_factory=ActionTrail)
    """The action the case proposed, the confirmations sent, the execution and its receipt (release 0.12)."""

    @property
    def case_id(self) -> str:
        case = self.trail.case.value
        return case.case_id if case else self.trail.workflow_id.removeprefix("case-")

    @property
    def model_requests(self) -> list[ActivityCall]:
        return [call for call in self.activities if call.is_model_request]

    @property
    def tool_calls(self) -> list[ActivityCall]:
        return [call for call in self.activities if call.tool is not None]

    @property
    def refusals(self) -> list[CaseEvent]:
        return [event for event in self.events if event.kind in REFUSAL_KINDS]

    @property
    def answer_citations(self) -> list[str]:
        return list(self.view.citations) if self.view else []

    @property
    def quote_citations(self) -> list[str]:
        return list(self.view.quote.citations) if self.view and self.view.quote else []

    @property
    def recomputed_digest(self) -> str | None:
        return self.proposal.digest() if self.proposal else None

    @property
    def receipt(self) -> RefundReceipt | None:
        settlement = self.trail.settlement
        return settlement.receipt.value if settlement else None

"""Case contracts: what crosses the workflow/activity boundary and what clients see.

Everything here is a pydantic model so that Temporal's pydantic data converter carries it intact.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import Field

from contracts import case_status
from contracts.actions import ActionProposal, ActionReceipt, ActionRequest
from contracts.case_status import AnswerSource, CaseStatus, Phase
from contracts.commerce import ProposalOutcome, RefundProposal, RefundQuote, RefundReceipt
from contracts.conversation import ConversationEntry
from contracts.effect_card import EffectCard
from contracts.frozen import FrozenModel
from contracts.identity import Identity
from contracts.knowledge import Language
from contracts.model_io import Intent, NextAction
from contracts.usage import CaseUsage

TERMINAL_STATUSES = case_status.TERMINAL_STATUSES
"""Re-exported from :mod:`contracts.case_status`, where the statuses live."""

REHEARSAL_LABEL = "rehearsal"


# Limits of a case's input, checked by starter.py before anything starts and again by CaseInput.
MAX_QUESTION_CHARS = 2000
MIN_APPROVAL_TTL_SECONDS, MAX_APPROVAL_TTL_SECONDS = 1, 7 * 24 * 3600


NEAR_EXPIRY = timedelta(minutes=5)
"""A proposal with this little time left, or less, is near its expiry: the console marks it "expires soon",
and a tenant's escalation reviewer is asked by then (or when a third of a shorter proposal's time is left)."""


class Budgets(FrozenModel):
    """Counters kept in workflow state, and their limits (SPEC §7)."""

    model_requests: int = 0
    tool_requests: int = 0
    turns: int = 0
    max_model_requests: int = 20
    max_tool_requests: int = 24
    max_turns: int = 7
    max_calls_per_turn: int = 4


class CaseEvent(FrozenModel):
    at: datetime
    kind: str
    detail: str


# --- approval and settlement ---------------------------------------------------------------------


class Decision(StrEnum):
    APPROVE = "approve"
    REJECT = "reject"


class ReviewDecision(FrozenModel):
    """The payload of the ``review`` signal and update."""

    reviewer: str = Field(min_length=1, max_length=40)
    digest: str = Field(min_length=1, max_length=128)
    decision: Decision
    note: str = Field(default="", max_length=500)


class ReviewOutcome(FrozenModel):
    accepted: bool
    status: CaseStatus
    reason: str
    approvals_missing: int = Field(default=0, ge=0)
    """Approvals the tenant's policy still needs beside the ones accepted (release 0.10 on)."""

    @property
    def awaits_another_reviewer(self) -> bool:
        """An accepted approval that the tenant's policy wants another reviewer's approval beside."""
        return self.accepted and self.approvals_missing > 0


AWAITING_ANOTHER_REVIEWER = "waiting for another reviewer"
"""How an accepted approval's reason ends while the policy needs another reviewer (``approve (1 of 2
approvals; waiting for another reviewer)``)."""


class AcceptedApproval(FrozenModel):
    """One reviewer's signed approval that the workflow accepted, kept until the tenant's policy is met
    (four-eyes: two distinct reviewers at or above the tenant's threshold)."""

    reviewer: str = Field(min_length=1, max_length=40)
    approval_token: str = Field(min_length=1, max_length=4000)
    token_id: str = Field(min_length=1, max_length=100)
    at: datetime
    via: str = Field(max_length=10)


class AcceptedConfirmation(FrozenModel):
    """The customer's signed "yes" to an action proposal, verified by the workflow and kept to be
    presented at execution (the commerce server verifies it again and takes it once)."""

    subject: str = Field(min_length=1, max_length=40)
    confirmation_token: str = Field(min_length=1, max_length=4000)
    token_id: str = Field(min_length=1, max_length=100)
    at: datetime
    message: int = Field(ge=1)
    """The customer's message that carried it."""


class SettleRequest(FrozenModel):
    case_id: str
    applicant: Identity
    approval_id: str
    proposal: RefundProposal
    digest: str
    reviewer: str
    approved_at: datetime
    approval_token: str | None = None
    """The reviewer's signed approval; the commerce server verifies it itself before it pays."""
    co_approval_tokens: list[str] = Field(default_factory=list, max_length=3)
    """The other reviewers' signed approvals, where the tenant's policy needs more than one."""
    applicant_token: str | None = None
    """The case's applicant token, which the commerce server checks too (a case no issuer vouched for
    is never paid)."""


class CloseRequest(FrozenModel):
    """What the ``close_refund_proposal`` activity is asked: this proposal was rejected or expired."""

    case_id: str
    applicant: Identity
    proposal: RefundProposal
    digest: str
    outcome: ProposalOutcome


class ActionPreviewRequest(FrozenModel):
    """What the ``preview_action`` activity is asked: compute this action for the case's customer."""

    case_id: str
    applicant: Identity
    request: ActionRequest


class ActionExecuteRequest(FrozenModel):
    """What the ``execute_action`` activity is asked: execute the case's agreed action, once per key."""

    case_id: str
    applicant: Identity
    proposal: ActionProposal
    idempotency_key: str
    confirmation_token: str | None = None
    approval_tokens: list[str] = Field(default_factory=list, max_length=2)


class ActionCloseRequest(FrozenModel):
    """What the ``close_action_proposal`` activity is asked: the case's action proposal ended unagreed."""

    case_id: str
    applicant: Identity
    proposal: ActionProposal
    outcome: ProposalOutcome


# --- results and records -------------------------------------------------------------------------


class CaseView(FrozenModel):
    """What the ``status`` query returns and what the case record stores."""

    case_id: str
    status: CaseStatus
    phase: Phase
    applicant: str
    tenant: str
    question: str
    language: Language
    model: str
    intent: Intent | None = None
    order_id: str | None = None
    answer: str | None = None
    """What the customer is shown; ``answer_source`` says who wrote it."""
    answer_source: AnswerSource | None = None
    citations: list[str] = Field(default_factory=list)
    next_action: NextAction | None = None
    quote: RefundQuote | None = None
    proposal: RefundProposal | None = None
    digest: str | None = None
    effect: EffectCard | None = None
    receipt: RefundReceipt | None = None
    action: ActionProposal | None = None
    """The action proposal (cancel an order, ...) the case waits on or executed: its exact effect, the rule
    that applied and who must agree; ``digest`` is then its digest."""
    confirmed_by: str | None = None
    """The customer whose signed confirmation of :attr:`action` the case holds."""
    approved_by: list[str] = Field(default_factory=list)
    """The reviewers whose signed approvals of :attr:`action` the case holds."""
    action_receipt: ActionReceipt | None = None
    escalated_to: str | None = None
    """The reviewer the case asked to decide its proposal as it neared its expiry undecided."""
    near_expiry_at: datetime | None = None
    """When the case noted its proposal nearing its expiry undecided (a tenant that names no escalation
    reviewer: nobody is asked, the moment is recorded and counted)."""
    reason: str | None = None
    record_path: str | None = None
    record_error: str | None = None
    budgets: Budgets
    tokens: str = "unknown"
    usage: CaseUsage = Field(default_factory=CaseUsage)
    """Tokens and cost of the case's model replies by request kind (release 0.5 on)."""
    cost: str = "unknown"
    """The case's model cost at the operator's prices (``0.004210 USD``), or ``unknown``."""
    conversation: list[ConversationEntry] = Field(default_factory=list)
    """The customer's messages and the service's replies, in order (release 0.11 on)."""
    conversation_dropped: int = Field(default=0, ge=0)
    """Older entries not carried into this run (they are in earlier records and runs' histories)."""
    waiting_until: datetime | None = None
    """While the case waits for the customer: when it closes if nobody writes."""

    @property
    def record_attempted(self) -> bool:
        """The record for the current state was written, or its failure was recorded."""
        return self.record_path is not None or self.record_error is not None


class CaseRecord(FrozenModel):
    """The file an auditor reads: written once per state change by an activity, atomically."""

    fictional_notice: str = (
        "FICTIONAL: every merchant, customer, order and receipt in this record is invented; no real payment was made."
    )
    case: CaseView
    events: list[CaseEvent]
    notes: list[str] = Field(default_factory=list)

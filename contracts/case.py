"""Case contracts: what crosses the workflow/activity boundary and what clients see.

Everything here is a pydantic model so that Temporal's pydantic data converter carries it intact.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.commerce import ORDER_ID_SCHEMA_PATTERN, ProposalOutcome, RefundProposal, RefundQuote, RefundReceipt
from contracts.directory import Directory
from contracts.effect_card import EffectCard
from contracts.errors import SupportError
from contracts.identity import Identity
from contracts.knowledge import Language, Passage
from contracts.usage import CaseUsage, ModelPrice

REHEARSAL_LABEL = "rehearsal"

# Limits of the model contracts (SPEC §6), shared by the models below and the field-by-field validator.
MAX_QUERIES, MAX_QUERY_CHARS = 3, 300
MAX_MILESTONES, MAX_MILESTONE_CHARS = 4, 120
MAX_ANSWER_CHARS = 4000
MAX_CITATIONS, MAX_CITATION_CHARS = 8, 80
MAX_PROBLEMS, MAX_PROBLEM_CHARS = 6, 300
MAX_RAW_ARGUMENT_CHARS = 20000

# Limits of a case's input, checked by starter.py before anything starts and again by CaseInput.
MAX_QUESTION_CHARS = 2000
MIN_APPROVAL_TTL_SECONDS, MAX_APPROVAL_TTL_SECONDS = 1, 7 * 24 * 3600


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- lifecycle -----------------------------------------------------------------------------------


class Phase(StrEnum):
    PLAN = "plan"
    INVESTIGATE = "investigate"
    REVIEW = "review"
    DELIVER = "deliver"
    WAITING_APPROVAL = "waiting_approval"
    SETTLE = "settle"


class CaseStatus(StrEnum):
    QUEUED = "queued"
    """Started, before its first workflow task: the client's start search attributes say so (the
    workflow itself never sets it)."""
    RUNNING = "running"
    WAITING_APPROVAL = "waiting_approval"
    COMPLETED = "completed"
    NEEDS_INPUT = "needs_input"
    NEEDS_HUMAN = "needs_human"
    REJECTED = "rejected"
    EXPIRED = "expired"
    FAILED = "failed"


TERMINAL_STATUSES = frozenset(
    {
        CaseStatus.COMPLETED,
        CaseStatus.NEEDS_INPUT,
        CaseStatus.NEEDS_HUMAN,
        CaseStatus.REJECTED,
        CaseStatus.EXPIRED,
        CaseStatus.FAILED,
    }
)


class CaseOptions(_Model):
    approval_ttl_seconds: int = Field(default=900, ge=MIN_APPROVAL_TTL_SECONDS, le=MAX_APPROVAL_TTL_SECONDS)


class CaseInput(_Model):
    case_id: str = Field(pattern=r"^[A-Za-z0-9_-]{4,64}$")
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    language: Language
    applicant: Identity
    options: CaseOptions = CaseOptions()
    applicant_token: str | None = Field(default=None, max_length=4000)
    """The applicant's credential, signed by the identity issuer (the login service; starter.py stands
    in for it). The case reads nothing until an activity has verified it."""
    carried: CarriedCase | None = None
    """Set only by the workflow itself when it continues as new while waiting for a reviewer."""


class Budgets(_Model):
    """Counters kept in workflow state, and their limits (SPEC §7)."""

    model_requests: int = 0
    tool_requests: int = 0
    turns: int = 0
    max_model_requests: int = 20
    max_tool_requests: int = 24
    max_turns: int = 7
    max_calls_per_turn: int = 4


class CaseEvent(_Model):
    at: datetime
    kind: str
    detail: str


# --- model requests and results ------------------------------------------------------------------


class Intent(StrEnum):
    REFUND = "refund"
    DELIVERY = "delivery"
    INVOICE = "invoice"
    WARRANTY = "warranty"
    POLICY = "policy"
    GREETING = "greeting"
    UNSUPPORTED = "unsupported"


QueryText = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
MilestoneText = Annotated[str, Field(min_length=1, max_length=MAX_MILESTONE_CHARS)]
CitationId = Annotated[str, Field(min_length=1, max_length=MAX_CITATION_CHARS)]
ProblemText = Annotated[str, Field(min_length=1, max_length=MAX_PROBLEM_CHARS)]
PlannedOrderId = Annotated[str, Field(pattern=ORDER_ID_SCHEMA_PATTERN)]


class Plan(_Model):
    """A model's plan. With :class:`ComposedAnswer` and :class:`ReviewVerdict` it is also the reply
    schema sent to the model (:mod:`activities.reply_schemas` generates it from these fields), so a bound
    is stated once, here, for the schema, this model and the validator alike."""

    intent: Intent
    order_id: PlannedOrderId | None
    action_requested: bool
    queries: list[QueryText] = Field(max_length=MAX_QUERIES)
    milestones: list[MilestoneText] = Field(max_length=MAX_MILESTONES)


class NextAction(StrEnum):
    ANSWER = "answer"
    PROPOSE_REFUND = "propose_refund"
    NEEDS_INPUT = "needs_input"
    HANDOFF = "handoff"


class ComposedAnswer(_Model):
    answer: str = Field(min_length=1, max_length=MAX_ANSWER_CHARS)
    citations: list[CitationId] = Field(max_length=MAX_CITATIONS)
    next_action: NextAction


class Verdict(StrEnum):
    PASS = "pass"
    REVISE = "revise"
    INSUFFICIENT = "insufficient"


class ReviewVerdict(_Model):
    verdict: Verdict
    problems: list[ProblemText] = Field(max_length=MAX_PROBLEMS)


class ModelUsage(_Model):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ModelCallMeta(_Model):
    """Which provider answered and what it cost. ``usage`` is None when the provider did not say."""

    provider: str
    model: str
    attempt: int
    usage: ModelUsage | None = None
    price: ModelPrice | None = None
    """The operator's price for this provider profile and model when the reply came (None: none set)."""

    @property
    def usage_label(self) -> str:
        return str(self.usage.total_tokens) if self.usage else "unknown"

    @classmethod
    def of_failure(cls, failure: SupportError, attempts: int) -> ModelCallMeta | None:
        """What a refused reply says of the model and its tokens (None when it names no model); the
        workflow's tally and the audit both read a failed request this way."""
        if failure.model is None:
            return None
        usage = ModelUsage.model_validate(failure.usage) if failure.usage else None
        return cls(
            provider=failure.provider or "unknown",
            model=failure.model,
            attempt=failure.attempt or attempts,
            usage=usage,
        )


class ProposedToolCall(_Model):
    """A tool call exactly as the model requested it; nothing about it is trusted yet."""

    call_id: str
    name: str
    arguments: dict[str, Any] | None
    """Parsed JSON object, or None when the model's arguments were not a JSON object."""
    raw_arguments: str = Field(max_length=MAX_RAW_ARGUMENT_CHARS)


class TranscriptEntry(_Model):
    role: Literal["assistant", "tool"]
    calls: list[ProposedToolCall] = []
    call_id: str | None = None
    content: str = ""


class PlanRequest(_Model):
    case_id: str
    question: str
    language: Language
    named_order_id: str | None = None
    """The one order id the question names, found by the host; the case is bound to it whatever the plan says."""


class PlanResult(_Model):
    plan: Plan
    meta: ModelCallMeta


class InvestigateRequest(_Model):
    case_id: str
    question: str
    language: Language
    plan: Plan
    transcript: list[TranscriptEntry]
    tool_names: list[str]
    turn: int


class InvestigateResult(_Model):
    calls: list[ProposedToolCall]
    content: str | None
    finish_reason: str | None
    meta: ModelCallMeta


class ComposeRequest(_Model):
    case_id: str
    question: str
    language: Language
    plan: Plan
    facts: dict[str, Any]
    evidence: list[Passage]
    quote: RefundQuote | None
    receipt_exists: bool = False
    previous: ComposedAnswer | None = None
    problems: list[str] = []


class ComposeResult(_Model):
    answer: ComposedAnswer
    meta: ModelCallMeta


class ReviewRequest(_Model):
    case_id: str
    question: str
    language: Language
    facts: dict[str, Any]
    evidence: list[Passage]
    quote: RefundQuote | None
    candidate: ComposedAnswer
    receipt_exists: bool = False


class ReviewResult(_Model):
    verdict: ReviewVerdict
    meta: ModelCallMeta


# --- tools ---------------------------------------------------------------------------------------


class ToolRequest(_Model):
    case_id: str
    applicant: Identity
    language: Language
    call_id: str
    name: str
    arguments: dict[str, str]


class ToolObservation(_Model):
    call_id: str
    name: str
    ok: bool
    result: dict[str, Any] | None = None
    error_code: str | None = None
    error_message: str | None = None


# --- approval and settlement ---------------------------------------------------------------------


class Decision(StrEnum):
    APPROVE = "approve"
    REJECT = "reject"


class ReviewDecision(_Model):
    """The payload of the ``review`` signal and update."""

    reviewer: str = Field(min_length=1, max_length=40)
    digest: str = Field(min_length=1, max_length=128)
    decision: Decision
    note: str = Field(default="", max_length=500)


class ReviewOutcome(_Model):
    accepted: bool
    status: CaseStatus
    reason: str

    @property
    def awaits_another_reviewer(self) -> bool:
        """An accepted approval that the tenant's policy wants a second reviewer's approval beside."""
        return self.accepted and AWAITING_ANOTHER_REVIEWER in self.reason


AWAITING_ANOTHER_REVIEWER = "waiting for another reviewer"
"""How an accepted approval's reason ends while the policy needs another reviewer (``approve (1 of 2
approvals; waiting for another reviewer)``)."""


class AcceptedApproval(_Model):
    """One reviewer's signed approval that the workflow accepted, kept until the tenant's policy is met
    (four-eyes: two distinct reviewers at or above the tenant's threshold)."""

    reviewer: str = Field(min_length=1, max_length=40)
    approval_token: str = Field(min_length=1, max_length=4000)
    token_id: str = Field(min_length=1, max_length=100)
    at: datetime
    via: str = Field(max_length=10)


class SettleRequest(_Model):
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


class CloseRequest(_Model):
    """What the ``close_refund_proposal`` activity is asked: this proposal was rejected or expired."""

    case_id: str
    applicant: Identity
    proposal: RefundProposal
    digest: str
    outcome: ProposalOutcome


# --- results and records -------------------------------------------------------------------------


class AnswerSource(StrEnum):
    """Who wrote the ``answer`` a customer is shown."""

    MODEL_DRAFT = "model_draft"
    """A draft that passed the independent review and the deliver gate."""
    RECEIPT = "receipt"
    """Written by code from the commerce server's receipt, after settlement."""
    STATUS_NOTICE = "status_notice"
    """A fixed message for the case's status, written by code (no draft may be shown)."""


class CaseView(_Model):
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
    citations: list[str] = []
    next_action: NextAction | None = None
    quote: RefundQuote | None = None
    proposal: RefundProposal | None = None
    digest: str | None = None
    effect: EffectCard | None = None
    receipt: RefundReceipt | None = None
    reason: str | None = None
    record_path: str | None = None
    record_error: str | None = None
    budgets: Budgets
    tokens: str = "unknown"
    usage: CaseUsage = Field(default_factory=CaseUsage)
    """Tokens and cost of the case's model replies by request kind (release 0.5 on)."""
    cost: str = "unknown"
    """The case's model cost at the operator's prices (``0.004210 USD``), or ``unknown``."""

    @property
    def record_attempted(self) -> bool:
        """The record for the current state was written, or its failure was recorded."""
        return self.record_path is not None or self.record_error is not None


class CaseRecord(_Model):
    """The file an auditor reads: written once per state change by an activity, atomically."""

    fictional_notice: str = (
        "FICTIONAL: every merchant, customer, order and receipt in this record is invented; no real payment was made."
    )
    case: CaseView
    events: list[CaseEvent]
    notes: list[str] = []


class CarriedCase(_Model):
    """Everything a case waiting for a reviewer knows, carried into its next run by continue-as-new.

    A flood of review attempts can grow a waiting case's history towards Temporal's limit; the case
    then continues as a new run with this state (the pending proposal included) instead of being
    terminated. The digest is recomputed from the proposal, never carried as a separate claim.

    Keys this model no longer has are ignored, not refused: a run of an earlier release may continue
    as new onto this code, and release 0.1 also carried ``card_facts`` (a patch decision; every case
    now shows the card's facts).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    continued: int = Field(ge=1)
    """How many times the case has continued as new, this run included."""
    budgets: Budgets
    events: list[CaseEvent]
    dropped_events: int = 0
    notes: list[str] = []
    model_label: str | None = None
    tokens_known: int = 0
    tokens_unknown_calls: int = 0
    usage: CaseUsage | None = None
    """Tokens and cost by request kind (None when carried by a release before 0.5)."""
    plan: Plan
    facts: dict[str, Any]
    evidence: list[Passage]
    quote: RefundQuote
    answer: ComposedAnswer
    answer_admitted: bool
    proposal: RefundProposal
    record_path: str | None = None
    record_error: str | None = None
    directory: Directory | None = None
    """The slice of the directory recorded when the applicant was verified."""
    approvals: list[AcceptedApproval] = Field(default_factory=list, max_length=3)
    """Approvals accepted so far, while the tenant's policy needs more."""
    used_approvals: list[str] = []
    """Token ids of approvals already presented: each is accepted once."""


CaseInput.model_rebuild()

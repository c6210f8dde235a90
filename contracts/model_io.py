"""What the workflow asks the model activities and the tool activities, and what they answer.

Everything here is a frozen pydantic model so that Temporal's pydantic data converter carries it intact.
:class:`Plan`, :class:`ComposedAnswer` and :class:`ReviewVerdict` are also the reply schemas sent to
the model, so each bound is stated once, here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field

from contracts.commerce import ORDER_ID_SCHEMA_PATTERN, RefundQuote
from contracts.errors import SupportError
from contracts.frozen import FrozenModel
from contracts.identity import Identity
from contracts.knowledge import Language, Passage
from contracts.usage import ModelPrice

# Limits of the model contracts (SPEC §6), shared by the models below and the field-by-field validator.
MAX_QUERIES, MAX_QUERY_CHARS = 3, 300
MAX_MILESTONES, MAX_MILESTONE_CHARS = 4, 120
MAX_ANSWER_CHARS = 4000
MAX_CITATIONS, MAX_CITATION_CHARS = 8, 80
MAX_PROBLEMS, MAX_PROBLEM_CHARS = 6, 300
MAX_RAW_ARGUMENT_CHARS = 20000


# --- model requests and results ------------------------------------------------------------------


class Intent(StrEnum):
    REFUND = "refund"
    CANCELLATION = "cancellation"
    """The customer asks to cancel an order (an action the tenant's policy may allow: ``cancel_order``)."""
    ADDRESS_CHANGE = "address_change"
    """The customer asks to send an order to a new address (``change_order_address``); the host reads the
    address from their message (:func:`contracts.actions.address_in`), never from the model."""
    RETURN = "return"
    """The customer asks to send a delivered order back for a refund (``return_items``): opened now, the
    refund paid once the warehouse checks the items in."""
    EXCHANGE = "exchange"
    """The customer asks to exchange a delivered order's item for another variant of the same product
    (``exchange_items``); the host reads the variant's product code from their message, never from the model."""
    DEFAULT_ADDRESS_CHANGE = "default_address_change"
    """The customer asks to change the default delivery address saved on their account
    (``change_default_address``): no order; the host reads the address from their message, as for an order's."""
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


class Plan(FrozenModel):
    """A model's plan. With :class:`ComposedAnswer` and :class:`ReviewVerdict` it is also the reply
    schema sent to the model (:mod:`activities.model.reply_schemas` generates it from these fields), so a bound
    is stated once, here, for the schema, this model and the validator alike."""

    intent: Intent
    order_id: PlannedOrderId | None
    action_requested: bool
    queries: list[QueryText] = Field(max_length=MAX_QUERIES)
    milestones: list[MilestoneText] = Field(max_length=MAX_MILESTONES)


class NextAction(StrEnum):
    ANSWER = "answer"
    PROPOSE_REFUND = "propose_refund"
    PROPOSE_ACTION = "propose_action"
    """Propose the action the plan's intent names (a cancellation): the commerce server computes it."""
    NEEDS_INPUT = "needs_input"
    HANDOFF = "handoff"


class ComposedAnswer(FrozenModel):
    answer: str = Field(min_length=1, max_length=MAX_ANSWER_CHARS)
    citations: list[CitationId] = Field(max_length=MAX_CITATIONS)
    next_action: NextAction


class Verdict(StrEnum):
    PASS = "pass"
    REVISE = "revise"
    INSUFFICIENT = "insufficient"


class ReviewVerdict(FrozenModel):
    verdict: Verdict
    problems: list[ProblemText] = Field(max_length=MAX_PROBLEMS)


class ModelUsage(FrozenModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ModelCallMeta(FrozenModel):
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


class ProposedToolCall(FrozenModel):
    """A tool call exactly as the model requested it; nothing about it is trusted yet."""

    call_id: str
    name: str
    arguments: dict[str, Any] | None
    """Parsed JSON object, or None when the model's arguments were not a JSON object."""
    raw_arguments: str = Field(max_length=MAX_RAW_ARGUMENT_CHARS)


class TranscriptEntry(FrozenModel):
    role: Literal["assistant", "tool"]
    calls: list[ProposedToolCall] = Field(default_factory=list)
    call_id: str | None = None
    content: str = ""


class PlanRequest(FrozenModel):
    case_id: str
    question: str
    language: Language
    named_order_id: str | None = None
    """The one order id the question names, found by the host; the case is bound to it whatever the plan says."""


class PlanResult(FrozenModel):
    plan: Plan
    meta: ModelCallMeta


class InvestigateRequest(FrozenModel):
    case_id: str
    question: str
    language: Language
    plan: Plan
    transcript: list[TranscriptEntry]
    tool_names: list[str]
    turn: int


class InvestigateResult(FrozenModel):
    calls: list[ProposedToolCall]
    content: str | None
    finish_reason: str | None
    meta: ModelCallMeta


class ComposeRequest(FrozenModel):
    case_id: str
    question: str
    language: Language
    plan: Plan
    facts: dict[str, Any]
    evidence: list[Passage]
    quote: RefundQuote | None
    receipt_exists: bool = False
    previous: ComposedAnswer | None = None
    problems: list[str] = Field(default_factory=list)


class ComposeResult(FrozenModel):
    answer: ComposedAnswer
    meta: ModelCallMeta


class ReviewRequest(FrozenModel):
    case_id: str
    question: str
    language: Language
    facts: dict[str, Any]
    evidence: list[Passage]
    quote: RefundQuote | None
    candidate: ComposedAnswer
    receipt_exists: bool = False


class ReviewResult(FrozenModel):
    verdict: ReviewVerdict
    meta: ModelCallMeta


# --- tools ---------------------------------------------------------------------------------------


class ToolRequest(FrozenModel):
    case_id: str
    applicant: Identity
    language: Language
    call_id: str
    name: str
    arguments: dict[str, str]


class ToolObservation(FrozenModel):
    call_id: str
    name: str
    ok: bool
    result: dict[str, Any] | None = None
    error_code: str | None = None
    error_message: str | None = None

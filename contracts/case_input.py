"""What a run of the case workflow starts with: the customer's case and, for a run that continued as new,
the case's whole state.

:class:`CaseState` is everything the workflow knows about a case. It is the workflow's own state and,
unchanged, what a case waiting for its reviewer carries into its next run (``CaseInput.carried``): one
model, so a field added to the state is carried without anyone remembering to. A carried state is
accepted only in a run that this case's own continue-as-new started (:mod:`workflows.case_input` and
:mod:`workflows.continued_run`), and only as a waiting, undecided case whose digest is its proposal's.

Nothing here calls Temporal: the workflow passes in the time.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
    model_validator,
)

from contracts.actions import ActionProposal, ActionReceipt
from contracts.case import (
    MAX_APPROVAL_TTL_SECONDS,
    MAX_QUESTION_CHARS,
    MIN_APPROVAL_TTL_SECONDS,
    REHEARSAL_LABEL,
    AcceptedApproval,
    AcceptedConfirmation,
    Budgets,
    CaseEvent,
    CaseStatus,
    Decision,
    Phase,
    ReviewDecision,
)
from contracts.case_facts import CaseFacts
from contracts.commerce import RefundProposal, RefundQuote, RefundReceipt
from contracts.conversation_log import ConversationLog
from contracts.directory import Directory
from contracts.frozen import FrozenModel
from contracts.identity import Identity
from contracts.knowledge import Language, Passage
from contracts.model_io import ComposedAnswer, ModelCallMeta, Plan
from contracts.names import EventKind
from contracts.transitions import Stage, check_transition
from contracts.usage import CaseUsage

MAX_EVENTS = 300
"""Events beyond this many are counted, not kept; lifecycle events are always kept."""
BOUNDED_EVENT_KINDS = frozenset(
    {
        EventKind.REVIEW_REFUSED,
        EventKind.TOOL_REFUSED,
        EventKind.TOOL_RAN,
        EventKind.CONTINUED_AS_NEW,
        EventKind.MESSAGE_ACCEPTED,
        EventKind.MESSAGE_REFUSED,
        EventKind.CONFIRMATION_REFUSED,
        EventKind.REPLY_SENT,
    }
)
"""Kinds an outsider, the customer or the model can multiply (refused reviews, tool calls, messages and
their replies, the runs a flood forces)."""
MAX_EVENT_DETAIL_CHARS = 500


class _State(BaseModel):
    """A part of the case's state: changed in place by the workflow, checked whole when it is decoded."""

    model_config = ConfigDict(extra="forbid")


class CaseOptions(FrozenModel):
    approval_ttl_seconds: int = Field(default=900, ge=MIN_APPROVAL_TTL_SECONDS, le=MAX_APPROVAL_TTL_SECONDS)


class Lifecycle(_State):
    """Where a case is: the last phase it entered and, once it has ended, its terminal status.

    The status a client sees follows from these two: the terminal status once there is one, waiting
    for approval in that phase, running otherwise. Every move is checked against the transition table.
    """

    phase: Phase = Phase.PLAN
    outcome: CaseStatus | None = None

    @property
    def stage(self) -> Stage:
        return self.phase if self.outcome is None else self.outcome

    @property
    def status(self) -> CaseStatus:
        if self.outcome is not None:
            return self.outcome
        if self.phase is Phase.WAITING_APPROVAL:
            return CaseStatus.WAITING_APPROVAL
        return CaseStatus.WAITING_CUSTOMER if self.phase is Phase.WAITING_CUSTOMER else CaseStatus.RUNNING

    def enter(self, phase: Phase) -> None:
        check_transition(self.stage, phase)
        self.phase = phase

    def finish(self, status: CaseStatus) -> None:
        check_transition(self.stage, status)
        self.outcome = status


class EventLog(_State):
    """The case's events. Floods of refusals are capped so they cannot push lifecycle events out."""

    events: list[CaseEvent] = Field(default_factory=list)
    dropped: int = Field(default=0, ge=0)

    def add(self, at: datetime, kind: EventKind, detail: str) -> None:
        if kind in BOUNDED_EVENT_KINDS and len(self.events) >= MAX_EVENTS:
            self.dropped += 1
            return
        self.events.append(CaseEvent(at=at, kind=kind.value, detail=detail[:MAX_EVENT_DETAIL_CHARS]))


class ModelTally(_State):
    """Which model answered, the tokens the provider reported (never a made-up zero) and, by request
    kind, what the replies cost at the operator's prices (:class:`contracts.usage.CaseUsage`)."""

    label: str | None = None
    tokens_known: int = Field(default=0, ge=0)
    unknown_calls: int = Field(default=0, ge=0)
    usage: CaseUsage = Field(default_factory=CaseUsage)

    def count(self, meta: ModelCallMeta, kind: str) -> None:
        """Count one reply of request ``kind``; the first names the model."""
        if self.label is None:
            self.label = meta.provider if meta.provider == REHEARSAL_LABEL else f"{meta.provider}:{meta.model}"
        if meta.usage is None:
            self.unknown_calls += 1
            self.usage.add(kind, None, None, meta.price)
        else:
            self.tokens_known += meta.usage.total_tokens
            self.usage.add(kind, meta.usage.prompt_tokens, meta.usage.completion_tokens, meta.price)

    def tokens(self) -> str:
        if not self.tokens_known:
            return "unknown"
        suffix = f" (+{self.unknown_calls} calls unknown)" if self.unknown_calls else ""
        return f"{self.tokens_known}{suffix}"


_ACTION_FIELDS = ("action", "confirmation", "action_receipt", "escalated_to", "near_expiry_at")


class CaseState(_State):
    """Everything the workflow knows about one case (see the module docstring).

    The case's input is held beside the state, not in it (:attr:`case`): a run's input carries the
    state, and the state is not carried twice.
    """

    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
    budgets: Budgets = Field(default_factory=Budgets)
    log: EventLog = Field(default_factory=EventLog)
    notes: list[str] = Field(default_factory=list)
    model: ModelTally = Field(default_factory=ModelTally)
    plan: Plan | None = None
    facts: CaseFacts = Field(default_factory=CaseFacts)
    evidence: dict[str, Passage] = Field(default_factory=dict)
    quote: RefundQuote | None = None
    answer: ComposedAnswer | None = None
    answer_admitted: bool = False
    proposal: RefundProposal | None = None
    digest: str | None = None
    """The pending proposal's digest, the one an approval must name (always ``proposal.digest()``, or the
    action proposal's digest)."""
    action: ActionProposal | None = None
    """The action proposal the commerce server computed for this case and the workflow's gate admitted:
    the exact effect, the rule that applied and who must agree (never beside a refund proposal)."""
    confirmation: AcceptedConfirmation | None = None
    """The customer's verified, signed "yes" to :attr:`action`, presented with it at execution."""
    action_receipt: ActionReceipt | None = None
    escalated_to: str | None = None
    """The tenant's escalation reviewer, once the pending proposal neared its expiry undecided and they
    were asked to decide it."""
    near_expiry_at: datetime | None = None
    """When the pending proposal was noted nearing its expiry undecided (a tenant naming no escalation
    reviewer; cases that took the near-expiry patch)."""
    decision: ReviewDecision | None = None
    decided_at: datetime | None = None
    directory: Directory | None = None
    """The slice of the directory recorded when the applicant token was verified: the reviewers, keys
    and approval policy every decision of this case is checked against."""
    approvals: list[AcceptedApproval] = Field(default_factory=list, max_length=3)
    """Approvals accepted so far, while the tenant's policy needs more than one."""
    used_approvals: set[str] = Field(default_factory=set)
    """Token ids of approvals already presented: each is accepted once."""
    approval_token: str | None = None
    """The accepted reviewer-signed approval, passed to the commerce server, which verifies it again."""
    receipt: RefundReceipt | None = None
    reason: str | None = None
    record_path: str | None = None
    record_error: str | None = None
    continued: int = Field(default=0, ge=0)
    """How many times this case has continued as new before this run."""
    decided_via: str | None = None
    """How the accepted review arrived: ``update`` or ``signal``."""
    started_at: datetime | None = None
    """When Temporal recorded the case's first run (a proposal made in a later run names it)."""
    withdrawn_at: datetime | None = None
    """When the customer withdrew the pending proposal: from then on no review is accepted."""
    conversation: ConversationLog = Field(default_factory=ConversationLog)
    stream_offset: int = Field(default=0, ge=0)
    """Where the progress stream of the next run starts (its items so far were read in earlier runs)."""

    _case: CaseInput | None = PrivateAttr(default=None)

    @field_serializer("used_approvals")
    def _sorted_ids(self, ids: set[str]) -> list[str]:
        return sorted(ids)  # a set's order differs between processes; the carried payload does not

    @model_serializer(mode="wrap")
    def _without_unset_actions(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A case that proposes no action and was never escalated carries the state it carried before
        either existed (release 0.11's, byte for byte): those fields are written only when set."""
        data: dict[str, Any] = handler(self)
        for name in _ACTION_FIELDS:
            if data.get(name, ...) is None:
                del data[name]
        return data

    @model_validator(mode="after")
    def _digest_is_the_proposals(self) -> CaseState:
        if self.proposal is not None and self.action is not None:
            raise ValueError("a case proposes a refund or an action, never both")
        if self.digest is None:
            return self
        if self.proposal is not None and self.digest == self.proposal.digest():
            return self
        if self.action is not None and self.digest == self.action.digest:
            return self
        raise ValueError("the digest is not the proposal's")

    @classmethod
    def of(cls, case: CaseInput) -> CaseState:
        """The state of a case's run: a new case's, or the one it carried when it continued as new."""
        state = cls() if case.carried is None else case.carried.model_copy(deep=True)
        state._case = case.model_copy(update={"carried": None})
        return state

    @property
    def case(self) -> CaseInput:
        """The case's input (never carrying a state: the state is this)."""
        assert self._case is not None, "a case state is made with CaseState.of(case)"
        return self._case

    @property
    def question(self) -> str:
        """What the current turn works on: the customer's messages since the last answer (the case's
        question in its first turn)."""
        return self.conversation.question or self.case.question

    @property
    def waiting_undecided(self) -> bool:
        """Waiting for the customer, or for a reviewer with its proposal and nothing decided or paid: the
        only states a case carries into a next run."""
        if self.lifecycle.phase is Phase.WAITING_CUSTOMER:
            return (
                self.lifecycle.outcome is None
                and self.proposal is None
                and self.action is None
                and self.receipt is None
            )
        return (
            self.lifecycle.phase is Phase.WAITING_APPROVAL
            and self.lifecycle.outcome is None
            and (self.proposal is not None or self.action is not None)
            and self.digest is not None
            and not self.agreed
            and (self.decision is None or (self.action is not None and self.decision.decision is Decision.APPROVE))
            and self.withdrawn_at is None
            and self.action_receipt is None
            and self.receipt is None
        )

    def next_run_input(self, *, stream_offset: int = 0) -> CaseInput:
        """The input of this case's next run: the case, carrying this state (one more run continued), its
        progress stream going on at ``stream_offset``."""
        assert self.waiting_undecided, "only a case waiting for its customer or reviewer continues as new"
        conversation = self.conversation.model_copy(update={"run_messages": 0})
        carried = self.model_copy(
            update={"continued": self.continued + 1, "conversation": conversation, "stream_offset": stream_offset}
        )
        return self.case.model_copy(update={"carried": carried})

    @property
    def agreed(self) -> bool:
        """Everyone the pending proposal needs has agreed: a refund's reviewer decision is made; an action
        holds the customer's confirmation where its rule asks for one, and its reviewers' approvals."""
        if self.action is None:
            return self.decision is not None
        requires = self.action.requires
        confirmed = self.confirmation is not None or not requires.customer
        approved = requires.reviewers == 0 or self.decision is not None
        return confirmed and approved

    @property
    def pending_expiry(self) -> datetime | None:
        """When the pending refund or action proposal expires (None: none is pending)."""
        if self.proposal is not None:
            return self.proposal.expires_at
        return self.action.expires_at if self.action is not None else None

    def approvals_required(self) -> int:
        """Distinct reviewers the pending proposal needs: an action's, as its rule said when the commerce
        server computed it; a refund's, as the recorded directory's policy says (1 when the case holds no
        directory or no proposal)."""
        if self.action is not None:
            return self.action.requires.reviewers
        if self.directory is None or self.proposal is None:
            return 1
        return self.directory.approvals_required(self.proposal.tenant, self.proposal.amount_cents)


class CaseInput(FrozenModel):
    case_id: str = Field(pattern=r"^[A-Za-z0-9_-]{4,64}$")
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    language: Language
    applicant: Identity
    options: CaseOptions = CaseOptions()
    applicant_token: str | None = Field(default=None, max_length=4000)
    """The applicant's credential, signed by the identity issuer (the login service; starter.py stands
    in for it). The case reads nothing until an activity has verified it."""
    carried: CaseState | None = None
    """Set only by the workflow itself when it continues as new while waiting for its customer or reviewer."""


CaseState.model_rebuild()

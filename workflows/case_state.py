"""The whole state of one case in one model, and what a client is shown of it.

``CaseState`` is what the workflow knows; ``view()`` is what the ``status`` query and the case record
show; ``carry()`` and ``from_carried()`` move a waiting case across continue-as-new. Nothing here
calls Temporal: the workflow passes in the time and applies the search-attribute updates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from temporalio.common import SearchAttributeUpdate, TypedSearchAttributes

from contracts import search_attributes as sa
from contracts.case import (
    REHEARSAL_LABEL,
    AcceptedApproval,
    AnswerSource,
    Budgets,
    CarriedCase,
    CaseEvent,
    CaseInput,
    CaseStatus,
    CaseView,
    ComposedAnswer,
    ModelCallMeta,
    Phase,
    Plan,
    ReviewDecision,
)
from contracts.case_facts import CaseFacts
from contracts.commerce import RefundProposal, RefundQuote, RefundReceipt
from contracts.directory import Directory
from contracts.effect_card import CardDecision, EffectCard, effect_card
from contracts.knowledge import Passage
from contracts.names import EventKind
from contracts.usage import CaseUsage
from workflows.customer_notice import receipt_notice, status_notice
from workflows.transitions import Stage, check_transition

MAX_EVENTS = 300
"""Events beyond this many are counted, not kept; lifecycle events are always kept."""
BOUNDED_EVENT_KINDS = frozenset(
    {EventKind.REVIEW_REFUSED, EventKind.TOOL_REFUSED, EventKind.TOOL_RAN, EventKind.CONTINUED_AS_NEW}
)
"""Kinds an outsider or the model can multiply (refused reviews, tool calls, the runs a flood forces)."""
MAX_EVENT_DETAIL_CHARS = 500


@dataclass
class Lifecycle:
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
        return CaseStatus.WAITING_APPROVAL if self.phase is Phase.WAITING_APPROVAL else CaseStatus.RUNNING

    def enter(self, phase: Phase) -> None:
        check_transition(self.stage, phase)
        self.phase = phase

    def finish(self, status: CaseStatus) -> None:
        check_transition(self.stage, status)
        self.outcome = status


@dataclass
class EventLog:
    """The case's events. Floods of refusals are capped so they cannot push lifecycle events out."""

    events: list[CaseEvent] = field(default_factory=list)
    dropped: int = 0

    def add(self, at: datetime, kind: EventKind, detail: str) -> None:
        if kind in BOUNDED_EVENT_KINDS and len(self.events) >= MAX_EVENTS:
            self.dropped += 1
            return
        self.events.append(CaseEvent(at=at, kind=kind.value, detail=detail[:MAX_EVENT_DETAIL_CHARS]))


@dataclass
class ModelTally:
    """Which model answered, the tokens the provider reported (never a made-up zero) and, by request
    kind, what the replies cost at the operator's prices (:class:`contracts.usage.CaseUsage`)."""

    label: str | None = None
    tokens_known: int = 0
    unknown_calls: int = 0
    usage: CaseUsage = field(default_factory=CaseUsage)

    def count(self, meta: ModelCallMeta, kind: str) -> bool:
        """Count one reply of request ``kind``; True when it named the model for the first time."""
        first = self.label is None
        if first:
            self.label = meta.provider if meta.provider == REHEARSAL_LABEL else f"{meta.provider}:{meta.model}"
        if meta.usage is None:
            self.unknown_calls += 1
            self.usage.add(kind, None, None, meta.price)
        else:
            self.tokens_known += meta.usage.total_tokens
            self.usage.add(kind, meta.usage.prompt_tokens, meta.usage.completion_tokens, meta.price)
        return first

    def tokens(self) -> str:
        if not self.tokens_known:
            return "unknown"
        suffix = f" (+{self.unknown_calls} calls unknown)" if self.unknown_calls else ""
        return f"{self.tokens_known}{suffix}"


CARRIED_AS_IS = (
    "budgets",
    "plan",
    "quote",
    "answer",
    "answer_admitted",
    "proposal",
    "record_path",
    "record_error",
    "directory",
)
"""The fields of :class:`CaseState` that :class:`CarriedCase` carries across continue-as-new under the
same name and type. ``carry()`` and ``from_carried()`` copy these by name and convert the rest of what
is carried (the event log, the model tally, the facts, the evidence, the approvals already used); the
carried JSON keeps :class:`CarriedCase`'s own field order, so a new run writes what the committed
continued histories hold."""
NOT_CARRIED = (
    "case",
    "lifecycle",
    "digest",
    "decision",
    "decided_at",
    "decided_via",
    "approval_token",
    "receipt",
    "reason",
)
"""The fields a waiting case does not carry: the next run's input and phase, the digest (recomputed
from the carried proposal), and what only a decision or its settlement sets."""


@dataclass
class CaseState:
    case: CaseInput
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    budgets: Budgets = field(default_factory=Budgets)
    log: EventLog = field(default_factory=EventLog)
    notes: list[str] = field(default_factory=list)
    model: ModelTally = field(default_factory=ModelTally)
    plan: Plan | None = None
    facts: CaseFacts = field(default_factory=CaseFacts)
    evidence: dict[str, Passage] = field(default_factory=dict)
    quote: RefundQuote | None = None
    answer: ComposedAnswer | None = None
    answer_admitted: bool = False
    proposal: RefundProposal | None = None
    digest: str | None = None
    decision: ReviewDecision | None = None
    decided_at: datetime | None = None
    directory: Directory | None = None
    """The slice of the directory recorded when the applicant token was verified: the reviewers, keys
    and approval policy every decision of this case is checked against."""
    approvals: list[AcceptedApproval] = field(default_factory=list)
    """Approvals accepted so far, while the tenant's policy needs more than one."""
    used_approvals: set[str] = field(default_factory=set)
    approval_token: str | None = None
    """The accepted reviewer-signed approval, passed to the commerce server, which verifies it again."""
    receipt: RefundReceipt | None = None
    reason: str | None = None
    record_path: str | None = None
    record_error: str | None = None
    continued: int = 0
    """How many times this case has continued as new before this run."""
    decided_via: str | None = None
    """How the accepted review arrived: ``update`` or ``signal``."""

    @classmethod
    def from_carried(cls, case: CaseInput, carried: CarriedCase) -> CaseState:
        """The state of a case that continued as new while waiting for a reviewer."""
        return cls(
            case=case,
            lifecycle=Lifecycle(phase=Phase.WAITING_APPROVAL),
            log=EventLog(list(carried.events), carried.dropped_events),
            notes=list(carried.notes),
            model=ModelTally(
                carried.model_label,
                carried.tokens_known,
                carried.tokens_unknown_calls,
                carried.usage.model_copy(deep=True) if carried.usage else CaseUsage(),
            ),
            facts=CaseFacts(carried.facts),
            evidence={passage.passage_id: passage for passage in carried.evidence},
            digest=carried.proposal.digest(),
            continued=carried.continued,
            used_approvals=set(carried.used_approvals),
            approvals=list(carried.approvals),
            **{name: getattr(carried, name) for name in CARRIED_AS_IS},
        )

    def carry(self) -> CarriedCase:
        """Everything the next run needs; only a case waiting for its reviewer is carried."""
        assert self.plan and self.quote and self.answer and self.proposal
        return CarriedCase(
            continued=self.continued + 1,
            events=list(self.log.events),
            dropped_events=self.log.dropped,
            notes=list(self.notes),
            model_label=self.model.label,
            tokens_known=self.model.tokens_known,
            tokens_unknown_calls=self.model.unknown_calls,
            usage=self.model.usage.model_copy(deep=True),
            facts=self.facts.wire(),
            evidence=list(self.evidence.values()),
            used_approvals=sorted(self.used_approvals),
            approvals=list(self.approvals),
            **{name: getattr(self, name) for name in CARRIED_AS_IS},
        )

    def search_attributes(self) -> list[SearchAttributeUpdate[Any]]:
        updates: list[SearchAttributeUpdate[Any]] = [
            sa.CASE_STATUS.value_set(self.lifecycle.status.value),
            sa.CASE_PHASE.value_set(self.lifecycle.phase.value),
            sa.TENANT.value_set(self.case.applicant.tenant),
            sa.APPLICANT.value_set(self.case.applicant.subject),
        ]
        if self.plan and self.plan.order_id:
            updates.append(sa.ORDER_ID.value_set(self.plan.order_id))
        if self.proposal:
            updates.append(sa.REFUND_CENTS.value_set(self.proposal.amount_cents))
        usage = self.model.usage
        if usage.prompt_tokens or usage.completion_tokens:
            updates.append(sa.MODEL_TOKENS.value_set(usage.prompt_tokens + usage.completion_tokens))
        cost = usage.cost_usd()
        if cost is not None and usage.replies:
            updates.append(sa.MODEL_COST_USD.value_set(float(cost)))
        return updates

    def search_attribute_changes(self, current: TypedSearchAttributes) -> list[SearchAttributeUpdate[Any]]:
        """The updates of :meth:`search_attributes` whose value ``current`` does not already hold. A start
        attribute (untrusted: any namespace writer may set one) that differs is overwritten by the case's."""
        return [update for update in self.search_attributes() if current.get(update.key) != update.value]

    def customer_answer(self) -> tuple[str | None, AnswerSource | None]:
        """The admitted draft while the gate's outcome holds; otherwise a message written by code."""
        status = self.lifecycle.status
        if self.receipt is not None:
            return receipt_notice(self.receipt, self.case.language), AnswerSource.RECEIPT
        draft_holds = self.lifecycle.phase is not Phase.SETTLE and status not in (
            CaseStatus.REJECTED,
            CaseStatus.EXPIRED,
        )
        if self.answer is not None and self.answer_admitted and draft_holds:
            return self.answer.answer, AnswerSource.MODEL_DRAFT
        notice = status_notice(status, self.case.language)
        return (notice, AnswerSource.STATUS_NOTICE) if notice else (None, None)

    def effect_card(self) -> EffectCard | None:
        """The pending or settled proposal's computed effect, from the quote and the records read."""
        if self.proposal is None or self.digest is None or self.quote is None:
            return None
        decided = None
        if self.decision is not None and self.decided_at is not None:
            decided = CardDecision(
                reviewer=self.decision.reviewer,
                decision=self.decision.decision.value,
                signed=self.approval_token is not None,
                via=self.decided_via,
                at=self.decided_at,
            )
        return effect_card(
            self.proposal,
            self.digest,
            self.quote,
            order=self.facts.order,
            evidence=self.evidence,
            invoice=self.facts.invoice,
            decided=decided,
            approvals_required=self.approvals_required(),
            approved_by=[approval.reviewer for approval in self.approvals],
        )

    def approvals_required(self) -> int:
        """Distinct reviewers the recorded directory's policy needs for the pending proposal (1 when
        the case holds no directory or no proposal)."""
        if self.directory is None or self.proposal is None:
            return 1
        return self.directory.approvals_required(self.proposal.tenant, self.proposal.amount_cents)

    def view(self) -> CaseView:
        answer, answer_source = self.customer_answer()
        return CaseView(
            case_id=self.case.case_id,
            status=self.lifecycle.status,
            phase=self.lifecycle.phase,
            applicant=self.case.applicant.subject,
            tenant=self.case.applicant.tenant,
            question=self.case.question,
            language=self.case.language,
            model=self.model.label or "not yet called",
            intent=self.plan.intent if self.plan else None,
            order_id=self.plan.order_id if self.plan else None,
            answer=answer,
            answer_source=answer_source,
            citations=self.answer.citations if self.answer else [],
            next_action=self.answer.next_action if self.answer else None,
            quote=self.quote,
            proposal=self.proposal,
            digest=self.digest,
            effect=self.effect_card(),
            receipt=self.receipt,
            reason=self.reason,
            record_path=self.record_path,
            record_error=self.record_error,
            budgets=self.budgets,
            tokens=self.model.tokens(),
            usage=self.model.usage.model_copy(deep=True),
            cost=self.model.usage.cost_label(),
        )

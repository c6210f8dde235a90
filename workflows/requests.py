"""What the workflow sends to its activities, built from the case state (pure, deterministic).

Each builder reads only the state it is given, so what a model, a tool or the commerce server sees
is decided here in one place and can be read without following the workflow's control flow.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from contracts.case import CloseRequest, SettleRequest
from contracts.case_input import CaseState
from contracts.commerce import ProposalOutcome, RefundProposal
from contracts.model_io import (
    ComposedAnswer,
    ComposeRequest,
    InvestigateRequest,
    ModelCallMeta,
    PlanRequest,
    ProposedToolCall,
    ReviewRequest,
    ToolRequest,
    TranscriptEntry,
)
from contracts.tools import INVESTIGATION_TOOLS


class ModelResult(Protocol):
    """What every model activity returns beside its payload: who answered, how many attempts, usage."""

    @property
    def meta(self) -> ModelCallMeta: ...


ResultT = TypeVar("ResultT", bound=ModelResult)


def plan_request(s: CaseState, named_order_id: str | None) -> PlanRequest:
    return PlanRequest(
        case_id=s.case.case_id, question=s.question, language=s.case.language, named_order_id=named_order_id
    )


def investigate_request(s: CaseState, transcript: list[TranscriptEntry], turn: int) -> InvestigateRequest:
    assert s.plan is not None
    return InvestigateRequest(
        case_id=s.case.case_id,
        question=s.question,
        language=s.case.language,
        plan=s.plan,
        transcript=transcript,
        tool_names=list(INVESTIGATION_TOOLS),
        turn=turn,
    )


def tool_request(s: CaseState, call: ProposedToolCall) -> ToolRequest:
    assert call.arguments is not None
    return ToolRequest(
        case_id=s.case.case_id,
        applicant=s.case.applicant,
        language=s.case.language,
        call_id=call.call_id,
        name=call.name,
        arguments={k: str(v) for k, v in call.arguments.items()},
    )


def compose_request(s: CaseState, previous: ComposedAnswer | None, problems: list[str]) -> ComposeRequest:
    assert s.plan is not None
    return ComposeRequest(
        case_id=s.case.case_id,
        question=s.question,
        language=s.case.language,
        plan=s.plan,
        facts=s.facts.wire(),
        evidence=list(s.evidence.values()),
        quote=s.quote,
        receipt_exists=s.receipt is not None,
        previous=previous,
        problems=problems,
    )


def review_request(s: CaseState, candidate: ComposedAnswer) -> ReviewRequest:
    return ReviewRequest(
        case_id=s.case.case_id,
        question=s.question,
        language=s.case.language,
        facts=s.facts.wire(),
        evidence=list(s.evidence.values()),
        quote=s.quote,
        candidate=candidate,
        receipt_exists=s.receipt is not None,
    )


def refund_proposal(s: CaseState, now: datetime, *, case_started_at: datetime) -> RefundProposal:
    """The exact proposal a reviewer approves: every figure from the commerce server's quote, and the
    case's recorded start, which the commerce server checks the applicant token against."""
    assert s.quote is not None
    return RefundProposal(
        case_id=s.case.case_id,
        applicant=s.case.applicant.subject,
        tenant=s.case.applicant.tenant,
        order_id=s.quote.order_id,
        order_version=s.quote.order_version,
        rule_version=s.quote.rule_version,
        amount_cents=s.quote.amount_cents,
        currency=s.quote.currency,
        quote_id=s.quote.quote_id,
        created_at=now,
        expires_at=now + timedelta(seconds=s.case.options.approval_ttl_seconds),
        ledger_id=s.quote.ledger_id,
        case_started_at=case_started_at,
    )


def settle_request(s: CaseState) -> SettleRequest:
    assert s.proposal is not None and s.digest is not None
    assert s.decision is not None and s.decided_at is not None
    first = s.approvals[0] if s.approvals else None
    return SettleRequest(
        case_id=s.case.case_id,
        applicant=s.case.applicant,
        approval_id=f"APR-{s.digest[:32]}",
        proposal=s.proposal,
        digest=s.digest,
        reviewer=first.reviewer if first is not None else s.decision.reviewer,
        approved_at=s.decided_at,
        approval_token=s.approval_token,
        co_approval_tokens=[approval.approval_token for approval in s.approvals[1:]],
        applicant_token=s.case.applicant_token,
    )


def closure_request(s: CaseState, outcome: ProposalOutcome) -> CloseRequest:
    """The case's proposal, closed as ``outcome`` at the commerce server."""
    assert s.proposal is not None and s.digest is not None
    return CloseRequest(
        case_id=s.case.case_id, applicant=s.case.applicant, proposal=s.proposal, digest=s.digest, outcome=outcome
    )

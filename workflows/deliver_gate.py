"""The deliver gate: code, not the model, decides what a drafted answer may lead to."""

from __future__ import annotations

import re
from dataclasses import dataclass

from contracts.case import CaseStatus, ComposedAnswer, Intent, NextAction, Plan
from contracts.commerce import RefundQuote

PAYMENT_CLAIM = re.compile(
    r"\b(i|we) (have )?(just )?(refunded|reimbursed|issued (you )?(a|the|your) refund)\b"
    r"|\byour refund (has been|was|is) (paid|processed|issued|completed|sent|transferred)\b"
    r"|\brefund(ed)? successfully\b|\brefund is complete\b"
    r"|已为您退款|已成功退款|退款已(完成|到账|支付|发放)",
    re.IGNORECASE,
)
"""Claims that this case's refund already happened. Only a receipt may back such a sentence; a
statement about an earlier refund ("already refunded in full") is not matched."""


@dataclass(frozen=True)
class DeliveryDecision:
    outcome: CaseStatus | None
    """A terminal status, or None when the gate admits a refund proposal (wait for approval)."""
    reason: str


def cited_pages(citations: list[str]) -> set[str]:
    """``RETURNS:p02:en:0`` -> ``RETURNS:p02``."""
    return {":".join(c.split(":")[:2]) for c in citations}


def decide_delivery(
    plan: Plan,
    answer: ComposedAnswer,
    quote: RefundQuote | None,
    evidence_ids: set[str],
) -> DeliveryDecision:
    """Decide the case outcome from structured facts only."""
    if not set(answer.citations) <= evidence_ids:
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, "citation_not_in_context")
    if len(set(answer.citations)) != len(answer.citations):
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, "duplicate_citations")
    if PAYMENT_CLAIM.search(answer.answer):
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, "answer_claims_payment_without_receipt")
    if answer.next_action is NextAction.NEEDS_INPUT:
        return DeliveryDecision(CaseStatus.NEEDS_INPUT, "more_input_needed")
    if answer.next_action is NextAction.HANDOFF:
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, "handoff_requested")
    if answer.next_action is NextAction.PROPOSE_REFUND:
        return _refund_proposal_gate(plan, answer, quote)
    if not answer.citations and plan.intent is not Intent.GREETING:
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, "uncited_answer")
    return DeliveryDecision(CaseStatus.COMPLETED, "answered")


def _refund_proposal_gate(plan: Plan, answer: ComposedAnswer, quote: RefundQuote | None) -> DeliveryDecision:
    if plan.intent is not Intent.REFUND or not plan.action_requested:
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, "proposal_without_refund_request")
    if quote is None or quote.order_id != plan.order_id:
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, "proposal_without_quote")
    if not quote.eligible:
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, f"quote_not_eligible:{quote.reason}")
    missing = set(quote.citations) - cited_pages(answer.citations)
    if missing:
        return DeliveryDecision(
            CaseStatus.NEEDS_HUMAN, "missing_policy_citations:" + ",".join(sorted(missing))
        )
    return DeliveryDecision(None, "proposal_admitted")

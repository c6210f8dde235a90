"""The deliver gate: code, not the model, decides what a drafted answer may lead to."""

from __future__ import annotations

import re
from dataclasses import dataclass

from contracts.action_policy import ActionKind
from contracts.case import CaseStatus
from contracts.commerce import RefundQuote
from contracts.model_io import ComposedAnswer, Intent, NextAction, Plan
from contracts.names import StopCode, stop_reason

_DONE = (
    r"(?:paid|issued|sent|processed|completed|credited|transferred|returned|executed|settled|made|refunded"
    r"|reimbursed|approved and paid)"
)
_ADVERB = r"(?: (?:now|already|just|successfully|fully|been))*"
_WITHIN_CLAUSE = r"(?:[^.;!?,]|\.(?=\d))"  # a decimal point ("CNY 129.00") does not end a clause

PAYMENT_CLAIM = re.compile(
    # first person: "we've refunded", "I have just issued the refund", "we paid you back"
    rf"\b(?:i|we)(?:'ve|'d| have| had)?{_ADVERB} (?:refunded|reimbursed|repaid|credited"
    rf"|(?:paid|returned|transferred|sent|issued|processed|executed|completed)\b{_WITHIN_CLAUSE}{{0,30}}"
    rf"\b(?:refund|money|payment|cny|yuan|amount|you back))\b"
    # the refund or the money as subject: "your refund of CNY 129.00 has been paid"
    rf"|\b(?:refund|money)\b{_WITHIN_CLAUSE}{{0,40}}?\b(?:has|have|'s|was|were){_ADVERB} {_DONE}\b"
    # "refund completed", "refunded successfully", "your refund is complete / on its way"
    rf"|\brefund(?:ed)?\b{_WITHIN_CLAUSE}{{0,20}}\b(?:successfully|successful|complete|completed|done|on its way)\b"
    r"|\bsuccessfully refunded\b"
    # money that has arrived: "is back in your account", "CNY 129.00 was credited to your card"
    r"|\b(?:is|are) (?:now )?back (?:in|on|to) your\b"
    r"|\b(?:has|have|was|were)(?: \w+){0,2} (?:refunded|returned|credited|transferred|sent|paid)"
    rf"\b{_WITHIN_CLAUSE}{{0,30}}\bto you(?:r (?:account|card|bank|wallet|balance|original payment))?\b"
    # Chinese: 已退款, 已经为您退回, 退款已到账, 129 元已退回您的账户, 退款成功
    r"|已(?:经)?(?:为您|给您|向您|帮您|成功)?退款|已(?:经)?(?:为您|给您|向您|帮您)(?:退还|退回|返还|到账|打款|付款|支付)"
    r"|(?:退款|钱|款项|[\d.]+ ?元)(?:已|已经)(?:完成|到账|支付|发放|退回|退还|返还|处理|成功|办理|打款|退)"
    r"|退款成功",
    re.IGNORECASE,
)
"""Claims that this case's refund already happened. Only a receipt may back such a sentence, and at
the deliver gate no receipt can exist yet (settlement comes after a human approval)."""

_NOT_A_CLAIM = re.compile(
    r"\b(?:not|no|never|nothing|none|yet|once|after|when|whenever|if|until|unless|will|would|can|could"
    r"|may|might|should|must|before|as soon as|only|whether)\b|n't\b"
    r"|未|没有|没|不|尚|待|将|会|一旦|如果|之后|后才|只有|才能|才可|即使|每|一笔",
    re.IGNORECASE,
)
"""Negation, condition, future or a rule's wording in a match's clause, before it: "nothing has been
paid yet", "once the refund is complete", "退款将在批准后到账", "states that a refund has been paid
only when a receipt exists" describe what has not happened or when it may be said."""
_RULE_AFTER = re.compile(r"\b(?:only|never|unless|whether)\b|才|绝不|的说法", re.IGNORECASE)
"""After a match, only a rule's wording ("… only when a receipt exists", "… is never based on") undoes
it; "your refund has been paid and will arrive soon" stays a claim."""
_GENERIC_SUBJECT = re.compile(r"\b(?:a|an|any|another|each|every|separate)\s+$", re.IGNORECASE)
"""An indefinite subject right before a match ("a refund has been made") is a general statement."""
_CLAUSE_BREAK = re.compile(r"[,;:，；：、—]|\s-\s")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*|\n+")


def claims_payment(text: str) -> bool:
    """Whether ``text`` states, in English or Chinese, that the refund has been paid.

    Sentence by sentence: a claim pattern whose clause holds no negation, condition or future ("no
    refund has been paid yet", "once approved, the refund is sent") and whose subject is not generic.
    A statement about an earlier refund recorded on the order ("the paid item amount has already
    been refunded in full", "CNY 49.00 was refunded before") or about the customer's original payment
    ("CNY 141.00 was paid on 2026-09-01") is not a claim: an amount counts only when it is said to have
    gone back to the customer ("… refunded to your card").
    """
    for sentence in _SENTENCE.split(text):
        for match in PAYMENT_CLAIM.finditer(sentence):
            before = _CLAUSE_BREAK.split(sentence[: match.start()])[-1]
            after = _CLAUSE_BREAK.split(sentence[match.end() :])[0]
            if _GENERIC_SUBJECT.search(before) or _NOT_A_CLAIM.search(before + match.group(0)):
                continue
            if _RULE_AFTER.search(after):
                continue
            return True
    return False


ACTION_OF_INTENT: dict[Intent, ActionKind] = {
    Intent.CANCELLATION: ActionKind.CANCEL_ORDER,
    Intent.ADDRESS_CHANGE: ActionKind.CHANGE_ORDER_ADDRESS,
    Intent.RETURN: ActionKind.RETURN_ITEMS,
    Intent.EXCHANGE: ActionKind.EXCHANGE_ITEMS,
    Intent.DEFAULT_ADDRESS_CHANGE: ActionKind.CHANGE_DEFAULT_ADDRESS,
}
"""The actions a case proposes, by the plan's intent (:mod:`workflows.action_gate` asks for them)."""


@dataclass(frozen=True)
class DeliveryDecision:
    outcome: CaseStatus | None
    """A terminal status, or None when the gate admits a refund or action proposal (wait for agreement)."""
    code: StopCode
    detail: str | None = None
    admits_draft: bool = False
    """Whether the draft may be shown to the customer as the case's answer. A refused draft never is."""

    @property
    def reason(self) -> str:
        return stop_reason(self.code, self.detail)


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
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, StopCode.CITATION_NOT_IN_CONTEXT)
    if len(set(answer.citations)) != len(answer.citations):
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, StopCode.DUPLICATE_CITATIONS)
    if claims_payment(answer.answer):
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, StopCode.ANSWER_CLAIMS_PAYMENT_WITHOUT_RECEIPT)
    if answer.next_action is NextAction.NEEDS_INPUT:
        return DeliveryDecision(CaseStatus.NEEDS_INPUT, StopCode.MORE_INPUT_NEEDED, admits_draft=True)
    if answer.next_action is NextAction.HANDOFF:
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, StopCode.HANDOFF_REQUESTED, admits_draft=True)
    if answer.next_action is NextAction.PROPOSE_REFUND:
        return _refund_proposal_gate(plan, answer, quote)
    if answer.next_action is NextAction.PROPOSE_ACTION:
        kind = ACTION_OF_INTENT.get(plan.intent)
        if kind is None or not plan.action_requested or (kind.order_bound and plan.order_id is None):
            return DeliveryDecision(CaseStatus.NEEDS_HUMAN, StopCode.ACTION_WITHOUT_REQUEST, plan.intent.value)
        return DeliveryDecision(None, StopCode.PROPOSAL_ADMITTED, admits_draft=True)
    if not answer.citations and plan.intent is not Intent.GREETING:
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, StopCode.UNCITED_ANSWER)
    return DeliveryDecision(CaseStatus.COMPLETED, StopCode.ANSWERED, admits_draft=True)


def _refund_proposal_gate(plan: Plan, answer: ComposedAnswer, quote: RefundQuote | None) -> DeliveryDecision:
    if plan.intent is not Intent.REFUND or not plan.action_requested:
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, StopCode.PROPOSAL_WITHOUT_REFUND_REQUEST)
    if quote is None or quote.order_id != plan.order_id:
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, StopCode.PROPOSAL_WITHOUT_QUOTE)
    if not quote.eligible:
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, StopCode.QUOTE_NOT_ELIGIBLE, quote.reason)
    missing = set(quote.citations) - cited_pages(answer.citations)
    if missing:
        return DeliveryDecision(CaseStatus.NEEDS_HUMAN, StopCode.MISSING_POLICY_CITATIONS, ",".join(sorted(missing)))
    return DeliveryDecision(None, StopCode.PROPOSAL_ADMITTED, admits_draft=True)

"""What a client is shown of a case's state: the ``status`` query's view, the customer's answer, the
effect card, and the search attributes a case keeps up to date.

The state itself is :class:`contracts.case_input.CaseState`. Nothing here calls Temporal: the workflow
applies the search-attribute updates.
"""

from __future__ import annotations

from typing import Any

from temporalio.common import SearchAttributeUpdate, TypedSearchAttributes

from contracts import search_attributes as sa
from contracts.case import AnswerSource, CaseStatus, CaseView, Phase
from contracts.case_input import CaseState
from contracts.conversation import ConversationView
from contracts.effect_card import CardDecision, EffectCard, effect_card, proposal_memo
from contracts.names import StopCode, stop_code
from workflows.action_notice import address_needed_notice, end_notice, proposal_notice, variant_needed_notice
from workflows.action_notice import receipt_notice as action_receipt_notice
from workflows.customer_notice import receipt_notice, status_notice


def search_attributes(s: CaseState) -> list[SearchAttributeUpdate[Any]]:
    updates: list[SearchAttributeUpdate[Any]] = [
        sa.CASE_STATUS.value_set(s.lifecycle.status.value),
        sa.CASE_PHASE.value_set(s.lifecycle.phase.value),
        sa.TENANT.value_set(s.case.applicant.tenant),
        sa.APPLICANT.value_set(s.case.applicant.subject),
    ]
    if s.plan and s.plan.order_id:
        updates.append(sa.ORDER_ID.value_set(s.plan.order_id))
    if s.proposal:
        updates.append(sa.REFUND_CENTS.value_set(s.proposal.amount_cents))
    usage = s.model.usage
    if usage.prompt_tokens or usage.completion_tokens:
        updates.append(sa.MODEL_TOKENS.value_set(usage.prompt_tokens + usage.completion_tokens))
    cost = usage.cost_usd()
    if cost is not None and usage.replies:
        updates.append(sa.MODEL_COST_USD.value_set(float(cost)))
    return updates


def search_attribute_changes(s: CaseState, current: TypedSearchAttributes) -> list[SearchAttributeUpdate[Any]]:
    """The updates of :func:`search_attributes` whose value ``current`` does not already hold. A start
    attribute (untrusted: any namespace writer may set one) that differs is overwritten by the case's."""
    return [update for update in search_attributes(s) if current.get(update.key) != update.value]


def case_memo(s: CaseState) -> dict[str, Any]:
    """The memo a case keeps beside its search attributes (``temporal workflow describe`` and the case
    list read it without a worker): the model, its usage and cost once it has answered, the pending
    proposal's line, the receipt. Only what the case knows is set; nothing is set to an empty value."""
    memo: dict[str, Any] = {}
    if s.model.label is not None:
        memo["model"] = s.model.label
    usage = s.model.usage
    if usage.replies:
        memo["usage"] = usage.model_dump(mode="json")
        memo["cost"] = usage.cost_label()
    card = case_effect_card(s)
    if card is not None:
        memo["proposal"] = proposal_memo(card)
    if s.receipt is not None:
        memo["receipt"] = f"{s.receipt.receipt_id}: {s.receipt.amount_cents} cents (SIMULATED)"
    if s.action is not None:
        memo["action"] = f"{s.action.kind.value} of {s.action.effect.target}, digest {s.action.digest[:12]}"
    if s.action_receipt is not None:
        memo["receipt"] = f"{s.action_receipt.receipt_id}: {s.action_receipt.kind.value} (SIMULATED)"
    return memo


def customer_answer(s: CaseState) -> tuple[str | None, AnswerSource | None]:
    """The admitted draft while the gate's outcome holds; otherwise a message written by code."""
    status = s.lifecycle.status
    if s.receipt is not None:
        return receipt_notice(s.receipt, s.case.language), AnswerSource.RECEIPT
    if s.action is not None:
        return _action_answer(s)
    asked_for = stop_code(s.reason) if status is CaseStatus.WAITING_CUSTOMER and s.reason else None
    if asked_for == StopCode.ADDRESS_NEEDED:
        return address_needed_notice(s.case.language), AnswerSource.STATUS_NOTICE
    if asked_for == StopCode.VARIANT_NEEDED:
        return variant_needed_notice(s.case.language), AnswerSource.STATUS_NOTICE
    draft_holds = s.lifecycle.phase is not Phase.SETTLE and status not in (
        CaseStatus.REJECTED,
        CaseStatus.EXPIRED,
        CaseStatus.WITHDRAWN,
        CaseStatus.NEEDS_INPUT,
    )
    if s.answer is not None and s.answer_admitted and draft_holds:
        return s.answer.answer, AnswerSource.MODEL_DRAFT
    notice = status_notice(status, s.case.language)
    return (notice, AnswerSource.STATUS_NOTICE) if notice else (None, None)


def _action_answer(s: CaseState) -> tuple[str | None, AnswerSource | None]:
    """An action case's answer, all written by code: the receipt, the proposal while it waits, or its end."""
    language = s.case.language
    assert s.action is not None
    if s.action_receipt is not None:
        opened = s.action.effect.return_opened
        return action_receipt_notice(s.action_receipt, language, opened=opened), AnswerSource.RECEIPT
    status = s.lifecycle.status
    if status is CaseStatus.WAITING_APPROVAL or s.lifecycle.phase is Phase.SETTLE:
        return proposal_notice(s.action, language), AnswerSource.STATUS_NOTICE
    notice = end_notice(status, language, s.action.kind) or status_notice(status, language)
    return (notice, AnswerSource.STATUS_NOTICE) if notice else (None, None)


def case_effect_card(s: CaseState) -> EffectCard | None:
    """The pending or settled proposal's computed effect, from the quote and the records read."""
    if s.proposal is None or s.digest is None or s.quote is None:
        return None
    decided = None
    if s.decision is not None and s.decided_at is not None:
        decided = CardDecision(
            reviewer=s.decision.reviewer,
            decision=s.decision.decision.value,
            signed=s.approval_token is not None,
            via=s.decided_via,
            at=s.decided_at,
        )
    return effect_card(
        s.proposal,
        s.digest,
        s.quote,
        order=s.facts.order,
        evidence=s.evidence,
        invoice=s.facts.invoice,
        decided=decided,
        approvals_required=s.approvals_required(),
        approved_by=[approval.reviewer for approval in s.approvals],
    )


def case_view(s: CaseState) -> CaseView:
    """What the ``status`` query returns and the case record stores."""
    answer, answer_source = customer_answer(s)
    return CaseView(
        case_id=s.case.case_id,
        status=s.lifecycle.status,
        phase=s.lifecycle.phase,
        applicant=s.case.applicant.subject,
        tenant=s.case.applicant.tenant,
        question=s.case.question,
        language=s.case.language,
        model=s.model.label or "not yet called",
        intent=s.plan.intent if s.plan else None,
        order_id=s.plan.order_id if s.plan else None,
        answer=answer,
        answer_source=answer_source,
        citations=s.answer.citations if s.answer else [],
        next_action=s.answer.next_action if s.answer else None,
        quote=s.quote,
        proposal=s.proposal,
        digest=s.digest,
        effect=case_effect_card(s),
        receipt=s.receipt,
        action=s.action,
        confirmed_by=s.confirmation.subject if s.confirmation else None,
        approved_by=[approval.reviewer for approval in s.approvals] if s.action else [],
        action_receipt=s.action_receipt,
        escalated_to=s.escalated_to,
        near_expiry_at=s.near_expiry_at,
        reason=s.reason,
        record_path=s.record_path,
        record_error=s.record_error,
        budgets=s.budgets,
        tokens=s.model.tokens(),
        usage=s.model.usage.model_copy(deep=True),
        cost=s.model.usage.cost_label(),
        conversation=list(s.conversation.entries),
        conversation_dropped=s.conversation.dropped,
        waiting_until=s.conversation.waiting_until,
    )


def conversation_view(s: CaseState) -> ConversationView:
    """What the ``conversation`` query returns: the transcript as the case holds it."""
    return ConversationView(
        case_id=s.case.case_id,
        tenant=s.case.applicant.tenant,
        customer=s.case.applicant.subject,
        language=s.case.language,
        status=s.lifecycle.status,
        entries=list(s.conversation.entries),
        dropped=s.conversation.dropped,
        waiting_until=s.conversation.waiting_until,
        awaiting_confirmation=_awaiting_confirmation(s),
    )


def _awaiting_confirmation(s: CaseState) -> str | None:
    """The digest of the action proposal that waits for the customer's signed yes (None: none does)."""
    action = s.action
    waiting = s.lifecycle.status is CaseStatus.WAITING_APPROVAL and s.withdrawn_at is None
    if action is None or not waiting or not action.requires.customer or s.confirmation is not None:
        return None
    return action.digest

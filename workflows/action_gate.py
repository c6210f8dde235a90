"""The action gate: what a case may ask the commerce server to propose, and which proposal it keeps.

Pure and deterministic (the workflow passes in ``workflow.now()``). The model chooses an intent and
says it wants to propose; code decides everything else. Before anything is asked, the tenant's policy as
the case's directory records it must name a rule for the action (default deny, the same rule the
commerce server applies). The proposal that comes back is kept only if it is the one asked for: this
case, this customer and tenant, the plan's order (none for the account's own action), the rule the
directory names, the agreement the directory asks for the computed amount, for a refund the very quote the
case investigated, a digest over its own fields, an expiry within the rule's, and a draft that cites every
policy page the effect rests on. A refusal is a :class:`StopCode` and a detail.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from contracts.action_credentials import verify_confirmation
from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ActionProposal, ActionRequest, address_in, sku_in
from contracts.approval_claims import CredentialRefused
from contracts.case import AcceptedConfirmation, CaseStatus
from contracts.case_input import CaseState
from contracts.identity import Identity
from contracts.model_io import ComposedAnswer, Plan
from contracts.names import StopCode
from workflows.deliver_gate import ACTION_OF_INTENT, cited_pages


@dataclass(frozen=True)
class ActionRefusal:
    code: StopCode
    detail: str | None = None
    status: CaseStatus = CaseStatus.NEEDS_HUMAN
    """``needs_input`` where the customer can supply what is missing (the new address, the variant)."""


REFUND_AS_ACTION_PATCH = "refund-as-action"
"""A refund case of a tenant whose policy names ``refund_order`` proposes it through the action contract
(release 0.12 on); every case recorded before took the refund's own proposal and approval."""


def refunds_as_action(s: CaseState) -> bool:
    """Whether the tenant's policy, as the case's directory records it, names ``refund_order``."""
    return rule_of(s, ActionKind.REFUND_ORDER) is not None


def action_request(plan: Plan, s: CaseState, kind: ActionKind | None = None) -> ActionRequest | ActionRefusal:
    """The request to send ``preview_action`` for ``kind`` (default: the plan's intent's action), or why
    none may be sent (nothing is then asked)."""
    kind = kind or ACTION_OF_INTENT.get(plan.intent)
    if kind is None or not plan.action_requested or (kind.order_bound and plan.order_id is None):
        return ActionRefusal(StopCode.ACTION_WITHOUT_REQUEST, plan.intent.value)
    if rule_of(s, kind) is None:
        return ActionRefusal(StopCode.ACTION_NOT_ALLOWED, kind.value)
    address = None
    if kind in (ActionKind.CHANGE_ORDER_ADDRESS, ActionKind.CHANGE_DEFAULT_ADDRESS):
        address = address_in(s.question)  # the customer's own words, read by code; they confirm it shown back
        if address is None:
            return ActionRefusal(StopCode.ADDRESS_NEEDED, status=CaseStatus.NEEDS_INPUT)
    sku_after = None
    if kind is ActionKind.EXCHANGE_ITEMS:
        sku_after = sku_in(s.question)  # the product code the customer wrote, read by code like the address
        if sku_after is None:
            return ActionRefusal(StopCode.VARIANT_NEEDED, status=CaseStatus.NEEDS_INPUT)
    order_id = plan.order_id if kind.order_bound else None  # the account's own action changes no order
    return ActionRequest(kind=kind, case_id=s.case.case_id, order_id=order_id, address=address, sku_after=sku_after)


def rule_of(s: CaseState, kind: ActionKind) -> ActionRule | None:
    """The tenant's rule for ``kind`` as the case's recorded directory says it (None: denied)."""
    if s.directory is None:
        return None
    return s.directory.action_rule(s.case.applicant.tenant, kind)


def admit_proposal(
    proposal: ActionProposal, request: ActionRequest, s: CaseState, answer: ComposedAnswer, *, now: datetime
) -> ActionRefusal | None:
    """None when ``proposal`` is exactly the one the case asked for and may show its customer."""
    applicant = s.case.applicant
    asked = (request.kind, request.case_id, request.order_id, applicant.tenant, applicant.subject)
    got = (proposal.kind, proposal.case_id, proposal.effect.order_id, proposal.tenant, proposal.customer)
    exchange = proposal.effect.exchange_opened
    swapped_to = exchange.sku_after if exchange is not None else None
    if asked != got or proposal.effect.address_after != request.address or swapped_to != request.sku_after:
        return ActionRefusal(StopCode.ACTION_PROPOSAL_INVALID, "not_the_request")
    if proposal.digest != proposal.computed_digest():
        return ActionRefusal(StopCode.ACTION_PROPOSAL_INVALID, "digest")
    rule = rule_of(s, proposal.kind)
    if rule is None or rule != proposal.rule:
        return ActionRefusal(StopCode.ACTION_PROPOSAL_INVALID, "rule")
    assert s.directory is not None  # rule_of found a rule in it
    expected = s.directory.action_agreement(applicant.tenant, proposal.kind, proposal.effect.refund_cents)
    if proposal.requires != expected:
        return ActionRefusal(StopCode.ACTION_PROPOSAL_INVALID, "agreement")
    if proposal.kind is ActionKind.REFUND_ORDER and not _the_quote(proposal, s):
        return ActionRefusal(StopCode.ACTION_PROPOSAL_INVALID, "not_the_quote")
    latest = proposal.created_at + timedelta(minutes=rule.expires_minutes)
    if not now < proposal.expires_at <= latest:
        return ActionRefusal(StopCode.ACTION_PROPOSAL_INVALID, "expiry")
    missing = set(proposal.effect.policy_pages) - cited_pages(answer.citations)
    if missing:
        return ActionRefusal(StopCode.MISSING_POLICY_CITATIONS, ",".join(sorted(missing)))
    return None


def _the_quote(proposal: ActionProposal, s: CaseState) -> bool:
    """A refund's proposal pays exactly the quote the case investigated and its draft states."""
    quote, effect = s.quote, proposal.effect
    return quote is not None and (effect.refund_cents, effect.quote_id) == (quote.amount_cents, quote.quote_id)


def judge_confirmation(
    token: str, s: CaseState, customer: Identity, *, now: datetime, message: int
) -> AcceptedConfirmation | str:
    """The customer's confirmation of the waiting action, or the code of the check it failed: signed by
    the directory's issuer for this case's customer, over this proposal's digest, before it expires."""
    action = s.action
    waiting = action is not None and s.digest is not None and s.lifecycle.outcome is None and s.withdrawn_at is None
    if not waiting or action is None or not action.requires.customer or s.confirmation is not None:
        return "no_confirmation_waiting"
    if customer != s.case.applicant:
        return "another_customer"
    if now >= action.expires_at:
        return "proposal_expired"
    if s.directory is None:
        return "unknown_signer"
    try:
        claims = verify_confirmation(
            token, s.directory, customer=customer, case_id=s.case.case_id, digest=action.digest, now=now
        )
    except CredentialRefused as refused:
        return str(refused.code)
    return AcceptedConfirmation(
        subject=claims.sub, confirmation_token=token, token_id=claims.jti, at=now, message=message
    )

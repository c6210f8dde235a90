"""The checks of ``refund_order``, the refund as an action: its proposal states exactly the published refund
rule's quote of the first fixture order the rule still finds refundable (amount, quote id, pages, the
status kept, the original payment method), asks at least the reviewers the tenant's refund approval policy
names, and a refund of an order that was never delivered is refused before anyone is asked. The kit
previews, never executes one: the refund checks pay their one order a run through ``execute_refund``."""

from __future__ import annotations

from commerce_contract.checks_actions import not_eligible, previewed, required_rule
from commerce_contract.checks_refunds import Check
from commerce_contract.context import CheckFailed, CheckSkipped, Run, fresh_case_id
from contracts.action_policy import ActionKind
from contracts.actions import ActionRequest
from contracts.errors import SupportError
from knowledge.action_rules import OrderRecords, action_effect
from knowledge.refund_quote import policy_page_versions
from knowledge.store import default_knowledge_base

REFUND = ActionKind.REFUND_ORDER


async def action_refund_preview_exact(run: Run) -> str:
    rule = required_rule(run, REFUND)
    directory = run.keys.directory
    follows = directory.policy_tenant(run.customer.tenant)
    versions = policy_page_versions(default_knowledge_base(), tenant=follows)
    for order_id in run.fixture.refundable_orders:
        order = await run.read_order(order_id)
        request = ActionRequest(kind=REFUND, case_id=fresh_case_id(), order_id=order_id)
        try:
            expected = action_effect(request, OrderRecords(order=order, policy_tenant=follows, page_versions=versions))
        except SupportError:  # the published rule refuses it (paid by this run or an earlier one): the next one
            continue
        break
    else:
        raise CheckSkipped("no fixture order is refundable any more (each run pays one)")
    proposal = await previewed(run, order.order_id, REFUND)
    if proposal.effect != expected:
        raise CheckFailed(f"the refund's effect {proposal.effect} is not the published rule's {expected}")
    needed = directory.action_agreement(run.customer.tenant, REFUND, expected.refund_cents)
    if proposal.rule != rule or proposal.requires != needed or proposal.computed_digest() != proposal.digest:
        raise CheckFailed(
            f"the refund's proposal states another rule or asks {proposal.requires} instead of {needed} "
            "(never fewer reviewers than the refund approval policy), or its digest does not recompute"
        )
    return (
        f"{order.order_id}: {expected.refund_cents} cents to the original payment method (quote {expected.quote_id}),"
        f" status kept, {needed.reviewers} reviewer(s) as the approval policy asks; digest recomputes"
    )


async def action_refund_not_eligible(run: Run) -> str:
    required_rule(run, REFUND)
    if not run.fixture.cancellable_orders:
        raise CheckSkipped("the fixture names no cancellable_orders (an order that was never delivered)")
    order_id = run.fixture.cancellable_orders[0]
    request = ActionRequest(kind=REFUND, case_id=fresh_case_id(), order_id=order_id)
    return await not_eligible(run, request, f"a refund of undelivered order {order_id}")


def refund_action_checks() -> list[Check]:
    return [action_refund_preview_exact, action_refund_not_eligible]

"""The checks of ``return_items`` and ``exchange_items``: each proposal states what the published rule
computes from the order's records and the catalogue (every unit, the refund or the price difference due on
check-in, nothing paid now, the rule's pages), and one of an order that was never delivered is refused
before anyone is asked. The kit previews returns and exchanges, never executes one, so every run checks the
same order."""

from __future__ import annotations

from commerce_contract.checks_actions import not_eligible, previewed, required_rule
from commerce_contract.checks_refunds import Check
from commerce_contract.context import CheckFailed, CheckSkipped, Run, fresh_case_id
from contracts.action_policy import ActionKind
from contracts.actions import ActionRequest
from knowledge.action_rules import OrderRecords, action_effect

RETURN = ActionKind.RETURN_ITEMS
EXCHANGE = ActionKind.EXCHANGE_ITEMS


async def action_return_preview_exact(run: Run) -> str:
    rule = required_rule(run, RETURN)
    if not run.fixture.returnable_orders:
        raise CheckSkipped("the fixture names no returnable_orders (a delivered order not back yet)")
    order = await run.read_order(run.fixture.returnable_orders[0])
    proposal = await previewed(run, order.order_id, RETURN)
    follows = run.keys.directory.policy_tenant(run.customer.tenant)
    request = ActionRequest(kind=RETURN, case_id=proposal.case_id, order_id=order.order_id)
    expected = action_effect(request, OrderRecords(order=order, policy_tenant=follows))
    if proposal.effect != expected:
        raise CheckFailed(f"the return's effect {proposal.effect} is not the published rule's {expected}")
    if proposal.rule != rule or proposal.computed_digest() != proposal.digest:
        raise CheckFailed("the return's proposal states another rule, or its digest does not recompute")
    opened = expected.return_opened
    if opened is None:
        raise CheckFailed(f"the published rule opens no return of {order.order_id}")
    return (
        f"{order.order_id}: {opened.units} unit(s) back, {opened.refund_due_cents} cents due on check-in, "
        "nothing paid now, as the published rule says; digest recomputes"
    )


async def action_return_not_eligible(run: Run) -> str:
    required_rule(run, RETURN)
    if not run.fixture.cancellable_orders:
        raise CheckSkipped("the fixture names no cancellable_orders (an order that was never delivered)")
    order_id = run.fixture.cancellable_orders[0]
    request = ActionRequest(kind=RETURN, case_id=fresh_case_id(), order_id=order_id)
    return await not_eligible(run, request, f"a return of undelivered order {order_id}")


async def action_exchange_preview_exact(run: Run) -> str:
    rule = required_rule(run, EXCHANGE)
    sku_after = run.fixture.exchange_sku
    if not run.fixture.returnable_orders or sku_after is None:
        raise CheckSkipped("the fixture names no returnable_orders and exchange_sku (a variant to exchange for)")
    order = await run.read_order(run.fixture.returnable_orders[0])
    proposal = await previewed(run, order.order_id, EXCHANGE, sku_after=sku_after)
    swap = proposal.effect.exchange_opened
    if swap is None or (swap.sku_before, swap.sku_after, swap.units) != (order.sku, sku_after, order.quantity):
        raise CheckFailed(f"the exchange's effect {proposal.effect} is not {order.sku} for {sku_after}, every unit")
    effect = proposal.effect
    if (effect.refund_cents, effect.status_after, effect.order_version) != (0, order.status, order.version):
        raise CheckFailed("the exchange pays something now, moves the status, or states another order version")
    if proposal.rule != rule or proposal.computed_digest() != proposal.digest:
        raise CheckFailed("the exchange's proposal states another rule, or its digest does not recompute")
    return (
        f"{order.order_id}: {swap.units} x {swap.sku_before} for {swap.sku_after}, difference {swap.difference_cents} "
        "cents on check-in, nothing paid now; digest recomputes"
    )


async def action_exchange_not_eligible(run: Run) -> str:
    required_rule(run, EXCHANGE)
    if not run.fixture.cancellable_orders or run.fixture.exchange_sku is None:
        raise CheckSkipped("the fixture names no cancellable_orders and exchange_sku")
    order_id = run.fixture.cancellable_orders[0]
    request = ActionRequest(
        kind=EXCHANGE, case_id=fresh_case_id(), order_id=order_id, sku_after=run.fixture.exchange_sku
    )
    return await not_eligible(run, request, f"an exchange of undelivered order {order_id}")


def return_checks() -> list[Check]:
    """The exact return and exchange, then the ones they must refuse."""
    return [
        action_return_preview_exact,
        action_return_not_eligible,
        action_exchange_preview_exact,
        action_exchange_not_eligible,
    ]

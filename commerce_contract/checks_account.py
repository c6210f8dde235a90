"""The checks of ``change_default_address``, the one action on the customer's account rather than an order:
the proposal states the account's current default address and version, the requested one after, no money
and no order, under the directory's rule; asking for the address the account has already is refused before
anyone is asked. The kit previews, never executes, so the account keeps its address between runs."""

from __future__ import annotations

from commerce_contract.checks_actions import KIT_ADDRESS, not_eligible, previewed, required_rule
from commerce_contract.checks_refunds import Check
from commerce_contract.context import CheckFailed, Run, fresh_case_id
from contracts.action_policy import ActionKind
from contracts.actions import ActionRequest

DEFAULT_ADDRESS = ActionKind.CHANGE_DEFAULT_ADDRESS


async def action_default_address_preview_exact(run: Run) -> str:
    rule = required_rule(run, DEFAULT_ADDRESS)
    proposal = await previewed(run, None, DEFAULT_ADDRESS, address=KIT_ADDRESS)
    effect = proposal.effect
    if (effect.order_id, effect.address_after, effect.refund_cents) != (None, KIT_ADDRESS, 0):
        raise CheckFailed(f"the default address change's effect {effect} is not the kit's address on the account, free")
    if effect.account_version is None or effect.address_before in (None, KIT_ADDRESS):
        raise CheckFailed("the effect does not state the account's version and its current default address")
    if proposal.customer != run.customer.subject or proposal.tenant != run.customer.tenant:
        raise CheckFailed(f"the proposal changes {proposal.customer}'s account, not the signed-in customer's")
    if proposal.rule != rule or proposal.computed_digest() != proposal.digest:
        raise CheckFailed("the proposal states another rule, or its digest does not recompute")
    return (
        f"the account's default address (version {effect.account_version}) to the kit's, free, no order touched, "
        "the current address stated; digest recomputes"
    )


async def action_default_address_not_eligible(run: Run) -> str:
    required_rule(run, DEFAULT_ADDRESS)
    current = (await previewed(run, None, DEFAULT_ADDRESS, address=KIT_ADDRESS)).effect.address_before
    if current is None:
        raise CheckFailed("the default address change states no current address")
    request = ActionRequest(kind=DEFAULT_ADDRESS, case_id=fresh_case_id(), address=current)
    return await not_eligible(run, request, "a change to the account's current default address")


def account_checks() -> list[Check]:
    return [action_default_address_preview_exact, action_default_address_not_eligible]

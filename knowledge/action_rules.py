"""The executable rules of the actions: pure functions of the request and the order as the commerce
server reads it.

Each rule states the effect of one action kind exactly (status, money, destination, address) or refuses it
with a sentence naming the policy it follows; it never takes an amount from anyone. The commerce server
computes a proposal with it and computes it again before executing; a client may run it to check a
proposal it was given.
"""

from __future__ import annotations

from collections.abc import Callable

from contracts.action_policy import ActionKind
from contracts.actions import ActionEffect, ActionRequest, Address, RefundDestination
from contracts.commerce import Order, OrderStatus
from contracts.errors import CommerceErrorCode, SupportError, error_from_code

CANCEL_PAGES = ("DELIVERY:p01", "INVOICES:p02")
"""DELIVERY p01: a processing order may be cancelled by its account holder, the payment returned in full,
delivery charge included, to the original payment method; once shipped it cannot. INVOICES p02: the
invoice of an order cancelled before shipping is void."""
ADDRESS_PAGES = ("DELIVERY:p01", "DELIVERY:p03")
"""DELIVERY p01 and p03: the account holder may change the delivery address free of charge until the
order ships; after that it can no longer be changed in the merchant's system."""


def cancellation_effect(request: ActionRequest, order: Order, address: Address | None) -> ActionEffect:
    """Cancelling ``order``: from processing to cancelled, everything paid (items and delivery, less any
    refund already made) back to the original payment method, the invoice void."""
    if order.status is not OrderStatus.PROCESSING:
        raise _not_eligible(
            f"Only an order that is still processing can be cancelled (DELIVERY p01); this one is {order.status}."
        )
    returned = order.paid_items_cents + order.freight_cents - order.refunded_cents
    return ActionEffect(
        order_id=order.order_id,
        order_version=order.version,
        status_before=order.status,
        status_after=OrderStatus.CANCELLED,
        refund_cents=max(returned, 0),
        currency=order.currency,
        refund_to=RefundDestination.ORIGINAL_PAYMENT_METHOD,
        invoice_void=True,
        policy_pages=CANCEL_PAGES,
    )


def address_change_effect(request: ActionRequest, order: Order, address: Address | None) -> ActionEffect:
    """Sending ``order`` to ``request.address`` instead: only before it ships, free of charge."""
    if request.address is None:
        raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, "An address change names the new address.")
    if order.status is not OrderStatus.PROCESSING:
        raise _not_eligible(
            "The delivery address can only be changed before the order ships (DELIVERY p03); "
            f"this one is {order.status}."
        )
    if request.address == address:
        raise _not_eligible("The order is already going to this address.")
    return ActionEffect(
        order_id=order.order_id,
        order_version=order.version,
        status_before=order.status,
        status_after=order.status,
        refund_cents=0,
        currency=order.currency,
        address_before=address,
        address_after=request.address,
        policy_pages=ADDRESS_PAGES,
    )


Rule = Callable[[ActionRequest, Order, Address | None], ActionEffect]

RULES: dict[ActionKind, Rule] = {
    ActionKind.CANCEL_ORDER: cancellation_effect,
    ActionKind.CHANGE_ORDER_ADDRESS: address_change_effect,
}
"""The rule of each action kind (every :class:`ActionKind` has one)."""


def action_effect(request: ActionRequest, order: Order, address: Address | None) -> ActionEffect:
    """The effect of ``request`` on ``order`` (whose delivery address is ``address``), or the refusal."""
    return RULES[request.kind](request, order, address)


def request_of(kind: ActionKind, case_id: str, effect: ActionEffect) -> ActionRequest:
    """The request a proposal with ``effect`` answered (to compute its effect again before executing)."""
    return ActionRequest(kind=kind, case_id=case_id, order_id=effect.order_id, address=effect.address_after)


def _not_eligible(message: str) -> SupportError:
    return error_from_code(CommerceErrorCode.ACTION_NOT_ELIGIBLE, message)

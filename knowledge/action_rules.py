"""The executable rules of the actions: pure functions of the order as the commerce server reads it.

Each rule states the effect of one action kind exactly (status, money, destination) or refuses it with
a sentence naming the policy it follows; it never takes an amount from anyone. The commerce server
computes a proposal with it and computes it again before executing; a client may run it to check a
proposal it was given.
"""

from __future__ import annotations

from contracts.action_policy import ActionKind
from contracts.actions import ActionEffect, RefundDestination
from contracts.commerce import Order, OrderStatus
from contracts.errors import CommerceErrorCode, error_from_code

CANCEL_PAGES = ("DELIVERY:p01", "INVOICES:p02")
"""DELIVERY p01: a processing order may be cancelled by its account holder, the payment returned in full,
delivery charge included, to the original payment method; once shipped it cannot. INVOICES p02: the
invoice of an order cancelled before shipping is void."""


def cancellation_effect(order: Order) -> ActionEffect:
    """Cancelling ``order``: from processing to cancelled, everything paid (items and delivery, less any
    refund already made) back to the original payment method, the invoice void."""
    if order.status is not OrderStatus.PROCESSING:
        raise error_from_code(
            CommerceErrorCode.ACTION_NOT_ELIGIBLE,
            f"Only an order that is still processing can be cancelled (DELIVERY p01); this one is {order.status}.",
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


RULES = {ActionKind.CANCEL_ORDER: cancellation_effect}
"""The rule of each action kind (every :class:`ActionKind` has one)."""


def action_effect(kind: ActionKind, order: Order) -> ActionEffect:
    return RULES[kind](order)

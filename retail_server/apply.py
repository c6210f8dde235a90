"""Writing an executed proposal's effect into the retail tables: exactly what the effect states, nothing
computed again here (the rules computed it; the execution checked it still holds)."""

from __future__ import annotations

import json

from sqlalchemy import func
from sqlmodel import Session, select

from contracts.retail import RetailEffect
from retail_server.db import (
    RetailOrderItemRow,
    RetailOrderRow,
    RetailPaymentMethodRow,
    RetailPaymentRow,
    RetailUserRow,
)


def apply_effect(session: Session, effect: RetailEffect) -> None:
    """Write ``effect`` in the session's transaction; the caller commits."""
    user = session.get(RetailUserRow, effect.user_id)
    assert user is not None, "the execution read this customer"
    if effect.order_id is None:
        if effect.address_after is not None:
            for name, value in effect.address_after.model_dump().items():
                setattr(user, name, value)
        user.version += 1
        session.add(user)
        return
    order = session.get(RetailOrderRow, effect.order_id)
    assert order is not None, "the execution read this order"
    if effect.status_after is not None:
        order.status = effect.status_after
    if effect.cancel_reason is not None:
        order.cancel_reason = effect.cancel_reason
    if effect.address_after is not None:
        for name, value in effect.address_after.model_dump().items():
            setattr(order, name, value)
    if effect.return_items is not None:
        order.return_items_json = json.dumps(list(effect.return_items))
        order.return_payment_method_id = effect.return_payment_method_id
    if effect.exchange_items is not None:
        order.exchange_items_json = json.dumps(list(effect.exchange_items))
        order.exchange_new_items_json = json.dumps(list(effect.exchange_new_items or ()))
        order.exchange_payment_method_id = effect.exchange_payment_method_id
        order.exchange_price_difference_cents = effect.exchange_price_difference_cents
    for change in effect.item_changes:
        line = session.get(RetailOrderItemRow, (effect.order_id, change.position))
        assert line is not None and line.item_id == change.item_id_before, "the execution checked the order's version"
        line.item_id = change.item_id_after
        line.price_cents = change.price_after_cents
        line.options_json = json.dumps(change.options_after)
        session.add(line)
    if effect.payments_added:
        count = select(func.count()).select_from(RetailPaymentRow).where(RetailPaymentRow.order_id == effect.order_id)
        next_position = session.exec(count).one()
        for offset, payment in enumerate(effect.payments_added):
            session.add(
                RetailPaymentRow(
                    order_id=effect.order_id,
                    position=next_position + offset,
                    transaction_type=payment.transaction_type,
                    amount_cents=payment.amount_cents,
                    payment_method_id=payment.payment_method_id,
                )
            )
    for balance in effect.balance_changes:
        method = session.get(RetailPaymentMethodRow, (effect.user_id, balance.payment_method_id))
        assert method is not None and method.balance_cents == balance.before_cents, "checked by the user's version"
        method.balance_cents = balance.after_cents
        session.add(method)
    if effect.balance_changes:
        user.version += 1
        session.add(user)
    order.version += 1
    session.add(order)

"""The executable rules of the actions: functions of the request and the records the commerce server reads
for it (an order's, :class:`OrderRecords`, or the customer's account, :class:`AccountRecords`), and of
the configured knowledge's terms (the refund rule files, and :mod:`knowledge.action_terms` for the pages
each rule cites; each read once per knowledge location). A tenant whose terms name no page for an action
does not offer it.

Each rule states the effect of one action kind exactly (status, money, destination, address) or refuses it
with a sentence naming the policy it follows; it never takes an amount from anyone. The commerce server
computes a proposal with it and computes it again before executing; a client may run it to check a
proposal it was given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from contracts.action_policy import ActionKind
from contracts.actions import (
    ActionEffect,
    ActionRequest,
    Address,
    CustomerAccount,
    ExchangeTerms,
    RefundDestination,
    ReturnTerms,
)
from contracts.commerce import FIXTURE_AS_OF, Order, OrderStatus, ProductVariant
from contracts.errors import CommerceErrorCode, SupportError, error_from_code
from knowledge.action_terms import action_pages
from knowledge.refund_quote import calculate_refund_quote, refund_rules_for

MERCHANT_STAFF_ONLY = "This merchant's terms do not offer this through the service; a person will take it from here."


@dataclass(frozen=True)
class OrderRecords:
    """What an action's rule reads about one order of the customer."""

    order: Order
    address: Address | None = None
    """Where the order is delivered."""
    return_open: bool = False
    """A return or an exchange of the order's items is already open."""
    variants: tuple[ProductVariant, ...] = ()
    """The variants of the order's product as the catalogue states them (its own among them)."""
    policy_tenant: str | None = None
    """The tenant whose returns terms the order follows (the directory's ``policy_tenant``); None: its own."""
    as_of: date = FIXTURE_AS_OF
    """The day the returns window is counted to (the fixture world's today, as for the refund quote)."""
    page_versions: Mapping[str, str] = field(default_factory=dict)
    """The versions of the refund rule's pages in the server's knowledge base (``refund_order`` reads them,
    as ``quote_refund`` does: a page at another version than the rule's is refused)."""


@dataclass(frozen=True)
class AccountRecords:
    """What the account's own action reads: the signed-in customer's account record."""

    account: CustomerAccount
    policy_tenant: str | None = None
    """The tenant whose terms the account follows (the directory's ``policy_tenant``); None: its own."""


def terms_pages(tenant: str, kind: ActionKind) -> tuple[str, ...]:
    """The pages ``tenant``'s terms give ``kind`` (:mod:`knowledge.action_terms`); a tenant whose terms
    name none does not offer it here, whatever its policy in the directory allows."""
    pages = action_pages(tenant, kind)
    if not pages:
        raise _not_eligible(MERCHANT_STAFF_ONLY)
    return pages


def _said(page: str) -> str:
    return page.replace(":", " ")


def cancellation_effect(request: ActionRequest, records: OrderRecords) -> ActionEffect:
    """Cancelling the order: from processing to cancelled, everything paid (items and delivery, less any
    refund already made) back to the original payment method, the invoice void (qinghe: DELIVERY p01,
    INVOICES p02)."""
    order = records.order
    pages = terms_pages(records.policy_tenant or order.tenant, ActionKind.CANCEL_ORDER)
    if order.status is not OrderStatus.PROCESSING:
        raise _not_eligible(
            f"Only an order that is still processing can be cancelled ({_said(pages[0])}); this one is {order.status}."
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
        policy_pages=pages,
    )


def address_change_effect(request: ActionRequest, records: OrderRecords) -> ActionEffect:
    """Sending the order to ``request.address`` instead: only before it ships, free of charge (qinghe:
    DELIVERY p01, p03)."""
    order, address = records.order, records.address
    if request.address is None:
        raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, "An address change names the new address.")
    pages = terms_pages(records.policy_tenant or order.tenant, ActionKind.CHANGE_ORDER_ADDRESS)
    if order.status is not OrderStatus.PROCESSING:
        raise _not_eligible(
            f"The delivery address can only be changed before the order ships ({_said(pages[-1])}); "
            f"this one is {order.status}."
        )
    if request.address == address:
        raise _not_eligible("The order is already going to this address.")
    return _money_unmoved(order, pages, address_before=address, address_after=request.address)


def return_effect(request: ActionRequest, records: OrderRecords) -> ActionEffect:
    """Opening the return of the order's items under the returns terms its tenant follows: delivered, within
    the window counted from the delivery date, not custom-made or digital, not back already, no return or
    exchange open, something left to refund. Nothing is paid now: the refund is due once the warehouse
    checks the return in (RETURNS p02), and the order's status stays delivered."""
    order = records.order
    rules = refund_rules_for(records.policy_tenant or order.tenant)
    pages = (rules.window_page, rules.amount_page)
    _check_returnable(records, window_page=pages[0], exclusion_page=pages[1], what="returned")
    due = order.paid_items_cents - order.refunded_cents
    if due <= 0:
        raise _not_eligible(f"The items' paid amount has been refunded in full already ({pages[1]}).")
    return _money_unmoved(order, pages, return_opened=ReturnTerms(units=order.quantity, refund_due_cents=due))


def exchange_effect(request: ActionRequest, records: OrderRecords) -> ActionEffect:
    """Opening the exchange of the order's items for ``request.sku_after``: returnable as for a return (the
    same window, EXCHANGES p01), another available variant of the same product, every unit; the list-price
    difference per unit times the units, charged or refunded with the original payment method once the
    warehouse checks the items in (EXCHANGES p02). Nothing is paid now; the status stays delivered."""
    order = records.order
    if request.sku_after is None:
        raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, "An exchange names the variant wanted (sku_after).")
    pages = terms_pages(records.policy_tenant or order.tenant, ActionKind.EXCHANGE_ITEMS)
    _check_returnable(records, window_page=pages[0], exclusion_page=pages[0], what="exchanged")
    variants = {variant.sku: variant for variant in records.variants}
    before, after = variants.get(order.sku), variants.get(request.sku_after)
    if before is None or after is None or after.family != before.family:
        raise _not_eligible(f"{request.sku_after} is not another variant of the product on this order ({pages[0]}).")
    if after.sku == before.sku:
        raise _not_eligible(f"The order already holds {after.sku}.")
    if not after.available:
        raise _not_eligible(f"{after.sku} ({after.label_en}) is sold out and cannot be chosen ({pages[0]}).")
    swap = ExchangeTerms(
        sku_before=before.sku,
        sku_after=after.sku,
        units=order.quantity,
        difference_cents=(after.list_cents - before.list_cents) * order.quantity,
    )
    return _money_unmoved(order, pages, exchange_opened=swap)


def default_address_effect(request: ActionRequest, records: AccountRecords) -> ActionEffect:
    """Saving ``request.address`` as the account's default delivery address: at any time, free of charge,
    for the orders placed afterwards; no order already placed moves (qinghe: DELIVERY p03)."""
    account = records.account
    if request.address is None:
        raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, "A default address change names the new address.")
    pages = terms_pages(records.policy_tenant or account.tenant, ActionKind.CHANGE_DEFAULT_ADDRESS)
    if request.address == account.default_address:
        raise _not_eligible("This is the account's default delivery address already.")
    return ActionEffect(
        account_version=account.version,
        refund_cents=0,
        currency=account.currency,
        address_before=account.default_address,
        address_after=request.address,
        policy_pages=pages,
    )


def refund_effect(request: ActionRequest, records: OrderRecords) -> ActionEffect:
    """Refunding the order's paid items by the refund rule its tenant follows: exactly the quote
    ``quote_refund`` gives (delivered, inside the window, the return received, something left to refund,
    the policy pages at the rule's version), to the original payment method; the delivery charge is not
    refunded and the status stays delivered. A quote that is not eligible is refused with its reason."""
    order = records.order
    quote = calculate_refund_quote(
        order, page_versions=records.page_versions, as_of=records.as_of, policy_tenant=records.policy_tenant
    )
    if not quote.eligible:
        cited = f" ({', '.join(quote.citations)})" if quote.citations else ""
        raise _not_eligible(f"{quote.explanation_en.rstrip('.')}{cited}.")
    return ActionEffect(
        order_id=order.order_id,
        order_version=order.version,
        status_before=order.status,
        status_after=order.status,
        refund_cents=quote.amount_cents,
        currency=order.currency,
        refund_to=RefundDestination.ORIGINAL_PAYMENT_METHOD,
        policy_pages=tuple(quote.citations),
        quote_id=quote.quote_id,
    )


def _check_returnable(records: OrderRecords, *, window_page: str, exclusion_page: str, what: str) -> None:
    """What a return and an exchange both require of the order, under its tenant's returns window."""
    order = records.order
    follows = records.policy_tenant or order.tenant
    rules = refund_rules_for(follows)
    if follows != rules.tenant or follows in rules.manual_review_tenants:
        raise _not_eligible("This merchant's staff handle every return themselves; a person will take it from here.")
    if order.status is not OrderStatus.DELIVERED or order.delivered_on is None:
        raise _not_eligible(f"Only a delivered order can be {what} ({window_page}); this one is {order.status}.")
    if order.category.value in rules.excluded_categories:
        raise _not_eligible(f"Custom-made and digital goods cannot be {what} ({exclusion_page}).")
    days = (records.as_of - order.delivered_on).days
    if days > rules.window_days:
        raise _not_eligible(
            f"Delivered {days} days ago: outside the {rules.window_days}-day returns window ({window_page})."
        )
    if order.return_received:
        raise _not_eligible("The items are back at the warehouse already: what is left is the refund itself.")
    if records.return_open:
        raise _not_eligible("A return or an exchange of this order is open already.")


ORDER_RULES: dict[ActionKind, Callable[[ActionRequest, OrderRecords], ActionEffect]] = {
    ActionKind.CANCEL_ORDER: cancellation_effect,
    ActionKind.CHANGE_ORDER_ADDRESS: address_change_effect,
    ActionKind.RETURN_ITEMS: return_effect,
    ActionKind.EXCHANGE_ITEMS: exchange_effect,
    ActionKind.REFUND_ORDER: refund_effect,
}
ACCOUNT_RULES: dict[ActionKind, Callable[[ActionRequest, AccountRecords], ActionEffect]] = {
    ActionKind.CHANGE_DEFAULT_ADDRESS: default_address_effect,
}
"""The rule of each action kind this commerce server offers: an order's, or the account's. The kinds of
a catalogue with variants per product (``modify_order_items``, ``change_order_payment``) are offered by
the retail tenant's server (:mod:`retail_server`), not by this one."""


def action_effect(request: ActionRequest, records: OrderRecords | AccountRecords) -> ActionEffect:
    """The effect of ``request`` on the order or the account ``records`` describe, or the refusal."""
    if isinstance(records, AccountRecords):
        account_rule = ACCOUNT_RULES.get(request.kind)
        if account_rule is not None:
            return account_rule(request, records)
    else:
        order_rule = ORDER_RULES.get(request.kind)
        if order_rule is not None:
            return order_rule(request, records)
    if request.kind not in ORDER_RULES and request.kind not in ACCOUNT_RULES:
        raise error_from_code(
            CommerceErrorCode.INVALID_ARGUMENT, f"This commerce server does not offer {request.kind.value}."
        )
    raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, f"{request.kind.value} does not apply to these records.")


def request_of(kind: ActionKind, case_id: str, effect: ActionEffect) -> ActionRequest:
    """The request a proposal with ``effect`` answered (to compute its effect again before executing)."""
    exchange = effect.exchange_opened
    return ActionRequest(
        kind=kind,
        case_id=case_id,
        order_id=effect.order_id,
        address=effect.address_after,
        sku_after=exchange.sku_after if exchange else None,
    )


def _money_unmoved(order: Order, pages: tuple[str, ...], **change: Any) -> ActionEffect:
    """An effect that moves no money now and keeps the order's status: ``change`` says what it does."""
    return ActionEffect(
        order_id=order.order_id,
        order_version=order.version,
        status_before=order.status,
        status_after=order.status,
        refund_cents=0,
        currency=order.currency,
        policy_pages=pages,
        **change,
    )


def _not_eligible(message: str) -> SupportError:
    return error_from_code(CommerceErrorCode.ACTION_NOT_ELIGIBLE, message)

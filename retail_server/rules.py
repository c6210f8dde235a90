"""The retail policy's rules as deterministic checks: what each write would change, computed from the
server's own records, or the refusal, quoting the sentence of the merchant's policy it enforces.

The policy is τ²-bench's retail ``policy.md``; each :class:`Rule` quotes it. Where τ²-bench's tools
check less than the policy says, these rules follow the policy (docs/evaluation.md lists each
difference): an order's address or payment changes only while its status is exactly ``pending``, so
nothing is modified after its items were ("The agent will not be able to modify or cancel the order
anymore"); and every line of a multi-line item change takes its own variant's price and options. An
item change needs another variant; an exchange may also be for the same variant (a replacement), as
the benchmark's tool and its gold calls allow. Money is exact cents. Pure: no database, no clock.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

from contracts.errors import CommerceErrorCode, SupportError, error_from_code
from contracts.retail import (
    CANCEL_REASONS,
    BalanceChange,
    ItemChange,
    Payment,
    PolicyCitation,
    RetailAddress,
    RetailEffect,
)
from retail_server import tau2_format as t2
from retail_server.tau2_format import cents


class Rule(StrEnum):
    """Each rule, by name; :data:`POLICY` quotes the policy sentence it enforces."""

    PENDING_TO_CANCEL = "pending_to_cancel"
    CANCEL_REASON = "cancel_reason"
    CANCEL_REFUND = "cancel_refund"
    PENDING_TO_MODIFY = "pending_to_modify"
    ITEMS_ONCE = "items_once"
    SAME_PRODUCT = "same_product"
    GIFT_CARD_COVERS_DIFFERENCE = "gift_card_covers_difference"
    ONE_OTHER_PAYMENT_METHOD = "one_other_payment_method"
    GIFT_CARD_COVERS_TOTAL = "gift_card_covers_total"
    DELIVERED_TO_RETURN = "delivered_to_return"
    REFUND_DESTINATION = "refund_destination"
    DELIVERED_TO_EXCHANGE = "delivered_to_exchange"
    OWN_PAYMENT_METHOD = "own_payment_method"
    DEFAULT_ADDRESS = "default_address"


POLICY: dict[Rule, str] = {
    Rule.PENDING_TO_CANCEL: "An order can only be cancelled if its status is 'pending'.",
    Rule.CANCEL_REASON: (
        "The user needs to confirm the order id and the reason (either 'no longer needed' or 'ordered by "
        "mistake') for cancellation. Other reasons are not acceptable."
    ),
    Rule.CANCEL_REFUND: (
        "After user confirmation, the order status will be changed to 'cancelled', and the total will be "
        "refunded via the original payment method immediately if it is gift card, otherwise in 5 to 7 "
        "business days."
    ),
    Rule.PENDING_TO_MODIFY: "An order can only be modified if its status is 'pending'.",
    Rule.ITEMS_ONCE: (
        "This action can only be called once, and will change the order status to 'pending (items "
        "modifed)'. The agent will not be able to modify or cancel the order anymore."
    ),
    Rule.SAME_PRODUCT: (
        "Each item can be modified to an available new item of the same product but of different product "
        "option. There cannot be any change of product types, e.g. modify shirt to shoe."
    ),
    Rule.GIFT_CARD_COVERS_DIFFERENCE: (
        "If the user provides a gift card, it must have enough balance to cover the price difference."
    ),
    Rule.ONE_OTHER_PAYMENT_METHOD: (
        "The user can only choose a single payment method different from the original payment method."
    ),
    Rule.GIFT_CARD_COVERS_TOTAL: (
        "If the user wants the modify the payment method to gift card, it must have enough balance to cover "
        "the total amount."
    ),
    Rule.DELIVERED_TO_RETURN: "An order can only be returned if its status is 'delivered'.",
    Rule.REFUND_DESTINATION: "The refund must either go to the original payment method, or an existing gift card.",
    Rule.DELIVERED_TO_EXCHANGE: "An order can only be exchanged if its status is 'delivered'.",
    Rule.OWN_PAYMENT_METHOD: (
        "The user must provide a payment method to pay or receive refund of the price difference."
    ),
    Rule.DEFAULT_ADDRESS: "As a retail agent, you can help users modify their default user address.",
}
PENDING = "pending"
ITEMS_MODIFIED = "pending (item modified)"
"""The status τ²-bench's database writes after an item change (its policy's text spells it otherwise)."""
DELIVERED = "delivered"


@dataclass(frozen=True)
class Catalogue:
    """The variants a rule may change items to: each item id's product, availability, price and options."""

    variants: dict[str, tuple[str, bool, int, dict[str, str]]]


def cite(*rules: Rule) -> tuple[PolicyCitation, ...]:
    return tuple(PolicyCitation(rule=rule.value, policy=POLICY[rule]) for rule in rules)


def refuse(rule: Rule, message: str) -> SupportError:
    """``action_not_eligible``: the message, then the policy's sentence it rests on."""
    return error_from_code(CommerceErrorCode.ACTION_NOT_ELIGIBLE, f"{message} The policy: \u201c{POLICY[rule]}\u201d")


def _order_effect(order: t2.Order, user: t2.User, user_version: int, order_version: int) -> dict[str, object]:
    return {
        "order_id": order.order_id,
        "order_version": order_version,
        "user_id": user.user_id,
        "user_version": user_version,
        "status_before": order.status,
    }


def _method(user: t2.User, payment_method_id: str) -> t2.PaymentMethod:
    method = user.payment_methods.get(payment_method_id)
    if method is None:
        raise refuse(Rule.OWN_PAYMENT_METHOD, f"{payment_method_id} is not one of the customer's payment methods.")
    return method


def _balance_change(method: t2.PaymentMethod, delta_cents: int) -> tuple[BalanceChange, ...]:
    if method.source != "gift_card" or method.balance is None:
        return ()
    before = cents(method.balance)
    return (BalanceChange(payment_method_id=method.id, before_cents=before, after_cents=before + delta_cents),)


def _require_status(order: t2.Order, status: str, rule: Rule) -> None:
    if order.status != status:
        raise refuse(rule, f"Order {order.order_id} is {order.status!r}.")


def _require_items(order: t2.Order, item_ids: list[str]) -> None:
    held = Counter(item.item_id for item in order.items)
    for item_id, wanted in Counter(item_ids).items():
        if wanted > held[item_id]:
            raise error_from_code(
                CommerceErrorCode.INVALID_ARGUMENT, f"Order {order.order_id} holds no (further) item {item_id}."
            )
    if not item_ids:
        raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, "Name at least one item of the order.")


def cancel(order: t2.Order, user: t2.User, versions: tuple[int, int], reason: str) -> RetailEffect:
    _require_status(order, PENDING, Rule.PENDING_TO_CANCEL)
    if reason not in CANCEL_REASONS:
        raise refuse(Rule.CANCEL_REASON, f"{reason!r} is not a reason the policy accepts.")
    payments = tuple(
        Payment(transaction_type="refund", amount_cents=cents(p.amount), payment_method_id=p.payment_method_id)
        for p in order.payment_history
    )
    balances: dict[str, BalanceChange] = {}
    for payment in payments:
        method = _method(user, payment.payment_method_id)
        if method.source == "gift_card" and method.balance is not None:
            earlier = balances.get(method.id)
            before = earlier.before_cents if earlier else cents(method.balance)
            after = (earlier.after_cents if earlier else before) + payment.amount_cents
            balances[method.id] = BalanceChange(payment_method_id=method.id, before_cents=before, after_cents=after)
    return RetailEffect(
        **_order_effect(order, user, *versions),  # type: ignore[arg-type]
        status_after="cancelled",
        cancel_reason=reason,
        payments_added=payments,
        balance_changes=tuple(balances.values()),
        refund_cents=sum(p.amount_cents for p in payments),
        policy=cite(Rule.PENDING_TO_CANCEL, Rule.CANCEL_REASON, Rule.CANCEL_REFUND),
    )


def change_order_address(
    order: t2.Order, user: t2.User, versions: tuple[int, int], address: RetailAddress
) -> RetailEffect:
    _require_status(order, PENDING, Rule.PENDING_TO_MODIFY)
    return RetailEffect(
        **_order_effect(order, user, *versions),  # type: ignore[arg-type]
        status_after=order.status,
        address_before=order.address,
        address_after=address,
        policy=cite(Rule.PENDING_TO_MODIFY),
    )


def _item_changes(
    order: t2.Order, item_ids: list[str], new_item_ids: list[str], catalogue: Catalogue, *, allow_same: bool
) -> tuple[ItemChange, ...]:
    _require_items(order, item_ids)
    if len(item_ids) != len(new_item_ids):
        raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, "Name one new item for each item changed.")
    taken: set[int] = set()
    changes = []
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        position = next(i for i, item in enumerate(order.items) if item.item_id == item_id and i not in taken)
        taken.add(position)
        item = order.items[position]
        if new_item_id == item_id and not allow_same:
            raise refuse(Rule.SAME_PRODUCT, f"Item {item_id} would change to itself.")
        variant = catalogue.variants.get(new_item_id)
        if variant is None or variant[0] != item.product_id:
            raise refuse(Rule.SAME_PRODUCT, f"{new_item_id} is no variant of the product of item {item_id}.")
        _, available, price_cents, options = variant
        if not available:
            raise refuse(Rule.SAME_PRODUCT, f"Variant {new_item_id} is not available.")
        changes.append(
            ItemChange(
                position=position,
                item_id_before=item_id,
                item_id_after=new_item_id,
                price_before_cents=cents(item.price),
                price_after_cents=price_cents,
                options_after=options,
            )
        )
    return tuple(changes)


def _difference(changes: tuple[ItemChange, ...]) -> int:
    return sum(change.price_after_cents - change.price_before_cents for change in changes)


def _covers(method: t2.PaymentMethod, amount_cents: int, rule: Rule) -> None:
    if method.source == "gift_card" and cents(method.balance or 0.0) < amount_cents:
        raise refuse(rule, f"Gift card {method.id} holds too little for {amount_cents / 100:.2f}.")


@dataclass(frozen=True)
class ItemSwap:
    """What an item change or an exchange asks: these lines, for these variants, the difference settled
    through this payment method."""

    item_ids: list[str]
    new_item_ids: list[str]
    payment_method_id: str


def _priced(
    order: t2.Order, user: t2.User, swap: ItemSwap, catalogue: Catalogue, *, allow_same: bool
) -> tuple[tuple[ItemChange, ...], int, t2.PaymentMethod]:
    """The lines changed, the price difference (above 0: the customer pays it) and the method settling it,
    which must be the customer's own and, a gift card, cover it."""
    changes = _item_changes(order, swap.item_ids, swap.new_item_ids, catalogue, allow_same=allow_same)
    difference = _difference(changes)
    method = _method(user, swap.payment_method_id)
    _covers(method, difference, Rule.GIFT_CARD_COVERS_DIFFERENCE)
    return changes, difference, method


def modify_items(
    order: t2.Order, user: t2.User, versions: tuple[int, int], swap: ItemSwap, catalogue: Catalogue
) -> RetailEffect:
    if order.status == ITEMS_MODIFIED:
        raise refuse(Rule.ITEMS_ONCE, f"The items of order {order.order_id} were modified already.")
    _require_status(order, PENDING, Rule.PENDING_TO_MODIFY)
    changes, difference, method = _priced(order, user, swap, catalogue, allow_same=False)
    payment = Payment(
        transaction_type="payment" if difference > 0 else "refund",
        amount_cents=abs(difference),
        payment_method_id=swap.payment_method_id,
    )
    return RetailEffect(
        **_order_effect(order, user, *versions),  # type: ignore[arg-type]
        status_after=ITEMS_MODIFIED,
        item_changes=changes,
        payments_added=(payment,),
        balance_changes=_balance_change(method, -difference),
        refund_cents=max(0, -difference),
        charge_cents=max(0, difference),
        policy=cite(
            Rule.PENDING_TO_MODIFY,
            Rule.ITEMS_ONCE,
            Rule.SAME_PRODUCT,
            Rule.OWN_PAYMENT_METHOD,
            Rule.GIFT_CARD_COVERS_DIFFERENCE,
        ),
    )


def change_payment(order: t2.Order, user: t2.User, versions: tuple[int, int], payment_method_id: str) -> RetailEffect:
    _require_status(order, PENDING, Rule.PENDING_TO_MODIFY)
    history = order.payment_history
    if len(history) != 1 or history[0].transaction_type != "payment":
        raise refuse(Rule.ONE_OTHER_PAYMENT_METHOD, f"Order {order.order_id} was not paid with one payment.")
    original = history[0]
    if original.payment_method_id == payment_method_id:
        raise refuse(Rule.ONE_OTHER_PAYMENT_METHOD, f"{payment_method_id} already pays order {order.order_id}.")
    method = _method(user, payment_method_id)
    amount = cents(original.amount)
    _covers(method, amount, Rule.GIFT_CARD_COVERS_TOTAL)
    old_method = _method(user, original.payment_method_id)
    return RetailEffect(
        **_order_effect(order, user, *versions),  # type: ignore[arg-type]
        status_after=order.status,
        payments_added=(
            Payment(transaction_type="payment", amount_cents=amount, payment_method_id=payment_method_id),
            Payment(transaction_type="refund", amount_cents=amount, payment_method_id=original.payment_method_id),
        ),
        balance_changes=_balance_change(method, -amount) + _balance_change(old_method, amount),
        refund_cents=amount,
        charge_cents=amount,
        policy=cite(Rule.PENDING_TO_MODIFY, Rule.ONE_OTHER_PAYMENT_METHOD, Rule.GIFT_CARD_COVERS_TOTAL),
    )


def change_default_address(user: t2.User, user_version: int, address: RetailAddress) -> RetailEffect:
    return RetailEffect(
        user_id=user.user_id,
        user_version=user_version,
        address_before=user.address,
        address_after=address,
        policy=cite(Rule.DEFAULT_ADDRESS),
    )


def return_items(
    order: t2.Order, user: t2.User, versions: tuple[int, int], item_ids: list[str], payment_method_id: str
) -> RetailEffect:
    _require_status(order, DELIVERED, Rule.DELIVERED_TO_RETURN)
    method = _method(user, payment_method_id)
    original = order.payment_history[0].payment_method_id if order.payment_history else None
    if method.source != "gift_card" and payment_method_id != original:
        raise refuse(
            Rule.REFUND_DESTINATION, f"{payment_method_id} is neither the original payment method nor a gift card."
        )
    _require_items(order, item_ids)
    return RetailEffect(
        **_order_effect(order, user, *versions),  # type: ignore[arg-type]
        status_after="return requested",
        return_items=tuple(sorted(item_ids)),
        return_payment_method_id=payment_method_id,
        policy=cite(Rule.DELIVERED_TO_RETURN, Rule.REFUND_DESTINATION),
    )


def exchange_items(
    order: t2.Order, user: t2.User, versions: tuple[int, int], swap: ItemSwap, catalogue: Catalogue
) -> RetailEffect:
    _require_status(order, DELIVERED, Rule.DELIVERED_TO_EXCHANGE)
    _, difference, _ = _priced(order, user, swap, catalogue, allow_same=True)
    return RetailEffect(
        **_order_effect(order, user, *versions),  # type: ignore[arg-type]
        status_after="exchange requested",
        exchange_items=tuple(sorted(swap.item_ids)),
        exchange_new_items=tuple(sorted(swap.new_item_ids)),
        exchange_payment_method_id=swap.payment_method_id,
        exchange_price_difference_cents=difference,
        policy=cite(
            Rule.DELIVERED_TO_EXCHANGE, Rule.SAME_PRODUCT, Rule.OWN_PAYMENT_METHOD, Rule.GIFT_CARD_COVERS_DIFFERENCE
        ),
    )

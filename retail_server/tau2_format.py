"""τ²-bench's retail database format (its ``db.json``), read and written here: the file a load starts
from and the export its evaluator hashes. Dollars are floats there and integer cents everywhere else;
:func:`cents` and :func:`dollars` are the only crossings, and both are exact for the domain's amounts
(two decimals).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.retail import RetailAddress


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Variant(_Record):
    item_id: str
    options: dict[str, str]
    available: bool
    price: float


class Product(_Record):
    name: str
    product_id: str
    variants: dict[str, Variant]


class Name(_Record):
    first_name: str
    last_name: str


class PaymentMethod(_Record):
    source: Literal["credit_card", "gift_card", "paypal"]
    id: str
    brand: str | None = None
    last_four: str | None = None
    balance: float | None = None


class User(_Record):
    user_id: str
    name: Name
    address: RetailAddress
    email: str
    payment_methods: dict[str, PaymentMethod]
    orders: list[str]


class Fulfillment(_Record):
    tracking_id: list[str]
    item_ids: list[str]


class OrderItem(_Record):
    name: str
    product_id: str
    item_id: str
    price: float
    options: dict[str, str]


class OrderPayment(_Record):
    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class Order(_Record):
    order_id: str
    user_id: str
    address: RetailAddress
    items: list[OrderItem]
    status: str
    fulfillments: list[Fulfillment]
    payment_history: list[OrderPayment]
    cancel_reason: str | None = None
    exchange_items: list[str] | None = None
    exchange_new_items: list[str] | None = None
    exchange_payment_method_id: str | None = None
    exchange_price_difference: float | None = None
    return_items: list[str] | None = None
    return_payment_method_id: str | None = None


class RetailDatabase(_Record):
    products: dict[str, Product] = Field(default_factory=dict)
    users: dict[str, User] = Field(default_factory=dict)
    orders: dict[str, Order] = Field(default_factory=dict)


def cents(dollars: float) -> int:
    """A two-decimal dollar amount in cents (``54.04`` -> ``5404``)."""
    return round(dollars * 100)


def dollars(cents: int) -> float:
    """Cents back in dollars: the float nearest the two-decimal amount, as the domain's file writes it."""
    return cents / 100

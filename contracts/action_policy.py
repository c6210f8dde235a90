"""A tenant's policy for the writes the commerce server offers as actions: data in the directory, never
code. Pure: no files, no clock.

An action the tenant's policy does not name is denied (default deny), at the commerce server, which
refuses to preview or execute it, and in every client that reads the same directory. A named action has
one :class:`ActionRule`: who must agree before it runs (the customer, reviewers, or both), the caps
that bound it per customer, and how long its proposal holds.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ActionKind(StrEnum):
    """Every write the commerce server offers through the action contract (``preview_action`` then
    ``execute_action``). The refund is offered both ways: as ``refund_order`` here, and through its older
    pair (``quote_refund`` and ``execute_refund``) that cases of earlier builds, and tenants whose policy
    names no ``refund_order`` rule, still use; a case is paid at most once whichever way it goes."""

    CANCEL_ORDER = "cancel_order"
    """Cancel one of the customer's orders while it is still processing; everything paid goes back to
    the original payment method and the invoice is void (DELIVERY p01, INVOICES p02)."""
    CHANGE_ORDER_ADDRESS = "change_order_address"
    """Send one of the customer's orders that has not shipped yet to another address, free of charge
    (DELIVERY p01, p03)."""
    RETURN_ITEMS = "return_items"
    """Open the return of a delivered order's items, within the returns window and for goods the returns
    terms do not exclude: the items' paid amount goes back to the original payment method once the
    warehouse checks them in (RETURNS p02, p03). Every unit of the order line: a partial return is a person's
    decision (RETURNS p03)."""
    EXCHANGE_ITEMS = "exchange_items"
    """Open the exchange of a delivered order's items for another available variant of the same product,
    within the returns window: the list-price difference is charged to, or refunded to, the original
    payment method when the warehouse checks the items in (EXCHANGES p01, p02)."""
    CHANGE_DEFAULT_ADDRESS = "change_default_address"
    """Change the default delivery address saved on the customer's account, free of charge: orders placed
    afterwards use it, orders already placed keep theirs (DELIVERY p03). Bound to the account, not an order."""
    REFUND_ORDER = "refund_order"
    """Refund a delivered order's paid items once the return is back, within the returns window, by the
    refund rule the tenant follows (the same quote as ``quote_refund``: RETURNS p02, p03), to the original
    payment method. Never fewer reviewers than the tenant's refund approval policy asks."""

    MODIFY_ORDER_ITEMS = "modify_order_items"
    """Swap items of an order that has not been processed yet for other available variants of the same
    products, once per order; the price difference is charged to, or refunded to, a payment method of the
    customer's. Offered by a merchant server whose catalogue has variants per product (the ``retail``
    tenant's, :mod:`retail_server`), not by ours."""
    CHANGE_ORDER_PAYMENT = "change_order_payment"
    """Pay an order that has not been processed yet with another of the customer's payment methods: the
    new one is charged the order's total and the original one refunded (:mod:`retail_server`)."""

    @property
    def order_bound(self) -> bool:
        """Whether the action changes one of the customer's orders (every kind but the account's own)."""
        return self is not ActionKind.CHANGE_DEFAULT_ADDRESS


MAX_PROPOSAL_MINUTES = 7 * 24 * 60


class ActionRule(BaseModel):
    """Who must agree to one kind of action in one tenant, and its limits.

    ``reviewers`` distinct reviewers of the tenant approve an action that moves at least
    ``reviewers_from_cents`` (0: every one); the customer confirms it when ``customer_confirms``. The caps
    count the customer's executed actions of this kind over the last 24 hours and the money they moved
    over the last 30 days, this one included; None is no cap.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    customer_confirms: bool = True
    reviewers: int = Field(default=1, ge=0, le=2)
    reviewers_from_cents: int = Field(default=0, ge=0)
    max_per_customer_per_day: int | None = Field(default=None, ge=1, le=1000)
    max_cents_per_customer_per_30_days: int | None = Field(default=None, ge=1)
    expires_minutes: int = Field(default=30, ge=1, le=MAX_PROPOSAL_MINUTES)
    """How long a proposal holds: every confirmation and approval must be signed before then."""

    @model_validator(mode="after")
    def _someone_or_a_cap(self) -> ActionRule:
        if not self.customer_confirms and self.reviewers == 0 and self.max_per_customer_per_day is None:
            raise ValueError("an action nobody agrees to needs a daily cap (max_per_customer_per_day)")
        return self

    def cap_passed(self, kind: ActionKind, *, count_today: int, total_30_days: int, adding_cents: int) -> str | None:
        """The sentence saying which cap one more action of ``kind`` moving ``adding_cents`` would pass,
        given the customer's executed actions of the kind (``count_today``: over the last 24 hours;
        ``total_30_days``: the cents they moved over the last 30 days); None when it passes none."""
        if self.max_per_customer_per_day is not None and count_today + 1 > self.max_per_customer_per_day:
            return (
                f"The merchant allows {self.max_per_customer_per_day} {kind.value} a day per customer; "
                f"{count_today} were made in the last 24 hours."
            )
        cents_cap = self.max_cents_per_customer_per_30_days
        if cents_cap is not None and total_30_days + adding_cents > cents_cap:
            return (
                f"The merchant allows {cents_cap} cents of {kind.value} per customer in 30 days; "
                f"{total_30_days} were moved already and this one moves {adding_cents}."
            )
        return None

    def reviewers_required(self, amount_cents: int) -> int:
        """Distinct reviewers an action moving ``amount_cents`` needs."""
        return self.reviewers if amount_cents >= self.reviewers_from_cents else 0

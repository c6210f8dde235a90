"""The contract of the ``retail`` tenant's commerce server (:mod:`retail_server`): the τ²-bench retail
domain's tools by their names and argument shapes, over that domain's customers, orders and catalogue.

Its reads answer as τ²-bench's tools answer (the same JSON), but only for the signed-in customer. Its six
writes change nothing when called: each returns a :class:`RetailProposal`, the exact effect computed by
the server's own rules (:mod:`retail_server.rules`) with the policy sentences it rests on, who must
agree under the tenant's policy in the directory, an expiry and a digest. ``execute_retail_proposal``
executes it once, with the customer's confirmation over the digest (and the reviewers' approvals the
rule asks for), as :class:`contracts.actions.ActionExecution` does for our own server. Money is integer
cents here; τ²-bench's format (dollars as floats) is only spoken at the file boundary
(:mod:`retail_server.tau2_format`). Pure: no files, no clock.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import DIGEST_PATTERN, PROPOSAL_ID_PATTERN, Agreement
from contracts.commerce import canonical_digest
from contracts.frozen import FrozenModel

RETAIL_TENANT = "retail"
RETAIL_ORDER_ID = r"^#W[0-9]{7}$"
RETAIL_ITEM_ID = r"^[0-9]{10}$"
RETAIL_PAYMENT_METHOD_ID = r"^(credit_card|gift_card|paypal)_[0-9]{7}$"
CANCEL_REASONS = ("no longer needed", "ordered by mistake")


class RetailTool(StrEnum):
    """Every tool the retail server offers: τ²-bench's fifteen by their names, and the execution."""

    FIND_USER_ID_BY_EMAIL = "find_user_id_by_email"
    FIND_USER_ID_BY_NAME_ZIP = "find_user_id_by_name_zip"
    GET_USER_DETAILS = "get_user_details"
    GET_ORDER_DETAILS = "get_order_details"
    GET_PRODUCT_DETAILS = "get_product_details"
    LIST_ALL_PRODUCT_TYPES = "list_all_product_types"
    CALCULATE = "calculate"
    TRANSFER_TO_HUMAN_AGENTS = "transfer_to_human_agents"
    CANCEL_PENDING_ORDER = "cancel_pending_order"
    MODIFY_PENDING_ORDER_ADDRESS = "modify_pending_order_address"
    MODIFY_PENDING_ORDER_ITEMS = "modify_pending_order_items"
    MODIFY_PENDING_ORDER_PAYMENT = "modify_pending_order_payment"
    MODIFY_USER_ADDRESS = "modify_user_address"
    RETURN_DELIVERED_ORDER_ITEMS = "return_delivered_order_items"
    EXCHANGE_DELIVERED_ORDER_ITEMS = "exchange_delivered_order_items"
    EXECUTE_RETAIL_PROPOSAL = "execute_retail_proposal"

    @property
    def write(self) -> RetailWrite | None:
        """The write this tool proposes (None: a read, or the execution itself)."""
        return RetailWrite(self.value) if self.value in {write.value for write in RetailWrite} else None


class RetailWrite(StrEnum):
    """τ²-bench's six writes, each a proposal here, governed by the directory's rule for its action kind."""

    CANCEL_PENDING_ORDER = "cancel_pending_order"
    MODIFY_PENDING_ORDER_ADDRESS = "modify_pending_order_address"
    MODIFY_PENDING_ORDER_ITEMS = "modify_pending_order_items"
    MODIFY_PENDING_ORDER_PAYMENT = "modify_pending_order_payment"
    MODIFY_USER_ADDRESS = "modify_user_address"
    RETURN_DELIVERED_ORDER_ITEMS = "return_delivered_order_items"
    EXCHANGE_DELIVERED_ORDER_ITEMS = "exchange_delivered_order_items"

    @property
    def action_kind(self) -> ActionKind:
        """The action kind whose rule in the tenant's policy says who must agree (default deny)."""
        return _KINDS[self]


_KINDS = {
    RetailWrite.CANCEL_PENDING_ORDER: ActionKind.CANCEL_ORDER,
    RetailWrite.MODIFY_PENDING_ORDER_ADDRESS: ActionKind.CHANGE_ORDER_ADDRESS,
    RetailWrite.MODIFY_PENDING_ORDER_ITEMS: ActionKind.MODIFY_ORDER_ITEMS,
    RetailWrite.MODIFY_PENDING_ORDER_PAYMENT: ActionKind.CHANGE_ORDER_PAYMENT,
    RetailWrite.MODIFY_USER_ADDRESS: ActionKind.CHANGE_DEFAULT_ADDRESS,
    RetailWrite.RETURN_DELIVERED_ORDER_ITEMS: ActionKind.RETURN_ITEMS,
    RetailWrite.EXCHANGE_DELIVERED_ORDER_ITEMS: ActionKind.EXCHANGE_ITEMS,
}


class RetailAddress(FrozenModel):
    """An address as the retail domain writes it (τ²-bench's ``UserAddress``): data, never interpreted."""

    address1: str = Field(max_length=200)
    address2: str = Field(max_length=200)
    city: str = Field(max_length=100)
    country: str = Field(max_length=100)
    state: str = Field(max_length=100)
    zip: str = Field(max_length=20)


class PolicyCitation(FrozenModel):
    """One rule the server checked, and the sentence of the merchant's policy it enforces."""

    rule: str
    """The rule's name in :mod:`retail_server.rules` (``cancel_reason``)."""
    policy: str
    """The policy's own words (``policy.md``), quoted."""


class Payment(FrozenModel):
    """One entry the action adds to an order's payment history."""

    transaction_type: str = Field(pattern=r"^(payment|refund)$")
    amount_cents: int = Field(ge=0)
    payment_method_id: str


class BalanceChange(FrozenModel):
    """A gift card's balance before and after the action (gift cards are paid and refunded at once)."""

    payment_method_id: str
    before_cents: int
    after_cents: int


class ItemChange(FrozenModel):
    """One order line changed to another variant of the same product."""

    position: int = Field(ge=0)
    """The line's place in the order (the first line is 0)."""
    item_id_before: str
    item_id_after: str
    price_before_cents: int
    price_after_cents: int
    options_after: dict[str, str]


class RetailEffect(FrozenModel):
    """The exact change a retail write makes, computed by the server from its own records. What the
    records held when it was computed (``order_version``/``user_version``) must hold when it executes."""

    order_id: str | None = None
    order_version: int | None = None
    user_id: str
    user_version: int
    status_before: str | None = None
    status_after: str | None = None
    cancel_reason: str | None = None
    address_before: RetailAddress | None = None
    address_after: RetailAddress | None = None
    """The order's shipping address, or the customer's default address (``modify_user_address``)."""
    item_changes: tuple[ItemChange, ...] = ()
    payments_added: tuple[Payment, ...] = ()
    balance_changes: tuple[BalanceChange, ...] = ()
    return_items: tuple[str, ...] | None = None
    return_payment_method_id: str | None = None
    exchange_items: tuple[str, ...] | None = None
    exchange_new_items: tuple[str, ...] | None = None
    exchange_payment_method_id: str | None = None
    exchange_price_difference_cents: int | None = None
    """Above 0 the customer pays it, below 0 they are refunded it, when the exchange completes."""
    refund_cents: int = Field(default=0, ge=0)
    """Money this action sends back to the customer (cancellations, item changes, payment changes)."""
    charge_cents: int = Field(default=0, ge=0)
    """Money this action takes from the customer now (item changes to dearer variants, payment changes)."""
    policy: tuple[PolicyCitation, ...]


class RetailProposal(FrozenModel):
    """A retail write, proposed: what the customer confirms and reviewers approve. Its digest binds every
    field, the tool's own arguments included."""

    proposal_id: str = Field(pattern=PROPOSAL_ID_PATTERN)
    kind: RetailWrite
    arguments: dict[str, object]
    """The tool call's arguments as the caller sent them (checked): what τ²-bench's evaluator compares."""
    case_id: str
    tenant: str
    customer: str
    effect: RetailEffect
    rule: ActionRule
    requires: Agreement
    created_at: datetime
    expires_at: datetime
    digest: str = Field(pattern=DIGEST_PATTERN)

    def computed_digest(self) -> str:
        return canonical_digest(self.model_dump(mode="json", exclude={"digest"}))


class RetailReceipt(FrozenModel):
    """What the retail server states it did, signed with the commerce key (``signature``), with the record
    the write changed as τ²-bench's tool returns it (``result``: the order, or the customer)."""

    receipt_id: str
    proposal_id: str
    kind: RetailWrite
    case_id: str
    digest: str
    agreed_by: tuple[str, ...]
    executed_at: datetime
    refund_cents: int
    charge_cents: int
    result: dict[str, object]
    signature: str
    replay: bool = False

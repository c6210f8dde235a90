"""The action contract: every write beyond the refund is previewed, agreed and executed once.

``preview_action`` computes the exact effect of a requested action from the commerce server's own
records (never from the caller's numbers), evaluates the tenant's policy (:mod:`contracts.action_policy`)
and returns an :class:`ActionProposal`: the effect, the rule that applied, who must agree, an expiry
and a digest over all of it. ``execute_action`` takes the proposal's id and digest with the customer's
confirmation and the reviewers' approvals the rule asks for, re-checks everything, executes once in one
transaction and returns an :class:`ActionReceipt` signed with the commerce key.

Idempotency follows the Agentic Commerce Protocol (§6): an execution names an idempotency key; the same
key with the same body returns the original receipt marked ``replay``; the same key, or the same
proposal, with another body is ``idempotency_conflict``; a request whose twin is still running gets
``request_in_flight`` (transient, with a retry-after); a refusal is never recorded, so a corrected
request may follow under the same key. Pure: no files, no clock.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum

from pydantic import Field, SerializerFunctionWrapHandler, ValidationError, model_serializer, model_validator

from contracts.action_policy import ActionKind, ActionRule
from contracts.approval_claims import MAX_TOKEN_CHARS
from contracts.commerce import ORDER_ID_FORMAT, OrderStatus, ProposalOutcome, canonical_digest
from contracts.frozen import FrozenModel

CASE_ID_PATTERN = r"^[A-Za-z0-9_.:-]{4,80}$"
IDEMPOTENCY_KEY_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
PROPOSAL_ID_PATTERN = r"^AP-[0-9a-f]{24}$"
DIGEST_PATTERN = r"^[0-9a-f]{64}$"
MAX_APPROVALS = 2


class RefundDestination(StrEnum):
    ORIGINAL_PAYMENT_METHOD = "original_payment_method"


SINGLE_LINE = r"^[^\x00-\x1f\x7f]+$"
"""Text on one line, without control characters."""


class Address(FrozenModel):
    """A delivery address as the customer gives it: data, shown as text, never interpreted."""

    recipient: str = Field(min_length=1, max_length=80, pattern=SINGLE_LINE)
    phone: str = Field(pattern=r"^\+?[0-9][0-9 -]{5,19}$")
    line1: str = Field(min_length=1, max_length=120, pattern=SINGLE_LINE)
    city: str = Field(min_length=1, max_length=60, pattern=SINGLE_LINE)
    postcode: str = Field(pattern=r"^[0-9A-Za-z][0-9A-Za-z -]{1,9}$")
    country: str = Field(pattern=r"^[A-Z]{2}$")
    """ISO 3166-1 alpha-2 (``CN``)."""


class CustomerAccount(FrozenModel):
    """The customer's account record at the merchant, as the commerce server reads it for an action."""

    tenant: str
    customer: str
    default_address: Address
    """Where new orders are delivered unless the customer chooses another address."""
    currency: str
    version: int = Field(ge=1)


SKU_FORMAT = r"^[A-Z]{1,9}-[0-9]{2}$"
"""A product code (``LAMP-07``), as the catalogue and the product tool write it."""
SKU_IN_TEXT = re.compile(r"(?<![A-Za-z0-9-])([A-Z]{1,9}-[0-9]{2})(?![A-Za-z0-9-])")


def sku_in(text: str) -> str | None:
    """The one product code a customer's message names (the variant they want in exchange), read by code
    like the order id: None when there is none or more than one. They confirm it shown back in the proposal."""
    found = set(SKU_IN_TEXT.findall(text))
    return found.pop() if len(found) == 1 else None


ADDRESS_IN_TEXT = re.compile(r"\bto[:：]\s*([^\n]+?)\s*[.!。！]?\s*$", re.IGNORECASE | re.MULTILINE)
"""A new delivery address as a customer writes it: ``to: recipient, phone, street, city, postcode, country``."""
ADDRESS_FORMAT = "to: recipient, phone, street, city, postcode, country"


def address_in(text: str) -> Address | None:
    """The one new address a customer's message states in :data:`ADDRESS_IN_TEXT`'s form, read by code (a
    host fact, like the order id: the model never writes it), or None when there is none or it does not
    read as an address. The customer confirms it, shown back in the proposal, before anything changes."""
    found = ADDRESS_IN_TEXT.findall(text)
    if len(found) != 1:
        return None
    parts = [part.strip() for part in re.split(r"[,，]", found[0])]
    if len(parts) != 6:
        return None
    recipient, phone, line1, city, postcode, country = parts
    try:
        return Address(
            recipient=recipient, phone=phone, line1=line1, city=city, postcode=postcode, country=country.upper()
        )
    except ValidationError:
        return None


class ActionRequest(FrozenModel):
    """What a caller asks ``preview_action`` for: the kind and its arguments, never an amount."""

    kind: ActionKind
    case_id: str = Field(pattern=CASE_ID_PATTERN)
    order_id: str | None = Field(default=None, pattern=ORDER_ID_FORMAT)
    """The order the action changes: named for every order-bound kind, never for the account's own."""
    address: Address | None = None
    """The new address (``change_order_address`` and ``change_default_address`` only)."""
    sku_after: str | None = Field(default=None, pattern=SKU_FORMAT)
    """The variant to exchange the order's item for (``exchange_items`` only)."""
    expires_in_seconds: int | None = Field(default=None, ge=1, le=7 * 24 * 3600)
    """A shorter life than the policy's for this proposal (never a longer one); None: the policy's."""

    @model_validator(mode="after")
    def _order_as_the_kind_needs(self) -> ActionRequest:
        if self.kind.order_bound and self.order_id is None:
            raise ValueError(f"{self.kind.value} names the order it changes (order_id)")
        if not self.kind.order_bound and self.order_id is not None:
            raise ValueError(f"{self.kind.value} changes the customer's account, not an order: name no order_id")
        return self


class ReturnTerms(FrozenModel):
    """A return the action opens: which units go back, and what the customer gets for them, when."""

    units: int = Field(ge=1)
    """Every unit of the order line (a partial return is a person's decision, RETURNS p03)."""
    refund_due_cents: int = Field(ge=0)
    """The items' paid amount less anything already refunded, paid back once the warehouse checks the
    return in (RETURNS p02, p03); the delivery charge stays with the order."""
    refund_to: RefundDestination = RefundDestination.ORIGINAL_PAYMENT_METHOD


class ExchangeTerms(FrozenModel):
    """An exchange the action opens: which variant goes back, which comes out, and the price difference."""

    sku_before: str
    sku_after: str
    units: int = Field(ge=1)
    """Every unit of the order line (a partial exchange is a person's decision, EXCHANGES p01)."""
    difference_cents: int
    """The list-price difference for every unit: above 0 charged to the customer, below 0 refunded to them,
    settled with ``settle_with`` once the warehouse checks the items in (EXCHANGES p02)."""
    settle_with: RefundDestination = RefundDestination.ORIGINAL_PAYMENT_METHOD


class ActionEffect(FrozenModel):
    """The exact change an action makes, as the commerce server computed it from its own records: to one
    order (``order_id`` and its version and statuses) or to the customer's account (``account_version``)."""

    order_id: str | None = None
    order_version: int | None = None
    """The order's version when the effect was computed: executing needs it unchanged."""
    status_before: OrderStatus | None = None
    status_after: OrderStatus | None = None
    refund_cents: int = Field(ge=0)
    """Money returned to the customer by this action (0 when none)."""
    currency: str
    refund_to: RefundDestination | None = None
    invoice_void: bool = False
    address_before: Address | None = None
    address_after: Address | None = None
    """The order's delivery address, or the account's default one, before and after (address changes only)."""
    policy_pages: tuple[str, ...]
    """The policy passages the action's rule comes from (``DELIVERY:p01``)."""
    return_opened: ReturnTerms | None = None
    """The return this action opens (``return_items`` only)."""
    exchange_opened: ExchangeTerms | None = None
    """The exchange this action opens (``exchange_items`` only)."""
    account_version: int | None = None
    """The customer's account record's version when the effect was computed (``change_default_address``
    only): executing needs it unchanged."""
    quote_id: str | None = None
    """The refund rule's quote the amount comes from (``refund_order`` only): it binds the order's version,
    the rule's version and the amount, so a rule changed since the proposal changes the effect."""

    @model_validator(mode="after")
    def _one_record(self) -> ActionEffect:
        order = (self.order_id, self.order_version, self.status_before, self.status_after)
        if self.account_version is None and None in order:
            raise ValueError("an effect on an order names the order, its version and its statuses")
        if self.account_version is not None and order != (None, None, None, None):
            raise ValueError("an effect on the customer's account names no order")
        return self

    @property
    def target(self) -> str:
        """What the action changes, for a person reading it: the order's id, or ``account``."""
        return self.order_id or ACCOUNT_TARGET

    @model_serializer(mode="wrap")
    def _without_absent_later_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """The fields that were not in the first kinds' effects are left out of the dump when None, so the
        effects of the kinds that came before them, and their digests, read exactly as they were recorded."""
        dumped: dict[str, object] = handler(self)
        for name in OMITTED_WHEN_ABSENT:
            if dumped.get(name, ...) is None:
                del dumped[name]
        return dumped


ACCOUNT_TARGET = "account"
OMITTED_WHEN_ABSENT = (
    "order_id",
    "order_version",
    "status_before",
    "status_after",
    "return_opened",
    "exchange_opened",
    "account_version",
    "quote_id",
)
"""Every effect before ``change_default_address`` named its order; none named the fields after the first
kinds. Left out when None, so each earlier effect's JSON and digest stay byte for byte as recorded."""


class Agreement(FrozenModel):
    """Who must agree before the action runs, under the rule that applied to it."""

    customer: bool
    """The customer confirms, with a confirmation token over the proposal's digest."""
    reviewers: int = Field(ge=0, le=MAX_APPROVALS)
    """Distinct reviewers of the tenant who approve it, each with a signed approval over the digest."""


class ActionProposal(FrozenModel):
    """The exact proposal the customer confirms and reviewers approve. Its digest binds every field."""

    proposal_id: str = Field(pattern=PROPOSAL_ID_PATTERN)
    kind: ActionKind
    case_id: str
    tenant: str
    customer: str
    ledger_id: str
    effect: ActionEffect
    rule: ActionRule
    """The tenant's rule that applied when the proposal was made."""
    requires: Agreement
    created_at: datetime
    expires_at: datetime
    digest: str = Field(pattern=DIGEST_PATTERN)

    def computed_digest(self) -> str:
        """SHA-256 of the canonical JSON of every field but the digest itself."""
        return canonical_digest(self.model_dump(mode="json", exclude={"digest"}))


class ActionExecution(FrozenModel):
    """What a caller sends to ``execute_action``: which proposal, and everyone's agreement to it."""

    proposal_id: str = Field(pattern=PROPOSAL_ID_PATTERN)
    digest: str = Field(pattern=DIGEST_PATTERN)
    idempotency_key: str = Field(pattern=IDEMPOTENCY_KEY_PATTERN)
    confirmation_token: str | None = Field(default=None, min_length=1, max_length=MAX_TOKEN_CHARS)
    """The customer's confirmation (audience ``action-confirmation``) over the digest."""
    approval_tokens: tuple[str, ...] = Field(default=(), max_length=MAX_APPROVALS)
    """Reviewers' approval tokens over the digest, one per reviewer."""

    def body_digest(self) -> str:
        """The digest of the whole request: the same key with another body is a conflict."""
        return canonical_digest(self.model_dump(mode="json"))


class ActionClosure(FrozenModel):
    """What a case's host sends to ``close_action_proposal`` once its proposal was rejected, expired or
    withdrawn: from then on no agreement to it executes anything."""

    proposal_id: str = Field(pattern=PROPOSAL_ID_PATTERN)
    digest: str = Field(pattern=DIGEST_PATTERN)
    outcome: ProposalOutcome


class ActionReceipt(FrozenModel):
    """What the commerce server states it did, signed with the commerce key (``signature``)."""

    receipt_id: str
    proposal_id: str
    kind: ActionKind
    case_id: str
    order_id: str | None
    """The order changed (None: the customer's account was)."""
    digest: str
    refund_cents: int
    currency: str
    status_after: OrderStatus | None
    order_version_after: int | None
    agreed_by: tuple[str, ...]
    """The customer (when they confirmed) and each approving reviewer, by subject."""
    executed_at: datetime
    signature: str
    replay: bool = False
    """True when this is the answer to a repeated request: nothing was executed again."""
    account_version_after: int | None = None
    """The account record's version after a ``change_default_address`` (None for an order's action)."""

    @property
    def target(self) -> str:
        return self.order_id or ACCOUNT_TARGET

"""Commerce contracts: what the commerce MCP server returns and accepts.

All money is integer cents (CNY). Dates are ISO calendar dates; eligibility arithmetic uses the
fixture snapshot date, never a wall clock.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import date, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

ORDER_ID_FORMAT = r"^QH-\d{4}$"
"""What an order id looks like, whole."""

ORDER_ID_SCHEMA_PATTERN = r"^QH-[0-9]{4}$"
"""The same shape for JSON schemas sent to a model: ``[0-9]``, because grammar engines (llama.cpp)
mistranslate ``\\d``. Python matching keeps :data:`ORDER_ID_FORMAT`."""

ORDER_ID_IN_TEXT = re.compile(r"(?<![A-Za-z0-9_-])QH-[0-9]{4}(?![A-Za-z0-9_-])")
"""An order id standing on its own inside free text. Only ASCII letters, digits, ``_`` and ``-`` glue
onto an id: ``QH-10012``, ``ABCQH-1001`` and ``QH-1001-EXTRA`` contain no id, while ``请退款QH-1001并``
does (Chinese customers rarely put spaces around an id)."""

ORDER_ID_IN_TEXT_ANY_CASE = re.compile(r"(?<![A-Za-z0-9_-])[Qq][Hh]-[0-9]{4}(?![A-Za-z0-9_-])")
"""An order id standing on its own, in either case: customers write ``qh-1001`` too. It names the same
order as ``QH-1001`` (:func:`order_ids_in` returns ids in upper case)."""


def order_ids_in(text: str) -> list[str]:
    """Distinct order ids literally present in a text, in either case, upper-cased, in order of
    appearance (:data:`ORDER_ID_IN_TEXT_ANY_CASE`)."""
    return list(dict.fromkeys(found.upper() for found in ORDER_ID_IN_TEXT_ANY_CASE.findall(text)))


SCOPE_RESOURCE_URI = "commerce://scope"
"""The commerce server's read-only resource: what it covers, and the ``ledger_id`` of its database."""

FIXTURE_AS_OF = date(2026, 9, 12)
"""The fixture snapshot date: every eligibility computation uses it as "today"."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OrderStatus(StrEnum):
    PROCESSING = "processing"
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"


class ProductCategory(StrEnum):
    STANDARD = "standard"
    CUSTOM = "custom"
    DIGITAL = "digital"


class Product(_Frozen):
    sku: str
    name_en: str
    name_zh: str
    category: ProductCategory
    warranty_months: int


class ProductVariant(_Frozen):
    """One variant of a product family in the catalogue: what an exchange may swap an item for."""

    sku: str
    family: str
    """Variants of one product share it (``reading-lamp``); an exchange stays inside it."""
    label_en: str
    label_zh: str
    list_cents: int
    available: bool
    """On sale now: only an available variant can be chosen."""


class Order(_Frozen):
    """One order as the commerce server reports it to its owner."""

    order_id: str
    tenant: str
    customer: str
    sku: str
    category: ProductCategory
    status: OrderStatus
    quantity: int
    currency: str
    list_cents: int
    discount_cents: int
    paid_items_cents: int
    freight_cents: int
    refunded_cents: int
    delivered_on: date | None
    return_received: bool
    version: int
    ledger_id: str | None = None
    """The commerce database (ledger) this order was read from; see :class:`RefundProposal`."""


class OrderSummary(_Frozen):
    order_id: str
    sku: str
    status: OrderStatus
    paid_items_cents: int
    refunded_cents: int


class OrderList(_Frozen):
    """``list_orders``: the caller's own orders, sorted by order id."""

    orders: list[OrderSummary]


class ShipmentEvent(_Frozen):
    at: datetime
    code: str
    description_en: str
    description_zh: str


class Shipment(_Frozen):
    order_id: str
    carrier: str | None
    tracking_number: str | None
    status: OrderStatus
    events: list[ShipmentEvent]


class InvoiceState(StrEnum):
    ISSUED = "issued"
    VOID = "void"


class Invoice(_Frozen):
    invoice_id: str
    order_id: str
    state: InvoiceState
    paid_items_cents: int
    freight_cents: int
    total_cents: int
    currency: str
    issued_on: date


class Ticket(_Frozen):
    ticket_id: str
    order_id: str
    text: str
    idempotency_key: str
    created_at: datetime


class RefundQuote(_Frozen):
    """The result of the executable refund rule for one order at one as-of date.

    ``eligible`` is true only when the rule admits an automatic proposal; then ``reason`` is
    ``"eligible"`` and ``amount_cents`` is the refundable item balance. Otherwise ``amount_cents`` is
    zero and ``reason`` names the first failing check.
    """

    quote_id: str
    order_id: str
    order_version: int
    tenant: str
    rule_version: str
    as_of: date
    eligible: bool
    reason: str
    amount_cents: int
    currency: str
    paid_items_cents: int
    freight_cents: int
    refunded_cents: int
    delivered_on: date | None
    days_since_delivery: int | None
    window_days: int | None
    citations: list[str]
    explanation_en: str
    explanation_zh: str
    ledger_id: str | None = None
    """The ledger the order was read from (None only for quotes made before ledgers were bound)."""


class RefundProposal(_Frozen):
    """The exact proposal a human reviewer approves. Its digest binds every field.

    ``ledger_id`` binds the commerce database the quote was made on: a settlement that reaches another
    ledger (two workers on one task queue with separate databases) is refused, so an order can never
    be paid once per ledger. Proposals made before ledgers were bound carry None, which no commerce
    server accepts; their digest is computed without the field, as it was when they were made.
    """

    case_id: str
    applicant: str
    tenant: str
    order_id: str
    order_version: int
    rule_version: str
    amount_cents: int
    currency: str
    quote_id: str
    created_at: datetime
    expires_at: datetime
    ledger_id: str | None = None
    case_started_at: datetime | None = None
    """When Temporal recorded the case's start: the applicant token that pays must have held then
    (:mod:`contracts.case_start`). Proposals of releases that did not record it carry None and are
    digested without the field, as they were made."""

    def digest(self) -> str:
        fields = self.model_dump(mode="json")
        for optional in ("ledger_id", "case_started_at"):
            if fields[optional] is None:
                del fields[optional]
        return canonical_digest(fields)


class RefundApproval(_Frozen):
    """What the host sends to ``execute_refund`` after a reviewer approved a proposal."""

    approval_id: str = Field(min_length=8, max_length=200)
    proposal: RefundProposal
    digest: str = Field(min_length=64, max_length=64)
    reviewer: str
    approved_at: datetime
    approval_token: str | None = Field(default=None, max_length=4000)
    """The reviewer's signed approval (contracts.credentials): the only proof the server accepts."""
    co_approval_tokens: list[str] = Field(default_factory=list, max_length=3)
    """Further reviewers' signed approvals of the same proposal, where the tenant's approval policy
    (the commerce server's own copy of the directory) needs more than one reviewer."""
    applicant_token: str | None = Field(default=None, max_length=4000)
    """The issuer-signed applicant token the case started with: no case without one is ever paid."""


class ProposalOutcome(StrEnum):
    """How a proposal ended without being paid."""

    REJECTED = "rejected"
    EXPIRED = "expired"
    WITHDRAWN = "withdrawn"
    """The customer withdrew the request before it was approved."""


class ProposalClosure(_Frozen):
    """What the host sends to ``close_refund_proposal`` once a proposal was rejected or expired."""

    proposal: RefundProposal
    digest: str = Field(min_length=64, max_length=64)
    outcome: ProposalOutcome


class ProposalClosed(_Frozen):
    """The commerce server's answer: from ``closed_at`` on, every approval of ``case_id`` is refused."""

    case_id: str
    digest: str
    outcome: ProposalOutcome
    closed_at: datetime


class RefundReceipt(_Frozen):
    receipt_id: str
    approval_id: str
    order_id: str
    amount_cents: int
    currency: str
    digest: str
    order_version_after: int
    created_at: datetime
    simulated: bool = True
    signature: str | None = None
    """The receipt signed by the commerce server (contracts.credentials.ReceiptClaims)."""


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the form every digest is computed over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()

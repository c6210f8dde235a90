"""Test data of the refund case that many suites share: a policy passage, the quote of QH-1001 and a
refund proposal for it.

Each builder returns the one fixture value the suites agree on (QH-1001: 12,900 cents paid for the
item, 1,200 cents freight, delivered 7 days before the 2026-09-12 as-of date, inside the 30-day
window, citing RETURNS p02 and p03); a test names only the fields its own assertion is about.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from contracts.actions import Address
from contracts.commerce import FIXTURE_AS_OF, Order, RefundProposal, RefundQuote
from contracts.knowledge import Language, Passage
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.store import default_knowledge_base

COMMERCE_FIXTURE = Path(__file__).resolve().parents[1] / "commerce_server" / "fixtures" / "commerce.json"
"""The seeded commerce data: the orders the refund rule and the cards are tested on."""


def _fixture_orders() -> dict[str, Order]:
    data = json.loads(COMMERCE_FIXTURE.read_text(encoding="utf-8"))
    categories = {p["sku"]: p["category"] for p in data["products"]}
    fields = set(Order.model_fields)
    return {
        o["order_id"]: Order.model_validate(
            {**{k: v for k, v in o.items() if k in fields}, "category": categories[o["sku"]]}
        )
        for o in data["orders"]
    }


ORDERS = _fixture_orders()


def _default_addresses() -> dict[str, Address]:
    data = json.loads(COMMERCE_FIXTURE.read_text(encoding="utf-8"))
    return {account["customer"]: Address.model_validate(account["default_address"]) for account in data["accounts"]}


DEFAULT_ADDRESSES = _default_addresses()
"""Each fixture customer's default delivery address, as their account is seeded."""
"""The fixture's orders by id, as the commerce server reads them."""


def quote_packaged(order: Order, *, as_of: date = FIXTURE_AS_OF) -> RefundQuote:
    """The rule's quote of ``order`` against the packaged knowledge base's page versions on ``as_of``."""
    return calculate_refund_quote(
        order, as_of=as_of, page_versions=policy_page_versions(default_knowledge_base(), as_of=as_of)
    )


QUOTE_FIELDS: dict[str, Any] = {
    "quote_id": "Q-1",
    "order_id": "QH-1001",
    "order_version": 1,
    "tenant": "qinghe",
    "rule_version": "returns-2026-09",
    "as_of": date(2026, 9, 12),
    "eligible": True,
    "reason": "eligible",
    "amount_cents": 12900,
    "currency": "CNY",
    "paid_items_cents": 12900,
    "freight_cents": 1200,
    "refunded_cents": 0,
    "delivered_on": date(2026, 9, 5),
    "days_since_delivery": 7,
    "window_days": 30,
    "citations": ["RETURNS:p02", "RETURNS:p03"],
    "explanation_en": "Eligible.",
    "explanation_zh": "符合条件。",
}
"""The eligible quote of QH-1001 (:func:`refund_quote`)."""


def refund_quote(**changes: Any) -> RefundQuote:
    """The eligible quote of QH-1001 (:data:`QUOTE_FIELDS`), with ``changes``."""
    return RefundQuote(**(QUOTE_FIELDS | changes))


def ineligible_quote(reason: str = "outside_window", **changes: Any) -> RefundQuote:
    """The quote of QH-1001 when the rule refuses it: nothing to refund, ``reason`` says why."""
    return refund_quote(eligible=False, reason=reason, amount_cents=0, **changes)


def passage(
    passage_id: str = "RETURNS:p02:en:0",
    *,
    title: str = "Refund window",
    text: str = "...",
    doc_version: str = "2026-09",
    tenant: str = "qinghe",
) -> Passage:
    """The policy passage ``passage_id`` (``DOC:pNN:language:index``); its page, document and language
    are read from the id, so they always agree with it."""
    doc_id, page, language, _ = passage_id.split(":")
    return Passage(
        passage_id=passage_id,
        page_id=f"{doc_id}:{page}",
        doc_id=doc_id,
        doc_version=doc_version,
        tenant=tenant,
        language=Language(language),
        page_title=title,
        text=text,
    )


PROPOSAL_CREATED_AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def refund_proposal(
    *, created_at: datetime = PROPOSAL_CREATED_AT, expires_in: timedelta = timedelta(minutes=15), **changes: Any
) -> RefundProposal:
    """alice's proposal of the 12,900-cent refund of QH-1001 (quote ``Q-1``), open for ``expires_in``
    from ``created_at``, with ``changes``."""
    fields: dict[str, Any] = {
        "case_id": "case-1",
        "applicant": "alice",
        "tenant": "qinghe",
        "order_id": "QH-1001",
        "order_version": 1,
        "rule_version": "returns-2026-09",
        "amount_cents": 12900,
        "currency": "CNY",
        "quote_id": "Q-1",
        "created_at": created_at,
        "expires_at": created_at + expires_in,
    }
    return RefundProposal(**(fields | changes))

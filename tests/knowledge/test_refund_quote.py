"""The executable refund rule against every row of the SPEC §3 table."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import pytest

from contracts.commerce import FIXTURE_AS_OF
from knowledge import refund_quote
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.store import DOCUMENTS_DIR, KnowledgeBase, default_knowledge_base
from tests.case_data import COMMERCE_FIXTURE, ORDERS, quote_packaged

RULE_PAGES = {"RETURNS:p02": "2026-09", "RETURNS:p03": "2026-09"}


def knowledge_with_returns_version(directory: Path, version: str) -> KnowledgeBase:
    """The packaged documents, copied to ``directory`` with the RETURNS terms at another version."""
    for path in DOCUMENTS_DIR.glob("*.md"):
        text = path.read_text(encoding="utf-8")
        if path.stem == "RETURNS":
            assert 'version: "2026-09"' in text
            text = text.replace('version: "2026-09"', f'version: "{version}"', 1)
        (directory / path.name).write_text(text, encoding="utf-8")
    return KnowledgeBase.load(directory)


TABLE = [
    ("QH-1001", True, "eligible", 12900),
    ("QH-1002", True, "eligible", 17900),
    ("QH-1003", False, "outside_window", 0),
    ("QH-1004", False, "return_not_received", 0),
    ("QH-1005", False, "not_delivered", 0),
    ("QH-1006", False, "not_delivered", 0),
    ("QH-1007", False, "excluded_category", 0),
    ("QH-1008", False, "excluded_category", 0),
    ("QH-1009", True, "eligible", 8000),
    ("QH-1010", False, "already_refunded", 0),
    ("QH-1011", False, "not_delivered", 0),
    ("QH-1012", False, "outside_window", 0),
]


def test_fixture_has_24_orders_of_quantity_one_version_one() -> None:
    assert len(ORDERS) == 24
    assert all(o.quantity == 1 and o.version == 1 and o.currency == "CNY" for o in ORDERS.values())
    assert sorted(o.order_id for o in ORDERS.values() if o.customer == "alice") == [
        f"QH-10{n:02d}" for n in range(1, 13)
    ]


@pytest.mark.parametrize(("order_id", "eligible", "reason", "amount"), TABLE)
def test_quote_matches_the_spec_table(order_id: str, eligible: bool, reason: str, amount: int) -> None:
    quote = quote_packaged(ORDERS[order_id])
    assert (quote.eligible, quote.reason, quote.amount_cents) == (eligible, reason, amount)
    assert quote.rule_version == "returns-2026-09"
    assert quote.as_of == FIXTURE_AS_OF
    assert quote.citations == ["RETURNS:p02", "RETURNS:p03"]


def test_qh_1001_excludes_freight_and_does_not_subtract_the_discount_twice() -> None:
    order = ORDERS["QH-1001"]
    quote = quote_packaged(order)
    assert order.freight_cents == 1200 and order.discount_cents > 0
    assert quote.amount_cents == 12900 != order.paid_items_cents + order.freight_cents
    assert "12.00" in quote.explanation_en


def test_day_30_is_in_and_day_31_is_out() -> None:
    day30 = quote_packaged(ORDERS["QH-1002"])
    day31 = quote_packaged(ORDERS["QH-1003"])
    assert (day30.days_since_delivery, day30.eligible) == (30, True)
    assert (day31.days_since_delivery, day31.eligible, day31.reason) == (31, False, "outside_window")
    later = quote_packaged(ORDERS["QH-1002"], as_of=FIXTURE_AS_OF + timedelta(days=1))
    assert later.reason == "outside_window"


def test_other_customers_follow_the_pattern_and_south_needs_manual_review() -> None:
    assert quote_packaged(ORDERS["QH-2001"]).amount_cents == 12900
    south = quote_packaged(ORDERS["QH-3001"])
    assert (south.eligible, south.reason, south.amount_cents) == (False, "merchant_requires_manual_review", 0)
    assert south.citations == []


def test_quote_id_is_deterministic_and_bound_to_the_order_version() -> None:
    order = ORDERS["QH-1001"]
    first, second = quote_packaged(order), quote_packaged(order)
    bumped = quote_packaged(order.model_copy(update={"version": 2}))
    assert first.quote_id == second.quote_id != bumped.quote_id


def test_a_policy_page_version_mismatch_refuses_the_automatic_proposal(monkeypatch) -> None:
    rules = refund_quote.load_refund_rules().model_copy(update={"policy_version": "2026-10"})
    monkeypatch.setattr(refund_quote, "refund_rules_for", lambda tenant=None: rules)
    quote = quote_packaged(ORDERS["QH-1001"])
    assert (quote.eligible, quote.reason, quote.amount_cents) == (False, "policy_version_mismatch", 0)


def test_the_window_page_must_be_applicable_on_the_as_of_date() -> None:
    quote = quote_packaged(ORDERS["QH-1001"], as_of=date(2026, 8, 20))
    assert (quote.eligible, quote.reason) == (False, "policy_version_mismatch")
    assert policy_page_versions(default_knowledge_base(), as_of=date(2026, 8, 20)) == {}


def test_the_packaged_knowledge_base_has_both_rule_pages_at_the_rule_version() -> None:
    assert policy_page_versions(default_knowledge_base()) == RULE_PAGES
    explicit = calculate_refund_quote(ORDERS["QH-1001"], page_versions=RULE_PAGES)
    assert explicit == quote_packaged(ORDERS["QH-1001"])
    assert (explicit.eligible, explicit.amount_cents) == (True, 12900)


@pytest.mark.parametrize(
    "page_versions",
    [
        {"RETURNS:p02": "2026-09", "RETURNS:p03": "2026-10"},
        {"RETURNS:p02": "2026-10", "RETURNS:p03": "2026-09"},
        {"RETURNS:p02": "2026-09"},
        {},
    ],
)
def test_the_quote_checks_the_page_versions_it_is_given(page_versions: dict[str, str]) -> None:
    quote = calculate_refund_quote(ORDERS["QH-1001"], page_versions=page_versions)
    assert (quote.eligible, quote.reason, quote.amount_cents) == (False, "policy_version_mismatch", 0)
    assert quote.citations == ["RETURNS:p02", "RETURNS:p03"]


def test_the_page_versions_come_from_the_knowledge_base_passed_in(tmp_path: Path) -> None:
    knowledge = knowledge_with_returns_version(tmp_path, "2026-10")

    versions = policy_page_versions(knowledge)
    quote = calculate_refund_quote(ORDERS["QH-1001"], page_versions=versions)

    assert versions == {"RETURNS:p02": "2026-10", "RETURNS:p03": "2026-10"}
    assert (quote.eligible, quote.reason, quote.amount_cents) == (False, "policy_version_mismatch", 0)
    assert policy_page_versions(default_knowledge_base()) == RULE_PAGES  # the packaged one is untouched


def test_fixture_has_the_six_products_of_the_spec_and_the_variants_issue_48_added() -> None:
    data = json.loads(COMMERCE_FIXTURE.read_text(encoding="utf-8"))
    products = {p["sku"]: (p["category"], p["warranty_months"]) for p in data["products"]}
    assert products == {
        "DESK-01": ("standard", 12),
        "LAMP-02": ("standard", 12),
        "CABLE-03": ("standard", 6),
        "MUG-04": ("custom", 6),
        "EBOOK-05": ("digital", 0),
        "CASE-06": ("standard", 6),
        # other variants of the lamp and the desk stand, for exchanges (issue 48); no order holds one
        "LAMP-07": ("standard", 12),
        "LAMP-08": ("standard", 12),
        "DESK-09": ("standard", 12),
    }
    assert not {order["sku"] for order in data["orders"]} & {"LAMP-07", "LAMP-08", "DESK-09"}
    families = {v["sku"]: (v["family"], v["list_cents"], v["available"]) for v in data["variants"]}
    assert families == {
        "LAMP-02": ("reading-lamp", 17900, True),
        "LAMP-07": ("reading-lamp", 18900, True),
        "LAMP-08": ("reading-lamp", 17900, False),
        "DESK-01": ("desk-stand", 14900, True),
        "DESK-09": ("desk-stand", 16900, True),
    }
    assert data["fictional"] is True and data["as_of"] == "2026-09-12"


def test_invoice_totals_are_paid_items_plus_freight_and_void_for_the_cancelled_order() -> None:
    data = json.loads(COMMERCE_FIXTURE.read_text(encoding="utf-8"))
    invoices = {o["order_id"]: o["invoice"] for o in data["orders"]}
    assert all(i["total_cents"] == i["paid_items_cents"] + i["freight_cents"] for i in invoices.values())
    assert invoices["QH-1001"]["total_cents"] == 14100
    assert (invoices["QH-1011"]["state"], invoices["QH-1011"]["total_cents"]) == ("void", 0)

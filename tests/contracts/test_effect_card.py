"""The computed-effect card: figures from the quote and the records, data escaped for markdown."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from contracts.commerce import Invoice, InvoiceState
from contracts.effect_card import (
    CardDecision,
    effect_card,
    effect_rows,
    eligibility_reasons,
    markdown_text,
    money,
    order_item,
)
from tests.case_data import ORDERS, quote_packaged, refund_proposal
from tests.case_data import passage as policy_passage

ORDER = ORDERS["QH-1001"]
QUOTE = quote_packaged(ORDER)
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
PROPOSAL = refund_proposal(case_id="c1", quote_id=QUOTE.quote_id, created_at=NOW)


@pytest.mark.parametrize(
    ("cents", "shown"), [(12900, "CNY 129.00"), (5, "CNY 0.05"), (0, "CNY 0.00"), (-250, "CNY -2.50")]
)
def test_money_is_integer_arithmetic(cents: int, shown: str) -> None:
    assert money(cents, "CNY") == shown


def test_the_card_states_the_quote_and_the_order_record() -> None:
    passage = policy_passage("RETURNS:p02:en:0", title="Refund window")
    order = ORDER
    card = effect_card(PROPOSAL, "d" * 64, QUOTE, order=order, evidence={passage.passage_id: passage})
    assert card.amount == "12900 cents (CNY 129.00)"
    assert card.item == f"{ORDER.sku} × 1 ({ORDER.category.value})"
    assert [(p.page_id, p.title) for p in card.cited_pages] == [
        ("RETURNS:p02", "Refund window"),
        ("RETURNS:p03", "(not read in this case)"),
    ]
    assert card.reasons[0] == f"rule returns-2026-09: eligible (quote {QUOTE.quote_id}, as of {QUOTE.as_of})"
    assert card.reasons[1] == f"delivered {ORDER.delivered_on}, {QUOTE.days_since_delivery} days ago, window 30 days"
    assert "freight CNY 12.00 not refunded" in card.reasons[2]


def test_another_orders_record_never_names_the_item() -> None:
    assert order_item(ORDER.model_copy(update={"order_id": "QH-2001", "sku": "X"}), "QH-1001") is None
    assert order_item(None, "QH-1001") is None


def test_an_ineligible_quote_says_why() -> None:
    quote = QUOTE.model_copy(update={"eligible": False, "reason": "outside_window", "amount_cents": 0})
    assert eligibility_reasons(quote)[0].startswith("rule returns-2026-09: outside_window")


@pytest.mark.parametrize(
    "hostile",
    [
        "[click](http://evil.example)",
        "![x](http://evil.example/x.png)",
        "<img src=x onerror=alert(1)>",
        "**bold** _em_ `code`",
        "see www.evil.example now",
        "line one\n# heading\n| a | b |",
    ],
)
def test_data_never_becomes_markup(hostile: str) -> None:
    shown = markdown_text(hostile)
    assert "\n" not in shown
    assert re.search(r"(?<!\\)[\[\]()<>*`!_:.#|]", shown) is None  # every markup character is escaped
    assert shown.replace("\\", "") == " ".join(hostile.split())


def test_long_text_is_cut() -> None:
    assert len(markdown_text("a" * 500, limit=50)) == 50


def _rows(card) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for row in effect_rows(card):
        rows.setdefault(row.label, []).append(row.text)
    return rows


def test_the_card_shows_the_invoice_total_the_warehouse_receipt_and_the_decision() -> None:
    order = ORDER
    waiting = effect_card(PROPOSAL, "d" * 64, QUOTE, order=order, evidence={})
    rows = _rows(waiting)
    assert rows["invoice"] == ["total 14100 cents (CNY 141.00); the refund is the item balance, not the invoice total"]
    assert rows["return"] == ["received at the returns warehouse (order record)"]
    assert list(rows).index("invoice") == 1 and "approved" not in rows  # beside the refund; nobody decided yet
    invoice = Invoice(
        invoice_id="INV-QH-1001",
        order_id="QH-1001",
        state=InvoiceState.ISSUED,
        paid_items_cents=12900,
        freight_cents=1199,
        total_cents=14099,
        currency="CNY",
        issued_on=NOW.date(),
    )
    assert _rows(effect_card(PROPOSAL, "d" * 64, QUOTE, order=order, evidence={}, invoice=invoice))["invoice"][
        0
    ].startswith("total 14099 cents")  # the invoice the case read wins over paid items + freight
    not_received = effect_card(
        PROPOSAL,
        "d" * 64,
        QUOTE,
        order=order.model_copy(update={"return_received": False}),
        evidence={},
    )
    assert _rows(not_received)["return"] == ["NOT received at the returns warehouse (order record)"]
    other_order = effect_card(
        PROPOSAL, "d" * 64, QUOTE, order=ORDER.model_copy(update={"order_id": "QH-1002"}), evidence={}
    )
    assert "return" not in _rows(other_order)


@pytest.mark.parametrize(
    ("decision", "signed", "via", "shown"),
    [
        ("approve", True, "update", ("approved", "(signed approval token, sent as an update)")),
        ("approve", True, "signal", ("approved", "(signed approval token, sent as a signal)")),
        ("reject", True, "update", ("rejected", "(signed approval token, sent as an update)")),
        ("approve", False, None, ("approved", "(unsigned review naming the reviewer)")),
    ],
)
def test_a_decided_card_says_who_decided_how_and_when(
    decision: str, signed: bool, via: str | None, shown: tuple[str, str]
) -> None:
    decided = CardDecision(reviewer="chen", decision=decision, signed=signed, via=via, at=NOW)
    card = effect_card(PROPOSAL, "d" * 64, QUOTE, order=None, evidence={}, decided=decided)
    label, how = shown
    assert _rows(card)[label] == [f"by chen at 2026-12-01T10:00:00+00:00 {how}"]
    assert effect_rows(card)[-1].data  # the reviewer's name is data: escaped where markdown renders it

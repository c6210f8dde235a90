"""A case opens an exchange (issue 48): "please exchange QH-1004 for DESK-09" against the real worker, dev
server, commerce server (stdio) and rehearsal model, with the tenant's rule set by ``starter.py directory``.

The product code of the variant wanted is read by code from the customer's words; the commerce server
computes the exchange from the order and its catalogue (every unit, the list-price difference charged or
refunded on check-in); code states it; the customer's signed yes executes it once; verify walks the chain;
the same execution again is a replay and another body under its key a conflict. A message that names no
product code is answered by asking for one, and nothing is asked of the commerce server.
"""

from __future__ import annotations

import asyncio

from commerce_server.db import ActionProposalRow, ExchangeRow, OrderRow
from contracts.action_policy import ActionKind
from contracts.actions import ExchangeTerms
from contracts.case import CaseStatus
from contracts.names import StopCode
from tests.e2e.action_support import replay_and_conflict
from tests.e2e.merchant_world import Merchant


async def test_an_exchange_the_customer_confirms_opens_once_with_the_difference_stated(merchant: Merchant) -> None:
    shop = merchant
    shop.run("directory", "allow-action", "qinghe", "exchange_items", "--reviewers", "0", "--max-per-day", "3")
    view = await shop.ask("alice", "Please exchange QH-1004 for DESK-09, I need the large one.")
    assert view.status is CaseStatus.WAITING_APPROVAL and view.action is not None, (view.status, view.reason)
    action = view.action
    assert (action.kind, action.effect.order_id, action.effect.refund_cents) == (
        ActionKind.EXCHANGE_ITEMS,
        "QH-1004",
        0,
    )
    assert action.effect.exchange_opened == ExchangeTerms(
        sku_before="DESK-01", sku_after="DESK-09", units=1, difference_cents=2000
    )
    assert view.answer is not None and "1 x DESK-01 for DESK-09" in view.answer
    assert "CNY 20.00 (2000 cents) is charged to your original payment method" in view.answer

    said = await asyncio.to_thread(shop.run, "--profile", "alice", "say", view.case_id, "yes", check=False)
    assert said.returncode == 0, (said.stdout[-800:], said.stderr[-800:])
    done = await shop.view(view.case_id)
    assert done.status is CaseStatus.COMPLETED and done.reason == StopCode.ACTION_EXECUTED.value, done.reason
    receipt = done.action_receipt
    assert receipt is not None and receipt.agreed_by == ("alice",) and receipt.kind is ActionKind.EXCHANGE_ITEMS
    assert done.answer is not None and receipt.receipt_id in done.answer and "price difference" in done.answer
    [opened] = shop._rows(ExchangeRow)
    assert (opened.order_id, opened.sku_before, opened.sku_after, opened.difference_cents) == (
        "QH-1004",
        "DESK-01",
        "DESK-09",
        2000,
    )
    [order] = [row for row in shop._rows(OrderRow) if row.order_id == "QH-1004"]
    assert (order.status, order.sku, order.refunded_cents) == ("delivered", "DESK-01", 0)

    verified = await asyncio.to_thread(shop.run, "--profile", "alice", "verify", view.case_id, check=False)
    assert verified.returncode == 0, (verified.stdout[-1500:], verified.stderr[-800:])
    card = " ".join((await asyncio.to_thread(shop.run, "--profile", "alice", "status", view.case_id)).stdout.split())
    assert "1 × DESK-01 → DESK-09" in card and "CNY 20.00 charged (original_payment_method) once checked in" in card

    again, conflict = await replay_and_conflict(shop, shop.cases().open(f"case-{view.case_id}").workflow, action)
    assert again.replay and again.receipt_id == receipt.receipt_id
    assert conflict == "idempotency_conflict"
    assert len(shop._rows(ExchangeRow)) == 1


async def test_an_exchange_naming_no_product_code_asks_for_one_and_proposes_nothing(merchant: Merchant) -> None:
    shop = merchant
    shop.run("directory", "allow-action", "qinghe", "exchange_items")

    view = await shop.ask("alice", "Please exchange QH-1004 for the large one.")

    assert view.status is CaseStatus.WAITING_CUSTOMER, (view.status, view.reason)
    assert view.reason == StopCode.VARIANT_NEEDED.value and view.action is None
    assert view.answer is not None and "by its product code" in view.answer
    assert shop._rows(ActionProposalRow) == []

"""Each tenant's actions rest on its own terms (knowledge/action_terms.json), against the real worker, dev
server, commerce server (stdio) and rehearsal model: lin, a customer of south, cancels a processing order
through a case, the proposal citing SOUTH_TERMS p03 (south's own page, the one a south case can read)
rather than qinghe's DELIVERY and INVOICES pages, which no south case could cite."""

from __future__ import annotations

import asyncio

from commerce_server.db import ActionExecutionRow, OrderRow
from contracts.action_policy import ActionKind
from contracts.case import CaseStatus
from contracts.names import StopCode
from tests.e2e.merchant_world import Merchant


async def test_a_south_cancellation_cites_south_terms_and_executes_once(merchant: Merchant) -> None:
    shop = merchant
    shop.run("directory", "allow-action", "south", "cancel_order", "--reviewers", "0", "--max-per-day", "1")

    view = await shop.ask("lin", "Please cancel my order QH-3006, I ordered the wrong cable.")

    assert view.status is CaseStatus.WAITING_APPROVAL and view.action is not None, (view.status, view.reason)
    effect = view.action.effect
    assert (view.action.kind, effect.order_id, effect.refund_cents) == (ActionKind.CANCEL_ORDER, "QH-3006", 4700)
    assert effect.policy_pages == ("SOUTH_TERMS:p03",)
    said = await asyncio.to_thread(shop.run, "--profile", "lin", "say", view.case_id, "yes", check=False)
    assert said.returncode == 0, (said.stdout[-800:], said.stderr[-800:])
    done = await shop.view(view.case_id)
    assert done.status is CaseStatus.COMPLETED and done.reason == StopCode.ACTION_EXECUTED.value, done.reason
    [order] = [row for row in shop._rows(OrderRow) if row.order_id == "QH-3006"]
    assert (order.status, order.refunded_cents) == ("cancelled", 4700)
    assert len(shop._rows(ActionExecutionRow)) == 1

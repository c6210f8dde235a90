"""A case changes the customer's default address (issue 48): "please change my default address to: …"
against the real worker, dev server, commerce server (stdio) and rehearsal model, the tenant's rule set by
``starter.py directory``.

No order is involved: the plan names none, the commerce server computes the change from the signed-in
customer's own account record (the address before and after, the account's version, no money), code
states it, the customer's signed yes executes it once, no order's address moves; verify walks the chain;
the same execution again is a replay and another body under its key a conflict. Without an address in the
host's form the case asks for one and nothing is proposed.
"""

from __future__ import annotations

import asyncio

from commerce_server.db import ActionExecutionRow, CustomerAccountRow, ShippingAddressRow
from contracts.action_policy import ActionKind
from contracts.case import CaseStatus
from contracts.names import StopCode
from tests.e2e.action_support import replay_and_conflict
from tests.e2e.merchant_world import Merchant

NEW_FLAT = "to: Alice Wang (fictional), +86 21 5555 0101, 9 Lotus Court, Hangzhou, 310012, CN"
QUESTION = f"Please change my default address {NEW_FLAT}"


async def test_the_customers_yes_changes_the_default_address_once_and_no_order(merchant: Merchant) -> None:
    shop = merchant
    shop.run("directory", "allow-action", "qinghe", "change_default_address", "--reviewers", "0")
    orders_before = {row.order_id: row.line1 for row in shop._rows(ShippingAddressRow)}
    view = await shop.ask("alice", QUESTION)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.action is not None, (view.status, view.reason)
    action = view.action
    effect = action.effect
    assert (action.kind, effect.order_id, effect.account_version, effect.refund_cents) == (
        ActionKind.CHANGE_DEFAULT_ADDRESS,
        None,
        1,
        0,
    )
    assert effect.address_before is not None and effect.address_before.line1 == "18 Willow Lane, Unit 3"
    assert effect.address_after is not None and effect.address_after.line1 == "9 Lotus Court"
    assert (action.requires.customer, action.requires.reviewers) == (True, 0)
    assert view.answer is not None and "The default delivery address of your account will be" in view.answer
    assert "orders already placed keep their own address" in view.answer and 'reply "yes"' in view.answer

    said = await asyncio.to_thread(shop.run, "--profile", "alice", "say", view.case_id, "yes", check=False)
    assert said.returncode == 0, (said.stdout[-800:], said.stderr[-800:])
    done = await shop.view(view.case_id)
    assert done.status is CaseStatus.COMPLETED and done.reason == StopCode.ACTION_EXECUTED.value, done.reason
    receipt = done.action_receipt
    assert receipt is not None and receipt.agreed_by == ("alice",)
    assert (receipt.kind, receipt.order_id, receipt.account_version_after) == (
        ActionKind.CHANGE_DEFAULT_ADDRESS,
        None,
        2,
    )
    assert done.answer is not None and receipt.receipt_id in done.answer
    assert "The default delivery address of your account was changed" in done.answer
    [account] = [row for row in shop._rows(CustomerAccountRow) if row.customer == "alice"]
    assert (account.line1, account.postcode, account.version) == ("9 Lotus Court", "310012", 2)
    assert {row.order_id: row.line1 for row in shop._rows(ShippingAddressRow)} == orders_before

    verified = await asyncio.to_thread(shop.run, "--profile", "alice", "verify", view.case_id, check=False)
    assert verified.returncode == 0, (verified.stdout[-1500:], verified.stderr[-800:])
    assert "applicant token -> action proposal -> confirmation -> approvals -> action receipt" in verified.stdout
    assert "change_default_address of account (default address, account v1" in verified.stdout
    assert "(account v1 -> v2), agreed by alice, signed by the commerce server" in verified.stdout
    audit = await asyncio.to_thread(shop.run, "--profile", "alice", "audit", view.case_id, check=False)
    assert audit.returncode == 0, (audit.stdout[-800:], audit.stderr[-800:])
    audited = " ".join(audit.stdout.split())
    assert "change_default_address of account for alice (qinghe): default address, account v1" in audited
    assert "account v2, agreed by alice" in audited
    card = await asyncio.to_thread(shop.run, "--profile", "alice", "status", view.case_id)
    assert "change_default_address · account" in card.stdout and "9 Lotus Court" in card.stdout

    again, conflict = await replay_and_conflict(shop, shop.cases().open(f"case-{view.case_id}").workflow, action)
    assert again.replay and again.receipt_id == receipt.receipt_id
    assert conflict == "idempotency_conflict"
    assert len(shop._rows(ActionExecutionRow)) == 1


async def test_without_an_address_the_case_asks_for_one_and_proposes_nothing(merchant: Merchant) -> None:
    shop = merchant
    shop.run("directory", "allow-action", "qinghe", "change_default_address", "--reviewers", "0")

    view = await shop.ask("alice", "Please change the default address on my account, I am moving.")

    assert view.status is CaseStatus.WAITING_CUSTOMER and view.action is None, (view.status, view.reason)
    assert view.reason == StopCode.ADDRESS_NEEDED.value
    assert view.answer is not None and "to: recipient, phone, street, city, postcode, country" in view.answer
    [account] = [row for row in shop._rows(CustomerAccountRow) if row.customer == "alice"]
    assert account.version == 1

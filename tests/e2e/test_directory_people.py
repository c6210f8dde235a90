"""People are data: tenants, customers and reviewers added with ``starter.py directory`` alone, against
the real worker, dev server and commerce server (stdio), with no product file changed.

Each test has its own state dir (its own directory, keys and commerce database) that ``starter.py init``
creates, as a merchant's would be; the worker reads that directory and the commerce server its own copy
(the same file, reloaded when it changes).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

from contracts.case import CaseStatus
from keystore import private_key_path
from keystore.signers import KeyFileSigner
from tests.e2e.merchant_world import ROOT, Merchant
from tests.faults.fault_support import wait_until

PRODUCT_DIRS = (
    *("activities", "cli", "commerce_server", "contracts", "keystore", "knowledge", "workflows"),
    *("worker.py", "case_worker.py"),
)
EAST_ORDERS = ROOT / "docs" / "examples" / "east-orders.json"


def test_the_test_runs_against_the_committed_product_tree() -> None:
    """Nothing below edits product code: the product folders are as committed."""
    done = subprocess.run(
        ["git", "status", "--porcelain", "--", *PRODUCT_DIRS], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout == "", done.stdout


async def test_a_new_tenant_with_its_own_customer_reviewer_and_orders_is_paid_once(merchant: Merchant) -> None:
    shop = merchant
    for args in (
        ("directory", "add-tenant", "east", "--name", "East Shop (fictional)", "--policies", "qinghe"),
        ("directory", "add-person", "ana", "--tenant", "east", "--role", "customer", "--name", "Ana"),
        ("directory", "add-person", "kai", "--tenant", "east", "--role", "reviewer", "--name", "Kai"),
    ):
        done = await asyncio.to_thread(shop.run, *args)
        assert len(done.stdout.strip().splitlines()) == 1, done.stdout
    imported = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "commerce_server", "import", str(EAST_ORDERS), "--state-dir", str(shop.state_dir)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert imported.returncode == 0, imported.stderr

    view = await shop.ask("ana", "Please refund my order QH-4001, the return arrived at your warehouse.")
    assert view.status is CaseStatus.WAITING_APPROVAL, (view.status, view.reason)
    assert view.tenant == "east" and view.proposal is not None and view.proposal.amount_cents == 18900

    foreign = await shop.review("chen", view)  # qinghe's reviewer cannot even see east's case
    assert foreign.returncode == 2 and "case_not_accessible" in foreign.stderr, foreign.stderr
    assert view.digest is not None
    chen = KeyFileSigner(shop.state_dir).approval_token(
        shop.identity("chen"), case_id=view.case_id, digest=view.digest, decision="approve"
    )
    await shop.cases().open(f"case-{view.case_id}").workflow.signal("review", {"approval_token": chen})
    await asyncio.sleep(1)
    # the case recorded only east's slice of the directory: chen's key is not even known to it
    assert any("review_refused" in event and "unknown_signer" in event for event in await shop.events(view.case_id))
    hidden = await asyncio.to_thread(shop.run, "--profile", "chen", "status", view.case_id, check=False)
    assert hidden.returncode != 0 and "18900" not in hidden.stdout

    approved = await shop.review("kai", view)
    assert approved.returncode == 0, approved.stderr
    paid = await shop.view(view.case_id)
    assert paid.status is CaseStatus.COMPLETED and paid.receipt is not None and paid.receipt.amount_cents == 18900
    refunds = [row for row in shop.refunds() if row.case_id == view.case_id]
    assert [(row.tenant, row.customer, row.reviewer, row.amount_cents) for row in refunds] == [
        ("east", "ana", "kai", 18900)
    ]
    verified = await asyncio.to_thread(shop.run, "--profile", "ana", "verify", view.case_id)
    assert "chain verified" in verified.stdout, verified.stdout


async def test_an_added_reviewer_approves_and_removed_or_rotated_keys_pay_nothing(merchant: Merchant) -> None:
    shop = merchant
    await asyncio.to_thread(shop.run, "directory", "add-person", "zoe", "--tenant", "qinghe", "--role", "reviewer")
    first = await shop.ask("alice", "Please refund QH-1001")
    assert first.status is CaseStatus.WAITING_APPROVAL, first.reason
    assert (await shop.review("zoe", first)).returncode == 0
    assert (await shop.view(first.case_id)).status is CaseStatus.COMPLETED

    # removed while a case waits: the case reads the directory when the review arrives and refuses sam
    await asyncio.to_thread(shop.run, "directory", "add-person", "sam", "--tenant", "qinghe", "--role", "reviewer")
    waiting = await shop.ask("alice", "Please refund QH-1002")
    assert waiting.status is CaseStatus.WAITING_APPROVAL, waiting.reason
    sam = shop.identity("sam")
    await asyncio.to_thread(shop.run, "directory", "remove-person", "sam")
    assert waiting.digest is not None
    token = KeyFileSigner(shop.state_dir).approval_token(
        sam, case_id=waiting.case_id, digest=waiting.digest, decision="approve", kid="reviewer:sam"
    )
    handle = shop.cases().open(f"case-{waiting.case_id}").workflow
    await handle.signal("review", {"approval_token": token})

    async def sam_refused() -> bool:
        return any("review_refused: sam" in event for event in await shop.events(waiting.case_id))

    await wait_until(sam_refused, "the case's refusal of sam's approval", timeout=30)
    assert (await shop.view(waiting.case_id)).status is CaseStatus.WAITING_APPROVAL
    assert [row.case_id for row in shop.refunds()] == [first.case_id]
    await handle.terminate("test done")

    # rotated: an approval signed with chen's old key is refused by a case started after the rotation
    rotated = await asyncio.to_thread(shop.run, "directory", "rotate-key", "chen")
    assert "reviewer:chen:2" in rotated.stdout, rotated.stdout
    later = await shop.ask("alice", "Please refund QH-1002")
    assert later.status is CaseStatus.WAITING_APPROVAL and later.digest is not None
    old = KeyFileSigner(shop.state_dir).approval_token(
        shop.identity("chen"), case_id=later.case_id, digest=later.digest, decision="approve", kid="reviewer:chen"
    )
    assert private_key_path(shop.state_dir, "reviewer:chen").exists()  # the old key file is still there
    await shop.cases().open(f"case-{later.case_id}").workflow.signal("review", {"approval_token": old})
    await asyncio.sleep(1)
    assert any("review_refused" in event and "wrong_signer" in event for event in await shop.events(later.case_id))
    assert (await shop.review("chen", later)).returncode == 0  # the new key
    assert (await shop.view(later.case_id)).status is CaseStatus.COMPLETED
    assert sorted(row.case_id for row in shop.refunds()) == sorted([first.case_id, later.case_id])


async def test_four_eyes_needs_two_distinct_reviewers_and_pays_exactly_once(merchant: Merchant) -> None:
    shop = merchant
    await asyncio.to_thread(shop.run, "directory", "set-policy", "qinghe", "--two-reviewers-from", "10000")
    await asyncio.to_thread(shop.run, "directory", "add-person", "zoe", "--tenant", "qinghe", "--role", "reviewer")
    view = await shop.ask("alice", "Please refund QH-1001")
    assert view.status is CaseStatus.WAITING_APPROVAL and view.proposal is not None
    assert view.proposal.amount_cents == 12900 and view.effect is not None and view.effect.approvals_required == 2

    assert (await shop.review("chen", view)).returncode == 0
    waiting = await shop.view(view.case_id)
    assert waiting.status is CaseStatus.WAITING_APPROVAL and waiting.effect is not None
    assert waiting.effect.approved_by == ["chen"]
    metadata = await shop.cases().open(f"case-{view.case_id}").workflow.query("__temporal_workflow_metadata")
    assert "1 of 2 approvals" in str(metadata), "the Web UI's current details show the count"
    status = await asyncio.to_thread(shop.run, "--profile", "chen", "status", view.case_id)
    assert "1 of 2 approvals" in status.stdout, status.stdout

    again = await shop.review("chen", view)
    assert again.returncode != 0 and "reviewer_already_approved" in again.stderr, again.stderr

    # straight to the commerce server: chen's single approval pays nothing
    assert view.digest is not None
    signer = KeyFileSigner(shop.state_dir)
    token = signer.approval_token(shop.identity("chen"), case_id=view.case_id, digest=view.digest, decision="approve")
    refused = await shop.refused_straight(view, token)
    assert refused.code == "approval_invalid" and "approval_policy_not_met" in refused.message
    assert shop.refunds() == []

    assert (await shop.review("zoe", view)).returncode == 0
    done = await shop.view(view.case_id)
    assert done.status is CaseStatus.COMPLETED and done.receipt is not None
    [refund] = shop.refunds()
    assert (refund.case_id, refund.reviewer, refund.amount_cents) == (view.case_id, "chen", 12900)
    assert [(row.approval_id, row.reviewer) for row in shop.co_approvals()] == [(refund.approval_id, "zoe")]
    verified = await asyncio.to_thread(shop.run, "--profile", "alice", "verify", view.case_id)
    assert "co-approved by zoe" in verified.stdout, verified.stdout

"""A reviewer approves a refund in the reviewer console with a passkey, in a real browser.

Debian's chromium (Playwright, headless) with a WebAuthn virtual authenticator per reviewer through
the DevTools protocol; the real worker, dev server and commerce server (``devstack.rehearsal_stack``,
whose state dir holds the directory and keys); the console served in-process by uvicorn at
``http://localhost:PORT`` (a secure context, so WebAuthn works over http).

alice's QH-1001 refund waits before chen has a passkey; chen then enrolls from the link
``mint_enrollment_link`` makes (its token in the fragment, which the page's script posts: the browser
never sends it in a request line), signs in, finds the refund in the inbox (12,900 cents, its time left)
and, without a reload, a second one that starts meanwhile, opens the first; an approval made while the
authenticator does not verify the user is refused with the user-verification sentence and recorded; the
approval made with the passkey completes the case with a receipt, the console shows who approved and the
receipt, and ``starter.py verify`` checks the chain. That very assertion, taken from the history and
replayed, is refused by another waiting case (``token_for_another_case``, recorded there) and decides
nothing on its own, decided case. mei (south) enrolls too and sees no qinghe case, reads "No such case."
at its URL, and a forged POST to its review endpoints is refused; a POST without the CSRF token is
refused (403); the enrollment link used twice is refused. QH-1001 is paid exactly once, QH-1002 never.

Screenshots of the inbox and the case page go to ``$SUPPORT_SCREENSHOTS`` (``docs/images`` to
regenerate the committed ones), else to the test's temporary directory.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from contracts.case import CaseStatus
from contracts.credentials import SignedReview
from contracts.errors import AuthorizationError, SupportError
from contracts.knowledge import Language
from contracts.names import EventKind
from contracts.refusals import refusal_sentence
from devstack.rehearsal_stack import RehearsalStack, rehearsal_stack
from keystore import demo_identity
from reviewer_console.words import Text, Words
from tests.browser.console_support import (
    console_server,
    enroll_and_sign_in,
    refunds_paid,
    reviewer_pages,
    screenshots_dir,
    stack_keys_only,
    virtual_authenticator,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Please refund QH-1001 and explain the amount and the policy"
ENGLISH = Words(Language.EN)
REFRESH_TIMEOUT_MS = 25_000
"""The inbox refreshes every 10 s: a case that starts waiting shows within two refreshes."""
POST_FROM_PAGE = """async ([url, body, withToken]) => {
    const headers = {"Content-Type": "application/json"};
    if (withToken) headers["X-CSRF-Token"] = document.querySelector('meta[name="csrf-token"]').content;
    const response = await fetch(url, {method: "POST", headers, body: JSON.stringify(body)});
    return [response.status, await response.text()];
}"""


async def post_from(page: Page, url: str, body: dict[str, Any], *, with_token: bool = True) -> tuple[int, str]:
    status, text = await page.evaluate(POST_FROM_PAGE, [url, body, with_token])
    return int(status), str(text)


async def starter_verify(stack: RehearsalStack, case_id: str) -> subprocess.CompletedProcess[str]:
    """``starter.py --profile alice verify CASE`` against the stack, as the customer checks their receipt."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(("SUPPORT_", "COMMERCE_"))}
    env |= {"TEMPORAL_ADDRESS": stack.client.service_client.config.target_host, "SUPPORT_TASK_QUEUE": stack.task_queue}
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(stack.state_dir)]
    command += ["--profile", "alice", "verify", case_id]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


async def last_review_sent(stack: RehearsalStack, case_id: str) -> SignedReview:
    """The last ``review`` update the case accepted for handling, decoded from its history."""
    handle = stack.client.get_workflow_handle(f"case-{case_id}")
    sent: list[SignedReview] = []
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_execution_update_accepted_event_attributes"):
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if request.input.name == "review":
                [review] = await stack.client.data_converter.decode(request.input.args.payloads, [SignedReview])
                sent.append(review)
    assert sent, "no review update in the history"
    return sent[-1]


async def test_a_reviewer_approves_a_refund_with_a_passkey(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stack_keys_only(monkeypatch)
    shots = screenshots_dir(tmp_path)
    async with (
        rehearsal_stack(tmp_path) as stack,
        console_server(stack, tmp_path) as origin,
        reviewer_pages(tmp_path) as (chen, mei),
    ):
        chen_cdp, chen_key = await virtual_authenticator(chen)
        await virtual_authenticator(mei)
        # The refund waits before chen has a passkey (a support lead's first day): a review is judged
        # against the directory as it is when it arrives, so the passkey chen enrolls now approves it.
        case = await stack.cases.start(demo_identity("alice"), QUESTION, ttl_seconds=900)
        view = await case.settled(timeout=90, poll_seconds=0.2)
        assert view.status is CaseStatus.WAITING_APPROVAL, (view.status, view.reason)
        link = await enroll_and_sign_in(chen, stack, origin, "chen", "Chen")
        await enroll_and_sign_in(mei, stack, origin, "mei", "Mei")
        await mei.goto(link)
        await expect(mei.get_by_role("alert")).to_contain_text("This enrollment link was already used")

        # chen's inbox lists the case with its amount, order, customer, time left and four-eyes state,
        # and a case that starts while it is open without a reload (console.js fetches the rows every 10 s).
        await chen.goto(origin)
        row = chen.get_by_role("row").filter(has_text=case.case_id)
        await expect(row).to_contain_text("CNY 129.00")
        await expect(row).to_contain_text("12,900 cents")
        await expect(row).to_contain_text("QH-1001")
        await expect(row).to_contain_text("alice")
        await expect(row).to_contain_text(" left")
        await expect(row).to_contain_text("0 / 1")
        other = await stack.cases.start(demo_identity("alice"), "Please refund QH-1002", ttl_seconds=900)
        assert (await other.settled(timeout=90, poll_seconds=0.2)).status is CaseStatus.WAITING_APPROVAL
        other_row = chen.get_by_role("row").filter(has_text=other.case_id)
        await expect(other_row).to_contain_text("CNY 179.00", timeout=REFRESH_TIMEOUT_MS)
        await chen.screenshot(path=str(shots / "console-inbox.png"), full_page=True)

        # mei (south) lists no qinghe case, reads "No such case." at its URL, and a forged POST is refused.
        await mei.goto(origin)
        await expect(mei.get_by_text("Nothing waits for your approval.")).to_be_visible()
        await mei.goto(f"{origin}/cases/{case.case_id}")
        await expect(mei.get_by_role("alert")).to_have_text("No such case.")
        status, text = await post_from(mei, f"/cases/{case.case_id}/review/options", {"decision": "approve"})
        assert (status, "No such case." in text) == (404, True), (status, text)
        status, text = await post_from(mei, f"/cases/{case.case_id}/review/finish", {"ceremony": "x", "credential": {}})
        assert status == 400, (status, text)

        # The case page: the effect card, the answer, the policy text, the facts; Approve and Reject.
        await row.get_by_role("link", name=case.case_id).click()
        await expect(chen.get_by_role("heading", name=f"Case {case.case_id}")).to_be_visible()
        await expect(
            chen.get_by_role("row", name=re.compile(r"^refund CNY 129\.00 \(12,900 cents\) · QH-1001"))
        ).to_be_visible()
        await expect(chen.get_by_text("Facts the refund rule used")).to_be_visible()
        await expect(chen.get_by_text("Cited policy")).to_be_visible()
        await chen.screenshot(path=str(shots / "console-case.png"), full_page=True)

        # A POST without the CSRF token is refused.
        status, text = await post_from(
            chen, f"/cases/{case.case_id}/review/options", {"decision": "approve"}, with_token=False
        )
        assert status == 403, (status, text)

        # The authenticator cannot verify the user: the browser itself refuses (UV is required), nothing is sent.
        await chen_cdp.send("WebAuthn.setUserVerified", {"authenticatorId": chen_key, "isUserVerified": False})
        await chen.get_by_role("button", name="Approve with passkey").click()
        result = chen.get_by_role("status")
        await expect(result).to_have_text(ENGLISH(Text.AUTHENTICATOR_SILENT))
        await expect(chen.locator("#ceremony-code")).to_have_text("code: NotAllowedError")
        await chen_cdp.send("WebAuthn.setUserVerified", {"authenticatorId": chen_key, "isUserVerified": True})
        # An assertion whose user-verified flag is off (a careless or hostile client): it reaches the
        # workflow, which refuses it with the user-verification sentence and records it.
        await chen_cdp.send("WebAuthn.setResponseOverrideBits", {"authenticatorId": chen_key, "isBadUV": True})
        await chen.get_by_role("button", name="Approve with passkey").click()
        await expect(result).to_contain_text(refusal_sentence("passkey_user_not_verified", reviewer="chen"))
        await chen_cdp.send("WebAuthn.setResponseOverrideBits", {"authenticatorId": chen_key, "isBadUV": False})
        await expect(chen.get_by_role("button", name="Approve with passkey")).to_be_enabled()
        assert (await case.status()).status is CaseStatus.WAITING_APPROVAL
        assert refunds_paid(stack.state_dir, "QH-1001") == 0

        # The approval with the passkey, the user verified: accepted, settled, shown with the receipt.
        await chen.get_by_role("button", name="Approve with passkey").click()
        await expect(result).to_have_text(ENGLISH(Text.ACCEPTED_APPROVE))
        ended = await case.ended(timeout=60)
        assert ended.status is CaseStatus.COMPLETED, (ended.status, ended.reason)
        assert ended.receipt is not None and ended.receipt.signature
        await chen.goto(f"{origin}/cases/{case.case_id}")
        await expect(chen.get_by_role("heading", name="Settled")).to_be_visible()
        await expect(chen.get_by_role("row", name=f"receipt {ended.receipt.receipt_id}")).to_be_visible()
        await expect(chen.get_by_role("row", name="signed signed by the commerce server")).to_be_visible()
        await expect(chen.get_by_role("row", name=re.compile(r"^approved by chen at "))).to_be_visible()

        refused = [event.detail for event in await case.events() if event.kind == EventKind.REVIEW_REFUSED]
        assert any("passkey_user_not_verified" in detail for detail in refused), refused
        assert refunds_paid(stack.state_dir, "QH-1001") == 1
        verified = await starter_verify(stack, case.case_id)
        assert verified.returncode == 0 and "chain verified" in verified.stdout, verified.stdout + verified.stderr

        # The browser's own accepted assertion, replayed: to another waiting case it is refused and
        # recorded there; to its own case (decided) it decides nothing; nothing more is paid.
        approval = await last_review_sent(stack, case.case_id)
        assert approval.approval_token.startswith("passkey1.")
        with pytest.raises(AuthorizationError) as elsewhere:
            await other.review(approval)
        assert elsewhere.value.message.startswith("token_for_another_case: "), elsewhere.value
        recorded = [event.detail for event in await other.events() if event.kind == EventKind.REVIEW_REFUSED]
        assert any("token_for_another_case" in detail for detail in recorded), recorded
        with pytest.raises(SupportError):
            await case.review(approval)
        assert (refunds_paid(stack.state_dir, "QH-1001"), refunds_paid(stack.state_dir, "QH-1002")) == (1, 0)

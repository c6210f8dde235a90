"""A customer says yes to a cancellation in the web chat page, in a real browser (issue 48).

Debian's chromium (Playwright, headless); the real worker, dev server and commerce server
(``devstack.rehearsal_stack``, rehearsal model) with qinghe allowing cancellations on the customer's
confirmation alone; the channel with its demo sign-in. alice asks to cancel QH-1006: the page shows the
change, written by code, and a button to confirm it. "yes" typed as a message agrees to nothing (the
button stays); the button has the demo sign-in sign her confirmation of exactly that proposal, and the
receipt arrives on the page.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from playwright.async_api import expect

from contracts.action_policy import ActionKind, ActionRule
from devstack.rehearsal_stack import rehearsal_stack
from keystore import directory_location, load_directory, write_directory
from keystore.directory_edit import set_action
from tests.browser.console_support import screenshots_dir, stack_keys_only
from tests.browser.test_chat_page import CASE_TIMEOUT_MS, chat_channel, customer_page, send

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def order_status(state_dir: Path, order_id: str) -> str:
    with sqlite3.connect(state_dir / "commerce.db") as db:
        return str(db.execute("SELECT status FROM orders WHERE order_id = ?", (order_id,)).fetchone()[0])


async def test_a_customer_confirms_a_cancellation_with_the_page_button(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack_keys_only(monkeypatch)
    shots = screenshots_dir(tmp_path)
    async with rehearsal_stack(tmp_path) as stack:
        path = Path(directory_location(stack.state_dir, {}))
        rule = ActionRule(reviewers=0, max_per_customer_per_day=3)
        write_directory(path, set_action(load_directory(str(path)), "qinghe", ActionKind.CANCEL_ORDER, rule))
        async with chat_channel(stack) as origin, customer_page(tmp_path) as page:
            await page.goto(origin)
            await page.get_by_label("Customer").select_option("alice")
            await page.get_by_role("button", name="Sign in (demo sign-in)").click()
            await send(page, "Please cancel my order QH-1006")
            confirm = page.get_by_role("button", name="Yes, make this change")
            await expect(confirm).to_be_visible(timeout=CASE_TIMEOUT_MS)
            await expect(page.locator("#transcript li.service").last).to_contain_text("CNY 47.00 (4700 cents)")
            await expect(page.locator("#case-status")).to_contain_text("waits for your confirmation")
            await page.screenshot(path=str(shots / "chat-confirm.png"), full_page=True)

            await send(page, "yes")  # words alone: answered from the proposal, nothing changes
            await expect(page.locator("#transcript li.service").last).to_contain_text(
                "still waits for your confirmation", timeout=CASE_TIMEOUT_MS
            )
            await expect(confirm).to_be_visible()
            assert order_status(stack.state_dir, "QH-1006") == "processing"

            await confirm.click()
            await expect(page.locator("#case-status")).to_have_text(
                "This conversation is complete.", timeout=CASE_TIMEOUT_MS
            )
            await expect(page.locator("#transcript li.service").last).to_contain_text("was cancelled")
            await expect(confirm).to_be_hidden()
            await page.screenshot(path=str(shots / "chat-confirmed.png"), full_page=True)
        assert order_status(stack.state_dir, "QH-1006") == "cancelled"

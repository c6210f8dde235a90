"""A customer chats with the support service in the web chat page, in a real browser.

Debian's chromium (Playwright, headless); the real worker, dev server and commerce server
(``devstack.rehearsal_stack``, rehearsal model); the customer channel served by uvicorn with its demo
sign-in. alice signs in (demo sign-in), asks "I want a refund for my lamp", watches the progress, is
asked which order and answers "QH-1001"; the refund proposal waits for a reviewer. The page is reloaded:
it shows the transcript and the progress it had, each item once, and its stream resumes after the last
event it showed (the answer to "any news?" arrives live, numbered on from there, none missing). Text
with markup in it is shown as written, never rendered. chen reads the conversation in the reviewer
console and approves with his passkey; the receipt arrives on the page live and the conversation reads
as complete. A browser that prefers Chinese reads the page in Chinese.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import Page, async_playwright, expect

from contracts.case import CaseStatus
from contracts.knowledge import Language
from customer_channel import ChannelConfig, TemporalConversations, build_app
from devstack.rehearsal_stack import RehearsalStack, rehearsal_stack
from keystore import directory_location
from keystore.directory_file import DirectorySource
from reviewer_console.words import Text, Words
from tests.browser.console_support import (
    console_server,
    enroll_and_sign_in,
    refunds_paid,
    screenshots_dir,
    stack_keys_only,
    virtual_authenticator,
)
from tests.browser.web_ui import CHROMIUM, UI_TIMEOUT_MS, VIEWPORT
from tests.channel.channel_server import serving

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ENGLISH = Words(Language.EN)
CASE_TIMEOUT_MS = 90_000
"""A turn of the rehearsal model on a busy 2-core machine: planning, the tools, the draft, the review."""


@asynccontextmanager
async def chat_channel(stack: RehearsalStack) -> AsyncIterator[str]:
    """The channel with the demo sign-in, against the stack, on a free port; yields its origin."""
    app = build_app(
        TemporalConversations(stack.client, stack.task_queue),
        DirectorySource(directory_location(stack.state_dir, {})),
        ChannelConfig(demo_sign_in=True),
        signer=stack.signer,
    )
    async with serving(app) as origin:
        yield origin


@asynccontextmanager
async def customer_page(failure_dir: Path) -> AsyncIterator[Page]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run `make browser` (apt-get install chromium).", pytrace=False)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        page: Page | None = None
        try:
            context = await browser.new_context(viewport=VIEWPORT, device_scale_factor=1, color_scheme="light")
            page = await context.new_page()
            page.set_default_timeout(UI_TIMEOUT_MS)
            yield page
        except BaseException:
            if page is not None:
                await page.screenshot(path=str(failure_dir / "failed-chat-page.png"), timeout=5_000)
            raise
        finally:
            await browser.close()


async def offsets(page: Page) -> list[int]:
    return [
        int(value)
        for value in await page.locator("#progress li").evaluate_all("rows => rows.map(r => r.dataset.offset)")
    ]


async def send(page: Page, text: str) -> None:
    await page.get_by_label("Your message").fill(text)
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_label("Your message")).to_have_value("", timeout=CASE_TIMEOUT_MS)


async def test_a_customer_chats_and_the_stream_resumes_after_a_reload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack_keys_only(monkeypatch)
    shots = screenshots_dir(tmp_path)
    async with rehearsal_stack(tmp_path) as stack, chat_channel(stack) as origin, customer_page(tmp_path) as page:
        await page.goto(origin)
        await expect(page.get_by_role("heading", name="Demo sign-in")).to_be_visible()
        await page.get_by_label("Customer").select_option("alice")
        await page.get_by_role("button", name="Sign in (demo sign-in)").click()
        await expect(page.get_by_text("Signed in as Alice (demo sign-in)")).to_be_visible()

        await send(page, "I want a refund for my lamp")
        waiting_for_me = page.locator('#progress li[data-kind="waiting_for_customer"]')
        await expect(waiting_for_me).to_have_count(1, timeout=CASE_TIMEOUT_MS)
        await expect(page.get_by_role("status").first).to_have_text("We are waiting for your answer.")
        await expect(page.locator("#transcript li.service").last).to_contain_text("order")

        await send(page, "QH-1001")
        reviewer = page.locator('#progress li[data-kind="waiting_for_reviewer"]')
        await expect(reviewer).to_have_count(1, timeout=CASE_TIMEOUT_MS)
        await expect(page.locator("#case-status")).to_have_text("A proposal waits for approval.")
        await expect(reviewer).to_have_attribute("data-until", re.compile(r"^2\d{3}-"))
        before = await offsets(page)
        assert before == list(range(len(before))), before
        transcript = await page.locator("#transcript li").count()
        await page.screenshot(path=str(shots / "chat-waiting.png"), full_page=True)

        # A reload: the same transcript and progress, each item once, and the stream goes on from there.
        await page.reload()
        await expect(page.locator("#progress li")).to_have_count(len(before))
        await expect(page.locator("#transcript li")).to_have_count(transcript)
        assert await offsets(page) == before
        await send(page, "Any news on my refund? <b>please</b>")
        await expect(page.locator("#transcript li")).to_have_count(transcript + 2, timeout=CASE_TIMEOUT_MS)
        after = await offsets(page)
        assert len(after) > len(before) and after == list(range(len(after))), (before, after)
        said = page.locator("#transcript li.customer").last
        await expect(said).to_contain_text("<b>please</b>")  # shown as written
        assert await page.locator("#transcript b, #progress b").count() == 0  # never rendered as markup
        await expect(page.locator("#case-status")).to_have_text("A proposal waits for approval.")
        await page.screenshot(path=str(shots / "chat-resumed.png"), full_page=True)
        assert refunds_paid(stack.state_dir, "QH-1001") == 0

        # chen approves in the reviewer console with his passkey, reading the conversation there; the
        # outcome reaches the customer's page live, stated by code
        case_id = (await page.locator("#case-id").text_content() or "").strip()
        assert (await stack.cases.open(case_id).status()).status is CaseStatus.WAITING_APPROVAL
        browser = page.context.browser
        assert browser is not None
        chen = await (await browser.new_context(viewport=VIEWPORT, device_scale_factor=1)).new_page()
        chen.set_default_timeout(UI_TIMEOUT_MS)
        async with console_server(stack, tmp_path) as console:
            await virtual_authenticator(chen)
            await enroll_and_sign_in(chen, stack, console, "chen", "Chen")
            await chen.goto(f"{console}/cases/{case_id}")
            await expect(chen.get_by_text("I want a refund for my lamp").first).to_be_visible()
            await expect(chen.get_by_text("Any news on my refund? <b>please</b>").first).to_be_visible()
            await chen.get_by_role("button", name="Approve with passkey").click()
            await expect(chen.get_by_role("status")).to_have_text(ENGLISH(Text.ACCEPTED_APPROVE))
        receipt = page.locator('#progress li[data-kind="receipt"]')
        await expect(receipt).to_have_count(1, timeout=CASE_TIMEOUT_MS)
        await expect(receipt).to_contain_text("QH-1001")
        await expect(page.locator("#case-status")).to_have_text("This conversation is complete.")
        await expect(page.locator("#transcript li.service").last).to_contain_text("receipt")
        assert refunds_paid(stack.state_dir, "QH-1001") == 1

        # A reader whose browser prefers Chinese reads the page in Chinese.
        browser = page.context.browser
        assert browser is not None
        chinese = await (await browser.new_context(locale="zh-CN")).new_page()
        await chinese.goto(origin)
        await expect(chinese.get_by_role("heading", name="演示登录")).to_be_visible()
        await expect(chinese.get_by_role("button", name="登录（演示登录）")).to_be_visible()

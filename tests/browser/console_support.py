"""The reviewer console in a real browser, the parts its browser tests share: the console served by
uvicorn on a free port against a rehearsal stack, headless Debian chromium pages (one browser context
per reviewer), a WebAuthn virtual authenticator per page through the DevTools protocol, and a
reviewer's enrollment from a fresh link followed by sign-in."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from playwright.async_api import CDPSession, Page, async_playwright, expect

from commerce_server.tokens import DIRECTORY_ENV as COMMERCE_DIRECTORY_ENV
from commerce_server.tokens import SIGNING_KEY_ENV
from devstack.rehearsal_stack import RehearsalStack
from devstack.servers import free_port
from keystore import DIRECTORY_ENV, directory_location
from keystore.directory_file import DirectorySource
from keystore.enrollment import mint_enrollment_link
from reviewer_console import ConsoleConfig, ConsoleStore, build_app
from tests.browser.web_ui import CHROMIUM, UI_TIMEOUT_MS, VIEWPORT

VIRTUAL_AUTHENTICATOR = {
    "protocol": "ctap2",
    "transport": "internal",
    "hasResidentKey": True,
    "hasUserVerification": True,
    "isUserVerified": True,
    "automaticPresenceSimulation": True,
}


@asynccontextmanager
async def console_server(stack: RehearsalStack, root: Path) -> AsyncIterator[str]:
    """The console on a free port of this machine, against the stack; yields its origin."""
    port = free_port()
    origin = f"http://localhost:{port}"
    app = build_app(
        stack.cases,
        DirectorySource(directory_location(stack.state_dir, {})),
        ConsoleStore.in_state_dir(root / "console"),
        ConsoleConfig.for_origin(origin),
    )
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(200):
            if server.started or task.done():
                break
            await asyncio.sleep(0.05)
        assert server.started, "the console did not start"
        yield origin
    finally:
        server.should_exit = True
        await task


@asynccontextmanager
async def reviewer_pages(
    failure_dir: Path, *, time_zones: tuple[str, str] = ("UTC", "UTC")
) -> AsyncIterator[tuple[Page, Page]]:
    """Two pages of headless ``/usr/bin/chromium`` in separate contexts (two reviewers' browsers, each
    in its own time zone)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run `make browser` (apt-get install chromium).", pytrace=False)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        pages: list[Page] = []
        try:
            for zone in time_zones:
                context = await browser.new_context(
                    viewport=VIEWPORT, device_scale_factor=1, color_scheme="light", timezone_id=zone
                )
                page = await context.new_page()
                page.set_default_timeout(UI_TIMEOUT_MS)
                pages.append(page)
            yield pages[0], pages[1]
        except BaseException:
            for number, page in enumerate(pages):
                await page.screenshot(path=str(failure_dir / f"failed-page-{number}.png"), timeout=5_000)
            raise
        finally:
            await browser.close()


async def virtual_authenticator(page: Page) -> tuple[CDPSession, str]:
    """A platform authenticator with user verification in ``page``, through the DevTools protocol."""
    cdp = await page.context.new_cdp_session(page)
    await cdp.send("WebAuthn.enable", {"enableUI": False})
    added: dict[str, Any] = await cdp.send("WebAuthn.addVirtualAuthenticator", {"options": VIRTUAL_AUTHENTICATOR})
    return cdp, str(added["authenticatorId"])


async def enroll_and_sign_in(page: Page, stack: RehearsalStack, origin: str, subject: str, name: str) -> str:
    """``subject`` enrolls a passkey from a fresh link and signs in with it; returns the link."""
    link = mint_enrollment_link(stack.state_dir, subject, console_url=origin, now=datetime.now(UTC))
    assert link.startswith(f"{origin}/enroll#token="), link
    await page.goto(link)  # the page's script claims the link for this browser, then enables the button
    await page.get_by_role("button", name="Create a passkey").click()
    await expect(page.get_by_role("status")).to_have_text(f"Passkey enrolled for {subject}. Sign in with it.")
    await page.get_by_role("link", name="Sign in with a passkey").click()  # the enrollment page's next step
    await page.get_by_role("button", name="Sign in with a passkey").click()
    await expect(page.get_by_text(f"Signed in as {name}")).to_be_visible()
    return link


SCREENSHOTS_ENV = "SUPPORT_SCREENSHOTS"


def screenshots_dir(tmp_path: Path) -> Path:
    """``$SUPPORT_SCREENSHOTS`` (``docs/images`` regenerates the committed ones), else the test's folder."""
    shots = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def stack_keys_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack's worker and commerce server read the stack's own directory and keys, never the
    session's (``SUPPORT_DIRECTORY``, ``COMMERCE_DIRECTORY``, ``COMMERCE_SIGNING_KEY``)."""
    for name in (COMMERCE_DIRECTORY_ENV, SIGNING_KEY_ENV, DIRECTORY_ENV):
        monkeypatch.delenv(name, raising=False)


def refunds_paid(state_dir: Path, order_id: str) -> int:
    with sqlite3.connect(state_dir / "commerce.db") as db:
        return int(db.execute("SELECT count(*) FROM refunds WHERE order_id = ?", (order_id,)).fetchone()[0])

"""Headless Debian chromium on the Temporal Web UI (2.54) of a throwaway rehearsal stack.

``web_ui_stack`` is :func:`devstack.rehearsal_stack.rehearsal_stack` with the dev server's Web UI on a free port;
``chromium_page`` a Playwright page in ``/usr/bin/chromium`` (Playwright downloads no browser; ``make
browser`` installs Debian's); :class:`WorkflowPage` the workflow page of one workflow, reached and
operated by roles and visible text as a person does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.async_api import FrameLocator, Locator, Page, ViewportSize, async_playwright, expect

from cli.render import WEB_UI_SIGNAL, WEB_UI_UPDATE
from commerce_server.tokens import DIRECTORY_ENV as COMMERCE_DIRECTORY_ENV
from commerce_server.tokens import SIGNING_KEY_ENV
from devstack.rehearsal_stack import RehearsalStack, rehearsal_stack
from devstack.servers import free_port, wait_for_port
from keystore import DIRECTORY_ENV

CHROMIUM = Path("/usr/bin/chromium")
UI_TIMEOUT_MS = 20_000
"""How long one UI expectation may take (the UI polls the server; the first page load compiles)."""
VIEWPORT: ViewportSize = {"width": 1400, "height": 900}


@dataclass(frozen=True)
class WebUiStack:
    stack: RehearsalStack
    ui_url: str

    def workflow_url(self, workflow_id: str, namespace: str = "default") -> str:
        return f"{self.ui_url}/namespaces/{namespace}/workflows/{workflow_id}"


@asynccontextmanager
async def web_ui_stack(root: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[WebUiStack]:
    """A rehearsal stack (dev server, seeded commerce database, demo keys, in-process worker) whose dev
    server also serves the Web UI. The stack signs and verifies with its own keys: the commerce
    server it spawns, and the signer that looks reviewers' kids up in a directory, must not be pointed
    at the test session's directory and keys (``tests/conftest.py`` names them in the environment),
    so that environment is cleared for the duration."""
    for name in (COMMERCE_DIRECTORY_ENV, SIGNING_KEY_ENV, DIRECTORY_ENV):
        monkeypatch.delenv(name, raising=False)
    ui_port = free_port()
    async with rehearsal_stack(root, ui_port=ui_port) as stack:
        await asyncio.to_thread(wait_for_port, "127.0.0.1", ui_port, 30)
        yield WebUiStack(stack, f"http://127.0.0.1:{ui_port}")


@asynccontextmanager
async def chromium_page(failure_shot: Path | None = None) -> AsyncIterator[Page]:
    """A page in headless ``/usr/bin/chromium``; the test fails (never skips) when it is missing. When
    the body fails, the page as it was is saved to ``failure_shot``."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"{CHROMIUM} is missing: the Web UI test drives Debian's chromium. Run `make browser` "
            "(apt-get install chromium, as root).",
            pytrace=False,
        )
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            context = await browser.new_context(viewport=VIEWPORT, device_scale_factor=1, color_scheme="light")
            page = await context.new_page()
            page.set_default_timeout(UI_TIMEOUT_MS)
            try:
                yield page
            except BaseException:
                if failure_shot is not None:
                    with contextlib.suppress(Exception):
                        await page.screenshot(path=str(failure_shot), timeout=5_000)
                        print(f"the page when the test failed: {failure_shot}")
                raise
        finally:
            await browser.close()


class WorkflowPage:
    """One workflow's page of the Web UI, as a person sees it:

    - the tabs (role ``tab``): Timeline, Event History, …, User Metadata, Memo. User Metadata shows
      Summary, Details and Current Details, each markdown rendered in its own iframe
      (``#user-metadata-summary``, ``#user-metadata-details``, ``#user-metadata-current-details``); the
      UI gets Current Details by querying ``__temporal_workflow_metadata``, so a worker must be running.
    - the status badge (role ``status``: RUNNING, COMPLETED, …).
    - More Actions (button) → Send an Update (menuitem) → a dialog named "Send an Update": its Name is a
      dropdown (button "Select an Update", options named by the workflow's update definitions, then
      "Custom"), Data a JSON editor (textbox "Data"), then Submit. A failed update leaves the dialog
      open with an alert carrying the failure's message; a successful one closes it and shows a toast
      "Update successful" (its text is also in a screen-reader live region: take the first match).
    """

    def __init__(self, page: Page, url: str) -> None:
        self.page = page
        self.url = url

    async def open(self, tab: str | None = None) -> None:
        """Load the page (the UI redirects to the latest run's timeline) and open ``tab``."""
        await self.page.goto(self.url)
        await expect(self.status).to_be_visible(timeout=UI_TIMEOUT_MS)
        if tab is not None:
            await self.show(tab)

    async def show(self, tab: str) -> None:
        await self.page.get_by_role("tab", name=re.compile(rf"^{re.escape(tab)}")).click()

    @property
    def status(self) -> Locator:
        """The execution status badge (its text is upper case: RUNNING, COMPLETED)."""
        return self.page.get_by_role("status").first

    def markdown(self, which: str) -> FrameLocator:
        """One user-metadata panel as rendered: ``summary``, ``details`` or ``current-details``."""
        return self.page.frame_locator(f"iframe#user-metadata-{which}")

    async def expect_markdown(self, which: str, *texts: str) -> None:
        body = self.markdown(which).locator("body")
        for text in texts:
            await expect(body).to_contain_text(text, timeout=UI_TIMEOUT_MS)

    async def screenshot(self, path: Path) -> None:
        """The whole page down to the end of Current Details. The UI scrolls inside its own container,
        so a full-page shot is one viewport: the viewport grows to the panel for the shot."""
        box = await self.page.locator("iframe#user-metadata-current-details").bounding_box()
        height = max(VIEWPORT["height"], int(box["y"] + box["height"]) + 32 if box else 0)
        await self.page.set_viewport_size({"width": VIEWPORT["width"], "height": min(height, 4000)})
        try:
            await self.page.screenshot(path=str(path), full_page=True)
        finally:
            await self.page.set_viewport_size(VIEWPORT)

    async def open_update_dialog(self, update_name: str) -> Locator:
        """More Actions → Send an Update (the path review-info names), with ``update_name`` chosen among
        the workflow's updates; the menu also offers the signal path review-info names."""
        menu, item = WEB_UI_UPDATE
        await self.page.get_by_role("button", name=menu).click()
        await expect(self.page.get_by_role("menuitem", name=WEB_UI_SIGNAL[1])).to_be_visible()
        await self.page.get_by_role("menuitem", name=item).click()
        dialog = self.page.get_by_role("dialog", name=item)
        await expect(dialog).to_be_visible()
        await dialog.get_by_role("button", name="Select an Update").click()
        await self.page.get_by_role("option", name=re.compile(rf"^{re.escape(update_name)}\b")).click()
        await expect(dialog.get_by_role("button", name=update_name, exact=True)).to_be_visible()
        await dialog.get_by_role("heading", name="Send an Update").click()  # folds the option list away
        await expect(self.page.get_by_role("listbox")).to_be_hidden()
        return dialog

    async def submit_update(self, dialog: Locator, data_json: str) -> None:
        await dialog.get_by_role("textbox", name="Data").fill(data_json)
        submit = dialog.get_by_role("button", name="Submit")
        await expect(submit).to_be_enabled()
        await submit.click()

    async def close_dialog(self, dialog: Locator) -> None:
        await dialog.get_by_role("button", name="Cancel").last.click()
        await expect(dialog).to_be_hidden()

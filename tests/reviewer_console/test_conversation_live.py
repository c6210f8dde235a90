"""The console's case page over a real conversation: the real worker, dev server, commerce server and
rehearsal model. alice asks for a refund without naming the order, is asked which order, and gives it
in a ``message`` update (with markup in it); while the refund waits, chen signs in with his passkey and
reads every message and reply, in order, the further message under its credential, all as text."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import httpx2
from temporalio.client import Client

from case_client._conversation import new_message_id, send_message, start_conversation
from case_client._rules import new_case
from case_history.conversation import token_fingerprint
from contracts.case import CaseStatus
from contracts.conversation import CustomerMessage, Speaker
from keystore import demo_identity, directory_location
from keystore.directory_file import DirectorySource
from reviewer_console import ConsoleConfig, ConsoleStore, build_app
from tests.case_world import open_world
from tests.credentials_support import CHEN_PASSKEY, applicant_token, use_test_keys
from tests.reviewer_console.console_browser import ORIGIN, Browser, sign_in

ALICE = demo_identity("alice")
QUESTION = "I want a refund for my lamp"
ORDER = "It is order QH-1001 <img src=x onerror=alert(1)>"


async def test_the_case_page_shows_a_real_conversation_with_its_credentials(
    temporal_client: Client, tmp_path: Path
) -> None:
    world, worker, cleanup = await open_world(temporal_client, tmp_path / "state")
    try:
        async with worker:
            case = new_case(ALICE, QUESTION)
            case = case.model_copy(update={"applicant_token": applicant_token(ALICE, case.case_id)})
            handle, _ = await start_conversation(world.client, world.task_queue, case, wait_seconds=25)
            await world.wait_for(handle, lambda view: view.status is CaseStatus.WAITING_CUSTOMER)
            token = applicant_token(ALICE, case.case_id)
            await send_message(handle, CustomerMessage(text=ORDER, token=token, message_id=new_message_id()))
            view = await world.wait_for(handle, lambda view: view.status is CaseStatus.WAITING_APPROVAL)

            keys = DirectorySource(directory_location(use_test_keys().state_dir, {}))  # where chen's passkey is
            app = build_app(
                world.cases, keys, ConsoleStore.in_state_dir(tmp_path / "console"), ConsoleConfig.for_origin(ORIGIN)
            )
            async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=ORIGIN) as client:
                browser = Browser(client)
                await sign_in(browser, CHEN_PASSKEY)
                inbox = (await browser.get("/inbox/rows")).text
                page = (await browser.get(f"/cases/{case.case_id}")).text
    finally:
        await cleanup()
        world.engine.dispose()
    assert case.case_id in inbox and "waiting for approval" in page
    section = re.search(r'<section class="conversation">(.*?)</section>', page, re.DOTALL)
    assert section, page
    said = [
        unescape(text)
        for text in re.findall(r'<blockquote class="said">(.*?)</blockquote>', section.group(1), re.DOTALL)
    ]
    assert said == [entry.text for entry in view.conversation] and said[0] == QUESTION and said[2] == ORDER
    speakers = re.findall(r'data-speaker="(\w+)"', section.group(1))
    assert speakers == [entry.speaker.value for entry in view.conversation]
    assert speakers[:3] == [Speaker.CUSTOMER.value, Speaker.SERVICE.value, Speaker.CUSTOMER.value]
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in section.group(1)
    assert f"under built-in credential {token_fingerprint(token)}" in section.group(1)
    assert "written by: model draft (reviewed)" in section.group(1)
    assert token not in page

"""The console over a real action case (issue 48): the real worker, dev server, commerce server and
rehearsal model, with qinghe's rule asking the customer's confirmation and one reviewer's approval.

alice asks to cancel QH-1006; chen finds it in his inbox (the money back, the action, 0 of 1 approvals),
reads what executing it does on its page, and approves it with his passkey; the case then waits for
alice's signed "yes" alone, and once she sends it the cancellation executes and the page shows the
receipt."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from temporalio.client import Client

from case_client._conversation import new_message_id, send_message
from commerce_server.tokens import DIRECTORY_ENV
from contracts.action_policy import ActionKind, ActionRule
from contracts.case import CaseStatus
from contracts.commerce import OrderStatus
from contracts.conversation import CustomerMessage
from keystore import demo_identity, directory_location, load_directory, write_directory
from keystore.directory_edit import set_action
from keystore.directory_file import DirectorySource
from reviewer_console import ConsoleConfig, ConsoleStore, build_app
from tests.case_world import open_world
from tests.credentials_support import CHEN_PASSKEY, applicant_token, use_test_keys
from tests.reviewer_console.console_browser import ORIGIN, Browser, sign_in, unb64

ALICE = demo_identity("alice")


async def test_a_reviewer_approves_a_cancellation_in_the_console_and_the_customer_confirms_it(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    signer = use_test_keys()
    directory = tmp_path / "directory.json"
    allowed = set_action(
        load_directory(directory_location(signer.state_dir, {})), "qinghe", ActionKind.CANCEL_ORDER, ActionRule()
    )
    write_directory(directory, allowed)
    monkeypatch.setenv(DIRECTORY_ENV, str(directory))  # the commerce server (stdio) reads the same policy
    world, worker, cleanup = await open_world(temporal_client, tmp_path / "state", directory=str(directory))
    try:
        async with worker:
            case = await world.cases.start(ALICE, "Please cancel my order QH-1006")
            waiting = await world.wait_for(case.workflow, lambda view: view.status is CaseStatus.WAITING_APPROVAL)
            assert waiting.action is not None and waiting.action.requires.reviewers == 1, waiting.reason
            app = build_app(
                world.cases,
                DirectorySource(str(directory)),
                ConsoleStore.in_state_dir(tmp_path / "console"),
                ConsoleConfig.for_origin(ORIGIN),
            )
            async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=ORIGIN) as client:
                browser = Browser(client)
                await sign_in(browser, CHEN_PASSKEY)
                inbox = (await browser.get("/inbox/rows")).text
                page = (await browser.get(f"/cases/{case.case_id}")).text
                begun = (await browser.post(f"/cases/{case.case_id}/review/options", {"decision": "approve"})).json()
                credential = CHEN_PASSKEY.assert_(unb64(begun["options"]["challenge"]))
                body = {"ceremony": begun["ceremony"], "credential": credential}
                approved = (await browser.post(f"/cases/{case.case_id}/review/finish", body)).json()
                half = await case.status()
                token = applicant_token(ALICE, case.case_id)
                yes = signer.confirmation_token(ALICE, case_id=case.case_id, digest=waiting.action.digest)
                message = CustomerMessage(text="yes", token=token, message_id=new_message_id(), confirmation=yes)
                await send_message(case.workflow, message)
                done = await world.wait_for(case.workflow, lambda view: view.status is CaseStatus.COMPLETED)
                executed = (await browser.get(f"/cases/{case.case_id}")).text
    finally:
        await cleanup()
        world.engine.dispose()
    assert case.case_id in inbox and "cancel_order" in inbox and "CNY 47.00" in inbox and "0 / 1" in inbox
    assert "cancel_order · QH-1006" in page and "processing → cancelled" in page and waiting.action.digest in page
    assert 'data-decision="approve"' in page
    assert approved == {
        "ok": True,
        "message": "You approved this change; it is carried out once everyone the merchant's policy names has agreed.",
    }
    assert half.status is CaseStatus.WAITING_APPROVAL and half.approved_by == ["chen"] and half.confirmed_by is None
    receipt = done.action_receipt
    assert receipt is not None and set(receipt.agreed_by) == {"alice", "chen"}
    assert world.order("QH-1006").status == OrderStatus.CANCELLED
    assert "Executed" in executed and receipt.receipt_id in executed

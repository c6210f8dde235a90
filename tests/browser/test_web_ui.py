"""A reviewer in the Temporal Web UI: a waiting QH-1001 refund shows its computed effect without a
query; a forged approval sent through the UI's update dialog fails there and leaves the case waiting;
the reviewer's own signed approval, sent the same way, completes the case with a receipt.

Runs a real dev server with its Web UI, the production worker (rehearsal model, seeded commerce
database, the stack's own demo keys) and Debian's chromium driven headless by Playwright. Takes a
screenshot of the waiting case; with SUPPORT_UPDATE_SCREENSHOT=1 it replaces docs/web-ui-waiting-case.png
(the one docs/approving.md shows), otherwise it stays in the test's temporary directory.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.async_api import expect
from temporalio.api.enums.v1 import EventType

from case_client import CaseHandle
from contracts.case import CaseStatus, CaseView
from contracts.credentials import approval_claims, sign
from contracts.identity import Identity
from contracts.names import REVIEW, EventKind
from keystore import demo_identity, directory_location, load_directory, load_private_key, private_key_path, reviewer_kid
from tests.browser.web_ui import UI_TIMEOUT_MS, WorkflowPage, chromium_page, web_ui_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]

QUESTION = "Please refund QH-1001 and explain the amount and the policy"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "web-ui-waiting-case.png"


def reviewer_for(state_dir: Path, tenant: str) -> Identity:
    """The first reviewer the stack's own directory lists for ``tenant`` (chen for qinghe)."""
    return load_directory(directory_location(state_dir, {})).reviewers(tenant)[0].identity()


def forged_approval(state_dir: Path, view: CaseView, *, claimed: str, key_of: str) -> str:
    """An approval of exactly this proposal that names ``claimed`` but is signed with ``key_of``'s key."""
    assert view.digest is not None
    claims = approval_claims(
        demo_identity(claimed),
        case_id=view.case_id,
        digest=view.digest,
        decision="approve",
        now=datetime.now(UTC),
        jti=uuid.uuid4().hex,
    )
    key = load_private_key(private_key_path(state_dir, reviewer_kid(key_of)))
    return sign(claims, key, kid=reviewer_kid(claimed))


async def timer_summaries(case: CaseHandle) -> list[str]:
    found = []
    async for event in case.workflow.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_TIMER_STARTED and event.user_metadata.summary.data:
            found.append(json.loads(event.user_metadata.summary.data))
    return found


async def digest_lines(workflow: WorkflowPage, digest: str) -> list[tuple[str, int]]:
    """Each text node of Current Details that holds the digest's first characters: its text without the
    surrounding blanks, and how many line boxes the browser laid the digest's characters out in (1:
    never wrapped). A digest wrapped by inline code, or split over nodes, shows otherwise."""
    body = workflow.markdown("current-details").locator("body")
    found = await body.evaluate(
        """(body, digest) => {
            const found = [];
            const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                const text = node.textContent;
                const start = text.indexOf(digest.slice(0, 16));
                if (start < 0) continue;
                const range = document.createRange();
                range.setStart(node, start);
                range.setEnd(node, Math.min(start + digest.length, text.length));
                found.push([text.trim(), range.getClientRects().length]);
            }
            return found;
        }""",
        digest,
    )
    return [(text, lines) for text, lines in found]


async def test_a_reviewer_sees_the_waiting_refund_and_decides_it_in_the_web_ui(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with chromium_page(tmp_path / "failed-page.png") as page, web_ui_stack(tmp_path, monkeypatch) as ui:
        stack = ui.stack
        case = await stack.cases.start(demo_identity("alice"), QUESTION, ttl_seconds=900)
        view = await case.settled(timeout=90, poll_seconds=0.2)
        assert view.status is CaseStatus.WAITING_APPROVAL, (view.status, view.reason)
        assert view.digest is not None and len(view.digest) == 64
        assert view.proposal is not None and view.proposal.amount_cents == 12900
        digest = view.digest
        workflow = WorkflowPage(page, ui.workflow_url(case.workflow.id))

        # The waiting case as a reviewer finds it, without running a query: the computed effect and
        # the full digest in Current Details, the digest in the memo, the approval timer's summary.
        await workflow.open("User Metadata")
        await expect(workflow.status).to_have_text("Running", ignore_case=True)
        await workflow.expect_markdown("summary", "alice", "QH-1001")
        await workflow.expect_markdown("current-details", "12900", "129.00", digest)
        assert await digest_lines(workflow, digest) == [(digest, 1)]  # one text node, the exact string, one line
        shot = SCREENSHOT if os.environ.get("SUPPORT_UPDATE_SCREENSHOT") == "1" else tmp_path / SCREENSHOT.name
        await workflow.screenshot(shot)
        assert shot.stat().st_size > 10_000
        await workflow.show("Memo")
        await expect(page.get_by_role("main")).to_contain_text(digest, timeout=UI_TIMEOUT_MS)
        timers = await timer_summaries(case)
        assert timers, "the approval timer carries no summary"
        await workflow.show("Timeline")
        await expect(page.get_by_text(timers[-1]).first).to_be_visible(timeout=UI_TIMEOUT_MS)

        # mei's key signing as chen: the update fails in the dialog with one sentence, and neither the
        # dialog nor the HTTP API answer the Web UI read shows the worker's stack trace.
        dialog = await workflow.open_update_dialog(REVIEW)
        forged = forged_approval(
            stack.state_dir, view, claimed=reviewer_for(stack.state_dir, view.tenant).subject, key_of="mei"
        )
        async with page.expect_response(lambda response: "/update/" in response.url) as answered:
            await workflow.submit_update(dialog, json.dumps({"approval_token": forged}))
        sentence = "bad_signature: the signature does not match reviewer chen's published key"
        alert = dialog.get_by_role("alert").filter(has_text="bad_signature")
        await expect(alert).to_be_visible(timeout=UI_TIMEOUT_MS)
        await expect(alert).to_contain_text(sentence)
        shown = await alert.inner_text()
        api_answer = await (await answered.value).text()
        for text in (shown, api_answer):
            assert sentence in text, text
            assert not any(trace in text for trace in ("Traceback", ".py", 'File "', "site-packages")), text
        refusals = [event.detail for event in await case.events() if event.kind == EventKind.REVIEW_REFUSED]
        assert refusals and refusals[-1].endswith("via update: bad_signature"), refusals
        assert (await case.status()).status is CaseStatus.WAITING_APPROVAL
        await workflow.close_dialog(dialog)

        # The tenant's reviewer's own signed approval: the update succeeds and the case completes.
        token = stack.signer.approval_token(
            reviewer_for(stack.state_dir, view.tenant), case_id=case.case_id, digest=digest, decision="approve"
        )
        dialog = await workflow.open_update_dialog(REVIEW)
        await workflow.submit_update(dialog, json.dumps({"approval_token": token}))
        await expect(page.get_by_text("Update successful").first).to_be_visible(timeout=UI_TIMEOUT_MS)
        await expect(dialog).to_be_hidden()
        ended = await case.ended(timeout=60)
        assert ended.status is CaseStatus.COMPLETED, (ended.status, ended.reason)
        assert ended.receipt is not None and ended.receipt.receipt_id.startswith("SIM-")

        await workflow.open("User Metadata")
        await expect(workflow.status).to_have_text("Completed", ignore_case=True, timeout=UI_TIMEOUT_MS)
        await workflow.expect_markdown("current-details", ended.receipt.receipt_id, "approved:", "by chen at ")
        assert (digest, 1) in await digest_lines(workflow, digest)  # beside the approval id APR-<its start>

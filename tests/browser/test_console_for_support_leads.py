"""A support lead's day in the reviewer console, in a real browser: a Chinese case, four-eyes, an outage
and a proposal that runs out of time while its page is open.

Debian's chromium (Playwright, headless) with a WebAuthn virtual authenticator per reviewer; the real
worker, dev server and commerce server (``devstack.rehearsal_stack``). qinghe's policy is set to two
reviewers from 100.00 CNY and dana is added as a second qinghe reviewer (people and policy are data in
the directory). Each reviewer enrolls from a link and signs in with the button the enrollment page shows.

alice asks in Chinese for QH-1001's refund: chen (whose browser runs in Asia/Shanghai) reads the case in
Chinese labels, the question as she wrote it, the time left and the expiry in his own time zone, and
approves; he is then told a second reviewer is awaited and offered no second approval. The worker stops:
dana's inbox still lists the waiting case from Temporal's visibility and says in one sentence that
decisions wait, and so does the case page, which offers no decision. The worker comes back: her page
updates itself and offers the decision; she approves, and QH-1001 is paid once. A QH-1002 refund whose
proposal lives 25 seconds expires while chen's page is open: the page stops offering the decision and
then shows the case expired, without a reload by anyone; nothing is paid.

Screenshots go to ``$SUPPORT_SCREENSHOTS`` (``docs/images`` to regenerate the committed ones), else to the
test's temporary directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect

from contracts.case import CaseStatus
from contracts.identity import Role
from contracts.knowledge import Language
from devstack.rehearsal_stack import rehearsal_stack
from keystore import demo_identity, directory_location, load_directory
from keystore.directory_edit import add_person, set_policy
from keystore.directory_file import write_directory
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

ENGLISH, CHINESE = Words(Language.EN), Words(Language.ZH)
CHINESE_QUESTION = "请为订单 QH-1001 办理退款，并说明金额和依据"
FOLLOW_TIMEOUT_MS = 45_000
"""A case page asks for its case's state every 5 s; an answer that waits on a stopped worker takes 5 s more."""


async def test_a_support_lead_works_through_a_chinese_case_four_eyes_an_outage_and_an_expiry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack_keys_only(monkeypatch)
    shots = screenshots_dir(tmp_path)
    async with (
        rehearsal_stack(tmp_path) as stack,
        console_server(stack, tmp_path) as origin,
        reviewer_pages(tmp_path, time_zones=("Asia/Shanghai", "UTC")) as (chen, dana),
    ):
        location = directory_location(stack.state_dir, {})
        directory = set_policy(
            add_person(load_directory(location), "dana", "qinghe", Role.REVIEWER, "Dana"), "qinghe", 10000
        )
        write_directory(Path(location), directory)
        for page in (chen, dana):
            await virtual_authenticator(page)
        await enroll_and_sign_in(chen, stack, origin, "chen", "Chen")
        await enroll_and_sign_in(dana, stack, origin, "dana", "Dana")

        # A Chinese case: Chinese labels, the customer's question as text, time left in chen's own zone.
        case = await stack.cases.start(demo_identity("alice"), CHINESE_QUESTION, language=Language.ZH, ttl_seconds=900)
        assert (await case.settled(timeout=90, poll_seconds=0.2)).status is CaseStatus.WAITING_APPROVAL
        await chen.goto(f"{origin}/cases/{case.case_id}")
        await expect(chen.locator("html")).to_have_attribute("lang", "zh")
        await expect(chen.get_by_role("heading", name=CHINESE(Text.QUESTION))).to_be_visible()
        await expect(chen.locator("blockquote.question")).to_have_text(CHINESE_QUESTION)
        await expect(chen.locator("#time-left")).to_contain_text("剩余")
        await expect(chen.locator('time[data-format="clock"]').first).to_contain_text("GMT+8")
        await expect(chen.get_by_role("row").filter(has_text="退款CNY 129.00 (12,900 分) · QH-1001")).to_be_visible()
        await chen.screenshot(path=str(shots / "console-case-zh.png"), full_page=True)

        # chen approves first of two: told a second reviewer is awaited, and offered no second approval.
        await chen.get_by_role("button", name=CHINESE(Text.APPROVE)).click()
        await expect(chen.get_by_role("status")).to_have_text(CHINESE(Text.YOU_APPROVED_WAITING))
        await chen.reload()
        await expect(chen.locator(".decided-by-you")).to_have_text(CHINESE(Text.YOU_APPROVED_WAITING))
        await expect(chen.get_by_role("button", name=CHINESE(Text.APPROVE))).to_have_count(0)
        await chen.screenshot(path=str(shots / "console-second-reviewer.png"), full_page=True)

        # dana reads the console in English, whatever the case's language.
        await dana.goto(origin)
        await dana.get_by_role("button", name="English").click()
        await expect(dana.locator("html")).to_have_attribute("lang", "en")

        # The worker stops: the case is still listed, and both pages say that decisions wait.
        async with stack.worker_stopped():
            await dana.goto(origin)
            row = dana.get_by_role("row").filter(has_text=case.case_id)
            await expect(row).to_contain_text("QH-1001")
            await expect(row).to_contain_text("alice")
            await expect(row).to_contain_text(ENGLISH(Text.UNKNOWN_NOW))
            await expect(dana.locator(".decisions-wait")).to_have_text(ENGLISH(Text.DECISIONS_WAIT))
            await expect(dana.get_by_text(ENGLISH(Text.NOTHING_WAITS))).to_have_count(0)
            await dana.screenshot(path=str(shots / "console-inbox-outage.png"), full_page=True)
            await dana.goto(f"{origin}/cases/{case.case_id}")
            await expect(dana.locator(".decisions-wait")).to_have_text(ENGLISH(Text.DECISIONS_WAIT))
            await expect(dana.locator("blockquote.question")).to_have_text(CHINESE_QUESTION)
            await expect(dana.get_by_role("button", name=ENGLISH(Text.APPROVE))).to_have_count(0)

        # The worker is back: dana's page updates itself and offers the decision; her approval pays once.
        approve = dana.get_by_role("button", name=ENGLISH(Text.APPROVE))
        await expect(approve).to_be_visible(timeout=FOLLOW_TIMEOUT_MS)
        await expect(dana.get_by_role("row").filter(has_text="1 of 2 approvals (chen)")).to_be_visible()
        await approve.click()
        await expect(dana.get_by_role("status")).to_have_text(ENGLISH(Text.ACCEPTED_APPROVE))
        ended = await case.ended(timeout=60)
        assert ended.status is CaseStatus.COMPLETED, (ended.status, ended.reason)
        assert refunds_paid(stack.state_dir, "QH-1001") == 1

        # A proposal runs out of time while its page is open: no decision offered, then the case expired.
        short = await stack.cases.start(demo_identity("alice"), "Please refund QH-1002", ttl_seconds=25)
        assert (await short.settled(timeout=60, poll_seconds=0.2)).status is CaseStatus.WAITING_APPROVAL
        await chen.goto(f"{origin}/cases/{short.case_id}")
        await expect(chen.get_by_role("button", name=ENGLISH(Text.APPROVE))).to_be_visible()
        await expect(chen.locator("p.status strong")).to_have_text(
            ENGLISH.status(CaseStatus.EXPIRED), timeout=FOLLOW_TIMEOUT_MS
        )
        await expect(chen.locator("#ceremony-result")).to_have_text(ENGLISH(Text.PROPOSAL_EXPIRED))
        await expect(chen.get_by_role("button", name=ENGLISH(Text.APPROVE))).to_have_count(0)
        assert refunds_paid(stack.state_dir, "QH-1002") == 0

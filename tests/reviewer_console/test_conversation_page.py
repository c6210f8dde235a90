"""The case page shows the whole conversation: every customer message and service reply in order, who
said it, when, under which credential (a customer's) or by whom it was written (a reply), as text never
markup, in English and Chinese; and the conversation's statuses (waiting for the customer, withdrawn by
the customer) wherever statuses are shown. Over ASGI with the case client's test double."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path

import httpx2

from contracts.case import CaseStatus, CaseView, Phase
from contracts.conversation import ConversationEntry, MessageCredential, ReplySource, Speaker
from contracts.knowledge import Language
from reviewer_console.conversation import conversation_lines
from reviewer_console.words import Text, Words
from tests.reviewer_console.console_double import CaseSourceDouble, waiting_view
from tests.reviewer_console.test_console_pages import signed_in

ENGLISH, CHINESE = Words(Language.EN), Words(Language.ZH)
HOSTILE = "QH-1001 <img src=x onerror=alert(1)>"
FINGERPRINT = "0123456789abcdef"
ASKED = "Which order is this about? <b>bold</b>"
RECORDS = "Your refund waits for a reviewer & will be paid once approved."
AT = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)


def _entries(question: str) -> list[ConversationEntry]:
    credential = MessageCredential(subject="alice", issuer="built-in", fingerprint=FINGERPRINT)
    said = [
        (Speaker.CUSTOMER, question, 1, None, None),
        (Speaker.SERVICE, ASKED, 1, ReplySource.MODEL_DRAFT, None),
        (Speaker.CUSTOMER, HOSTILE, 2, None, credential),
        (Speaker.SERVICE, RECORDS, 2, ReplySource.CASE_RECORDS, None),
    ]
    return [
        ConversationEntry(
            seq=seq,
            speaker=speaker,
            text=text,
            at=AT + timedelta(minutes=seq),
            turn=turn,
            source=source,
            credential=who,
        )
        for seq, (speaker, text, turn, source, who) in enumerate(said, start=1)
    ]


def _talking(view: CaseView, **changes: object) -> CaseView:
    return view.model_copy(update={"conversation": _entries(view.question), **changes})


def _conversation_section(page: str) -> str:
    match = re.search(r'<section class="conversation">(.*?)</section>', page, re.DOTALL)
    assert match, page
    return match.group(1)


async def test_the_case_page_lists_every_message_and_reply_in_order_as_text(
    client: httpx2.AsyncClient, state_dir: Path, cases: CaseSourceDouble
) -> None:
    cases.views["c0ffee000001"] = _talking(cases.views["c0ffee000001"], conversation_dropped=3)
    browser, _ = await signed_in(client, state_dir)
    page = (await browser.get("/cases/c0ffee000001")).text
    section = _conversation_section(page)
    assert "QH-1001 &lt;img src=x onerror=alert(1)&gt;" in section
    assert "<img" not in page and "<b>bold" not in page and "<script>alert" not in page
    words = unescape(section)
    assert ENGLISH(Text.CONVERSATION) in words and ENGLISH(Text.EARLIER_ENTRIES, count=3) in words
    said = [unescape(text) for text in re.findall(r'<blockquote class="said">(.*?)</blockquote>', section, re.DOTALL)]
    assert said == ["Please refund QH-1001 <script>alert(1)</script>", ASKED, HOSTILE, RECORDS]
    speakers = re.findall(r'data-speaker="(\w+)"', section)
    assert speakers == ["customer", "service", "customer", "service"]
    assert [int(value) for value in re.findall(r'<li value="(\d+)"', section)] == [1, 2, 3, 4]
    assert "customer alice" in words and ENGLISH(Text.FIRST_MESSAGE) in words
    assert f"under built-in credential {FINGERPRINT}" in words
    assert "reply to message 1, written by: model draft (reviewed)" in words
    assert "reply to message 2, written by: case records" in words
    assert section.count('data-format="clock">2026-12-07 08:0') == 4


async def test_the_conversation_reads_in_chinese_when_the_reviewer_chooses_chinese(
    client: httpx2.AsyncClient, state_dir: Path, cases: CaseSourceDouble
) -> None:
    cases.views["c0ffee000001"] = _talking(cases.views["c0ffee000001"])
    browser, _ = await signed_in(client, state_dir)
    chosen = await browser.client.post(
        "/language", data={"csrf_token": browser.csrf, "language": "zh", "next": "/cases/c0ffee000001"}
    )
    assert chosen.status_code == 303
    section = _conversation_section((await browser.get("/cases/c0ffee000001")).text)
    assert CHINESE(Text.CONVERSATION) in section and "客户 alice" in section and "客服" in section
    assert f"凭证：built-in，指纹 {FINGERPRINT}" in section
    assert "回复第 2 条消息，撰写者：案件记录" in section and "模型草稿（已审核）" in section


async def test_a_case_waiting_for_its_customer_says_until_when_and_is_not_in_the_inbox(
    client: httpx2.AsyncClient, state_dir: Path, cases: CaseSourceDouble
) -> None:
    until = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=24)
    waiting = _talking(
        cases.views["c0ffee000001"],
        status=CaseStatus.WAITING_CUSTOMER,
        phase=Phase.WAITING_CUSTOMER,
        proposal=None,
        digest=None,
        waiting_until=until,
    )
    cases.views["c0ffee000001"] = waiting
    browser, _ = await signed_in(client, state_dir)
    page = (await browser.get("/cases/c0ffee000001")).text
    assert f"<strong>{ENGLISH.status(CaseStatus.WAITING_CUSTOMER)}</strong>" in page
    assert "waiting for the customer" in page
    notice = ENGLISH(Text.WAITING_CUSTOMER_UNTIL, until=until.strftime("%Y-%m-%d %H:%M UTC"))
    assert notice in unescape(page) and "Approve with passkey" not in page
    rows = (await browser.get("/inbox/rows")).text
    assert "c0ffee000001" not in rows and ENGLISH(Text.NOTHING_WAITS) in rows


async def test_a_withdrawn_case_says_so_and_offers_no_decision_nor_does_its_listed_page(
    client: httpx2.AsyncClient, state_dir: Path, cases: CaseSourceDouble
) -> None:
    withdrawn = _talking(cases.views["c0ffee000001"], status=CaseStatus.WITHDRAWN)
    cases.views["c0ffee000001"] = withdrawn
    browser, _ = await signed_in(client, state_dir)
    page = (await browser.get("/cases/c0ffee000001")).text
    assert "<strong>withdrawn by the customer</strong>" in page
    assert ENGLISH(Text.WITHDRAWN_NOTICE) in page and "Approve with passkey" not in page
    cases.serving = False  # no worker: the page is what visibility lists, its status in words
    listed = (await browser.get("/cases/c0ffee000001")).text
    assert "<strong>withdrawn by the customer</strong>" in listed


def test_every_status_has_words_in_both_languages() -> None:
    for status in CaseStatus:
        english, chinese = ENGLISH.status(status), CHINESE.status(status)
        assert english and chinese and english != chinese
        assert ENGLISH.status_named(status.value) == english and CHINESE.status_named(status.value) == chinese
    assert ENGLISH.status(CaseStatus.WAITING_CUSTOMER) == "waiting for the customer"
    assert ENGLISH.status(CaseStatus.WITHDRAWN) == "withdrawn by the customer"
    assert CHINESE.status(CaseStatus.WITHDRAWN) == "客户已撤回"
    assert ENGLISH.status_named("something_new") == "something_new" and ENGLISH.status_named(None) == "-"


def test_a_case_before_conversations_shows_no_conversation() -> None:
    assert conversation_lines(waiting_view("c0ffee000002"), ENGLISH) == []

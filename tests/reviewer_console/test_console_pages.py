"""What a support lead reads in the console, over ASGI with the case client's test double: the inbox and
the case page while no worker answers, the customer's question, a reviewer who already approved, a
proposal out of time, the page's state for following its case, refusals as sentences with their code
beside them, and the labels in English or Chinese."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from case_client import ReviewRefused
from contracts.case import CaseView, ReviewOutcome
from contracts.credentials import SignedReview
from contracts.effect_card import EffectCard
from contracts.errors import WireCode
from contracts.knowledge import Language
from contracts.refusals import refusal_codes
from devstack.software_authenticator import SoftwareAuthenticator
from reviewer_console.words import Text, Words
from tests.reviewer_console.console_browser import Browser, enroll, sign_in, unb64
from tests.reviewer_console.console_double import DIGEST, CaseSourceDouble, waiting_view

ENGLISH, CHINESE = Words(Language.EN), Words(Language.ZH)


async def signed_in(client: httpx2.AsyncClient, state_dir: Path) -> tuple[Browser, SoftwareAuthenticator]:
    browser = Browser(client)
    authenticator, _ = await enroll(browser, state_dir, "chen")
    await sign_in(browser, authenticator)
    return browser, authenticator


def with_card(view: CaseView, *, approved_by: list[str], required: int = 2) -> CaseView:
    assert view.proposal is not None
    card = EffectCard(
        order_id="QH-1001",
        item=None,
        amount_cents=view.proposal.amount_cents,
        currency="CNY",
        rule_version="refund-rule/1",
        quote_id="q-1",
        reasons=["delivered 3 days ago"],
        cited_pages=[],
        digest=DIGEST,
        expires_at=view.proposal.expires_at,
        approvals_required=required,
        approved_by=approved_by,
    )
    return view.model_copy(update={"effect": card})


async def test_with_no_worker_the_inbox_still_lists_the_waiting_case_and_says_decisions_wait(
    client: httpx2.AsyncClient, state_dir: Path, cases: CaseSourceDouble
) -> None:
    browser, _ = await signed_in(client, state_dir)
    cases.serving = False
    rows = (await browser.get("/inbox/rows")).text
    assert ENGLISH(Text.DECISIONS_WAIT) in rows
    assert "c0ffee000001" in rows and "129.00" in rows and "QH-1001" in rows and "alice" in rows
    assert ENGLISH(Text.UNKNOWN_NOW) in rows and ENGLISH(Text.NOTHING_WAITS) not in rows
    assert "50u7h0000001" not in rows  # still another tenant's

    page = await browser.get("/cases/c0ffee000001")
    assert page.status_code == 200
    assert ENGLISH(Text.DECISIONS_WAIT) in page.text and 'data-serving="false"' in page.text
    assert "Please refund QH-1001 &lt;script&gt;" in page.text and "<script>alert" not in page.text
    assert "Approve with passkey" not in page.text
    missing = await browser.get("/cases/50u7h0000001")
    assert missing.status_code == 404

    cases.serving = True
    rows = (await browser.get("/inbox/rows")).text
    assert ENGLISH(Text.DECISIONS_WAIT) not in rows and "CNY 129.00" in rows and "0 / 1" in rows


async def test_the_case_page_shows_the_question_and_time_left_and_follows_its_case(
    client: httpx2.AsyncClient, state_dir: Path, cases: CaseSourceDouble
) -> None:
    browser, _ = await signed_in(client, state_dir)
    page = (await browser.get("/cases/c0ffee000001")).text
    assert ENGLISH(Text.QUESTION) in page and "Please refund QH-1001 &lt;script&gt;" in page
    assert 'id="time-left"' in page and " left</time>" in page
    assert "Approve with passkey" in page
    state = (await browser.client.get("/cases/c0ffee000001/state")).json()
    assert state == {"signed_in": True, "serving": True, "status": "waiting_approval", "digest": DIGEST, "approved": 0}
    cases.serving = False
    assert (await browser.client.get("/cases/c0ffee000001/state")).json() == {"signed_in": True, "serving": False}
    assert (await browser.client.get("/cases/50u7h0000001/state")).status_code == 200  # not asked: nothing read


async def test_a_proposal_out_of_time_offers_no_decision(
    client: httpx2.AsyncClient, state_dir: Path, cases: CaseSourceDouble
) -> None:
    cases.views["c0ffee000001"] = waiting_view("c0ffee000001", minutes_left=-1)
    browser, _ = await signed_in(client, state_dir)
    page = (await browser.get("/cases/c0ffee000001")).text
    assert ENGLISH(Text.PROPOSAL_EXPIRED) in page and "Approve with passkey" not in page


async def test_a_reviewer_who_approved_sees_that_a_second_reviewer_is_awaited(
    client: httpx2.AsyncClient, state_dir: Path, cases: CaseSourceDouble
) -> None:
    cases.views["c0ffee000001"] = with_card(waiting_view("c0ffee000001"), approved_by=["chen"])
    browser, _ = await signed_in(client, state_dir)
    page = (await browser.get("/cases/c0ffee000001")).text
    assert ENGLISH(Text.YOU_APPROVED_WAITING) in page and "Approve with passkey" not in page
    answer = await browser.post("/cases/c0ffee000001/review/options", {"decision": "approve"})
    assert answer.status_code == 409
    assert answer.json() == {
        "ok": False,
        "message": ENGLISH(Text.YOU_APPROVED_WAITING),
        "code": "reviewer_already_approved",
    }


async def test_a_first_of_two_approvals_is_answered_as_waiting_for_a_second_reviewer(
    client: httpx2.AsyncClient, state_dir: Path, cases: CaseSourceDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def first_of_two(self: object, decision: SignedReview) -> ReviewOutcome:
        return ReviewOutcome.model_validate(
            {
                "accepted": True,
                "status": "waiting_approval",
                "reason": "approve (1 of 2 approvals; waiting for another reviewer)",
                "approvals_missing": 1,
            }
        )

    monkeypatch.setattr("tests.reviewer_console.console_double.CaseHandleDouble.review", first_of_two)
    answer = await review_once(*await signed_in(client, state_dir))
    assert answer == {"ok": True, "message": ENGLISH(Text.YOU_APPROVED_WAITING), "waiting": True}


async def test_a_refused_review_is_a_sentence_in_the_pages_language_with_its_code_beside_it(
    client: httpx2.AsyncClient, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refused(self: object, decision: SignedReview) -> ReviewOutcome:
        raise ReviewRefused(
            WireCode("digest_mismatch"),
            "digest_mismatch: the approval was signed for another proposal (recorded in the case events)",
        )

    monkeypatch.setattr("tests.reviewer_console.console_double.CaseHandleDouble.review", refused)
    browser, authenticator = await signed_in(client, state_dir)
    english = await review_once(browser, authenticator)
    assert english["code"] == "digest_mismatch" and not english["ok"]
    assert (
        english["message"]
        == "Your review was refused: the approval was signed for another proposal (its digest differs)."
    )
    chinese = await review_once(browser, authenticator, language="zh")
    assert (
        chinese["message"] == "您的审批被拒绝：签署的是另一个提议（摘要不同）。"
        and chinese["code"] == "digest_mismatch"
    )


async def review_once(
    browser: Browser, authenticator: SoftwareAuthenticator, *, language: str = "en"
) -> dict[str, object]:
    begun = (
        await browser.post("/cases/c0ffee000001/review/options", {"decision": "approve", "language": language})
    ).json()
    credential = authenticator.assert_(unb64(begun["options"]["challenge"]))
    body = {"ceremony": begun["ceremony"], "credential": credential, "language": language}
    answer: dict[str, object] = (await browser.post("/cases/c0ffee000001/review/finish", body)).json()
    return answer


async def test_labels_follow_the_reviewers_choice_else_the_cases_language(
    client: httpx2.AsyncClient, state_dir: Path, cases: CaseSourceDouble
) -> None:
    cases.views["c0ffee000001"] = waiting_view("c0ffee000001").model_copy(update={"language": Language.ZH})
    browser, _ = await signed_in(client, state_dir)
    page = (await browser.get("/cases/c0ffee000001")).text
    assert '<html lang="zh">' in page and CHINESE(Text.QUESTION) in page and "用通行密钥批准" in page
    inbox = (await browser.get("/")).text
    assert '<html lang="en">' in inbox and ENGLISH(Text.INBOX_TITLE) in inbox

    chosen = await browser.client.post("/language", data={"csrf_token": browser.csrf, "language": "zh", "next": "/"})
    assert chosen.status_code == 303 and chosen.headers["location"] == "/"
    inbox = (await browser.get("/")).text
    assert CHINESE(Text.INBOX_TITLE) in inbox and "CNY 129.00" in inbox and "12,900 分" in inbox
    back = await browser.client.post(
        "/language", data={"csrf_token": browser.csrf, "language": "en", "next": "//evil.example"}
    )
    assert back.headers["location"] == "/"  # never another site
    assert '<html lang="en">' in (await browser.get("/cases/c0ffee000001")).text  # the choice beats the case's language
    forged = await browser.client.post("/language", data={"language": "zh", "next": "/"})
    assert forged.status_code == 403


def test_amounts_lead_with_the_currency_and_durations_read_in_either_language() -> None:
    assert ENGLISH.money(129000, "CNY") == "CNY 1,290.00" and ENGLISH.money(-5, "CNY") == "CNY -0.05"
    assert ENGLISH.cents(12900) == "12,900 cents" and CHINESE.cents(12900) == "12,900 分"
    assert (ENGLISH.time_left(245), CHINESE.time_left(7380)) == ("4 min 05 s left", "剩余 2 小时 03 分")
    assert ENGLISH.time_left(0) == "expired" and CHINESE.time_left(-3) == "已过期"
    assert CHINESE.refusal("reviewer_already_approved", reviewer="chen").startswith("审批人 chen 已经批准过")
    assert ENGLISH.refusal("not_a_code_we_know") == "the review was refused"
    for code in refusal_codes():
        assert CHINESE.refusal(code, reviewer="chen") != ENGLISH.refusal(code, reviewer="chen"), code


async def test_a_proposal_about_to_expire_is_marked_in_the_inbox_and_on_its_page(
    client: httpx2.AsyncClient, state_dir: Path, cases: CaseSourceDouble
) -> None:
    browser, _ = await signed_in(client, state_dir)
    soon = f'<strong class="soon">{ENGLISH(Text.EXPIRES_SOON)}</strong>'
    calm_rows = (await browser.get("/inbox/rows")).text
    calm_page = (await browser.get("/cases/c0ffee000001")).text

    cases.views["c0ffee000001"] = waiting_view("c0ffee000001", minutes_left=3)
    rows = (await browser.get("/inbox/rows")).text
    page = (await browser.get("/cases/c0ffee000001")).text

    assert soon not in calm_rows and soon not in calm_page  # ten minutes left
    assert soon in rows and soon in page
    assert (ENGLISH(Text.EXPIRES_SOON), CHINESE(Text.EXPIRES_SOON)) == ("expires soon", "即将过期")

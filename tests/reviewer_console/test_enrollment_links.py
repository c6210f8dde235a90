"""An enrollment link is bound to the browser session that opens it first, and its token never travels
in a URL: the page is ``/enroll`` (the token stays in the link's fragment, which a browser never
sends) and its script posts the token; another browser session presenting the same token, to claim it,
ask for its ceremony or finish one, is refused with one sentence and enrolls nothing; a link of the old
form (``/enroll?token=...``) is refused and cancelled, since its token has been in a request line."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
import pytest
from starlette.applications import Starlette

from devstack.software_authenticator import SoftwareAuthenticator
from keystore import directory_location, load_directory
from keystore.directory_file import DirectorySource
from keystore.enrollment import mint_enrollment_link
from reviewer_console import ConsoleConfig, ConsoleStore, build_app
from reviewer_console.actions import LINK_USED
from tests.reviewer_console.console_browser import ORIGIN, Browser, unb64
from tests.reviewer_console.console_double import CaseSourceDouble, waiting_view

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
ELSEWHERE = "This enrollment link was already opened in another browser session, and only that session may use it"
OLD_FORM = "This enrollment link is of an old form that puts its secret in the address"


@pytest.fixture
def app(state_dir: Path) -> Starlette:
    cases = CaseSourceDouble(waiting_view("c0ffee000001"))
    store = ConsoleStore.in_state_dir(state_dir)
    return build_app(cases, DirectorySource(directory_location(state_dir)), store, ConsoleConfig.for_origin(ORIGIN))


def _client(app: Starlette) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=ORIGIN)


@pytest.fixture
async def first(app: Starlette) -> AsyncIterator[Browser]:
    async with _client(app) as http:
        yield Browser(http)


@pytest.fixture
async def second(app: Starlette) -> AsyncIterator[Browser]:
    async with _client(app) as http:
        yield Browser(http)


def _token(state_dir: Path, subject: str = "chen") -> str:
    """A fresh link's token (test_enrollment_tokens checks where the link carries it)."""
    link = mint_enrollment_link(state_dir, subject, console_url=ORIGIN, now=datetime.now(UTC))
    return re.split(r"[#?]token=", link, maxsplit=1)[1]


def _passkeys(state_dir: Path, subject: str) -> list[str]:
    person = load_directory(directory_location(state_dir)).person(subject)
    assert person is not None
    return [passkey.credential_id for passkey in person.passkeys]


async def test_another_browser_session_presenting_the_same_link_is_refused_and_enrolls_nothing(
    first: Browser, second: Browser, state_dir: Path
) -> None:
    token = _token(state_dir)
    await first.get("/enroll")  # the page (test below), for its session and CSRF token
    begun = (await first.post("/enroll/options", {"token": token})).json()
    assert begun["ok"], begun

    # Someone else (a copy of the link from a log, a forwarded message) tries it in their own browser.
    await second.get("/enroll")
    intruder = SoftwareAuthenticator("localhost", ORIGIN)
    options = await second.post("/enroll/options", {"token": token})
    assert options.status_code == 403 and options.json()["ok"] is False, options.text
    assert options.json()["message"].startswith(ELSEWHERE) and "nothing was enrolled" in options.json()["message"]
    claim = await second.post("/enroll/claim", {"token": token})
    assert claim.status_code == 403 and claim.json()["message"].startswith(ELSEWHERE)
    forged = intruder.register(unb64(begun["options"]["challenge"]), unb64(begun["options"]["user"]["id"]))
    finish = await second.post("/enroll/finish", {"token": token, "ceremony": begun["ceremony"], "credential": forged})
    assert finish.status_code == 403 and finish.json()["message"].startswith(ELSEWHERE)
    assert _passkeys(state_dir, "chen") == []

    # The session that opened it first still finishes its ceremony (the refusals did not consume it).
    reviewer = SoftwareAuthenticator("localhost", ORIGIN)
    credential = reviewer.register(unb64(begun["options"]["challenge"]), unb64(begun["options"]["user"]["id"]))
    done = await first.post("/enroll/finish", {"token": token, "ceremony": begun["ceremony"], "credential": credential})
    assert done.json() == {"ok": True, "message": "Passkey enrolled for chen. Sign in with it.", "redirect": "/signin"}
    assert _passkeys(state_dir, "chen") == [reviewer.credential_id_b64]
    after = await second.post("/enroll/claim", {"token": token})
    assert after.status_code == 400 and after.json()["message"] == LINK_USED


async def test_the_page_holds_no_token_and_the_claim_names_the_reviewer_for_this_session_only(
    first: Browser, second: Browser, state_dir: Path
) -> None:
    token = _token(state_dir, "mei")
    page = await first.get("/enroll")
    assert page.status_code == 200 and token not in page.text
    assert 'id="enroll"' in page.text and 'role="alert"' in page.text
    for _ in range(2):  # a reload of the page claims it again for the same session
        claimed = await first.post("/enroll/claim", {"token": token})
        assert claimed.json() == {"ok": True, "message": "This link enrolls a passkey for mei.", "subject": "mei"}
    await second.get("/enroll")
    assert (await second.post("/enroll/claim", {"token": token})).status_code == 403
    no_csrf = await second.post("/enroll/claim", {"token": token}, csrf=False)
    assert no_csrf.status_code == 403 and "security token" in no_csrf.json()["message"]


async def test_a_link_of_the_old_form_is_refused_and_cancelled(first: Browser, state_dir: Path) -> None:
    token = _token(state_dir)
    old = await first.get(f"/enroll?token={token}")
    assert old.status_code == 400 and OLD_FORM in old.text and "cancelled" in old.text
    assert token not in old.text
    refused = await first.post("/enroll/claim", {"token": token})  # not even by the browser that opened it
    assert refused.status_code == 400 and refused.json()["message"] == LINK_USED
    assert _passkeys(state_dir, "chen") == []
    expired = mint_enrollment_link(state_dir, "chen", console_url=ORIGIN, now=NOW - timedelta(days=1))
    gone = await first.get("/enroll?token=" + re.split(r"[#?]token=", expired, maxsplit=1)[1])
    assert gone.status_code == 400 and "has expired" in gone.text


def test_the_first_session_to_claim_a_link_holds_it(tmp_path: Path) -> None:
    store = ConsoleStore.in_state_dir(tmp_path)
    expires = NOW + timedelta(minutes=15)
    assert store.claim_enrollment("0123456789abcdef", session_hash="a", expires_at=expires, now=NOW)
    assert store.claim_enrollment("0123456789abcdef", session_hash="a", expires_at=expires, now=NOW)
    assert not store.claim_enrollment("0123456789abcdef", session_hash="b", expires_at=expires, now=NOW)
    assert store.claim_enrollment("fedcba9876543210", session_hash="b", expires_at=expires, now=NOW)
    store.create_session(None, now=expires)  # removes what expired, the claims of expired links too
    assert store.claim_enrollment("0123456789abcdef", session_hash="b", expires_at=expires, now=expires)

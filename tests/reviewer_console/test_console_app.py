"""The reviewer console over ASGI (httpx2's transport, no socket), with the case client's test double
and the software authenticator (a test double of a platform authenticator): enrollment publishes the
passkey and burns the link, sign-in makes a hashed, HttpOnly, SameSite=Strict session, every POST needs
the session's CSRF token, another tenant's case reads like a missing one, and a review assertion is
bound to this case's digest and forwarded once."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from sqlmodel import Session, select
from starlette.applications import Starlette

from contracts.errors import ConfigurationError
from contracts.passkey import decode_passkey_approval, verify_passkey_approval
from devstack.software_authenticator import SoftwareAuthenticator
from keystore import directory_location, load_directory
from keystore.directory_file import DirectorySource
from reviewer_console import ConsoleConfig, ConsoleStore, build_app
from reviewer_console.actions import publish_passkey
from reviewer_console.store import ConsoleSession
from tests.reviewer_console.console_browser import ORIGIN, Browser, enroll, sign_in, unb64
from tests.reviewer_console.console_double import DIGEST, CaseSourceDouble, waiting_view


async def test_every_response_carries_the_security_headers_and_a_strict_httponly_cookie(
    client: httpx2.AsyncClient,
) -> None:
    response = await client.get("/signin")
    assert response.headers["content-security-policy"].startswith("default-src 'self'")
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "no-store"
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "secure" not in cookie
    assert "<script>" not in response.text.split("</head>")[1]  # no inline script: console.js only


async def test_over_https_the_cookie_is_secure_and_host_bound(
    state_dir: Path, cases: CaseSourceDouble, store: ConsoleStore
) -> None:
    config = ConsoleConfig.for_origin("https://console.example")
    assert config.rp_id == "console.example"
    app = build_app(cases, DirectorySource(directory_location(state_dir)), store, config)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="https://console.example") as http:
        cookie = (await http.get("/signin")).headers["set-cookie"]
    assert cookie.startswith("__Host-console_session=") and "Secure" in cookie


@pytest.mark.parametrize("origin", ["http://127.0.0.1:8090", "ftp://localhost", "http://localhost/path"])
def test_an_origin_that_is_not_a_secure_context_is_refused(origin: str) -> None:
    with pytest.raises(ConfigurationError):
        ConsoleConfig.for_origin(origin)


async def test_a_post_without_the_csrf_token_is_refused(client: httpx2.AsyncClient, state_dir: Path) -> None:
    browser = Browser(client)
    authenticator, _ = await enroll(browser, state_dir, "chen")
    await sign_in(browser, authenticator)
    for path, body in (("/signin/options", {}), ("/cases/c0ffee000001/review/options", {"decision": "approve"})):
        refused = await browser.post(path, body, csrf=False)
        assert refused.status_code == 403
        assert "security token" in refused.json()["message"]
        wrong = await client.post(path, json=body, headers={"X-CSRF-Token": "not-the-token"})
        assert wrong.status_code == 403
    assert (await browser.post("/cases/c0ffee000001/review/options", {"decision": "approve"})).status_code == 200


async def test_enrollment_publishes_the_passkey_and_the_link_works_once(
    client: httpx2.AsyncClient, state_dir: Path
) -> None:
    browser = Browser(client)
    authenticator, token = await enroll(browser, state_dir, "chen")
    chen = load_directory(directory_location(state_dir)).person("chen")
    assert chen is not None and [p.credential_id for p in chen.passkeys] == [authenticator.credential_id_b64]
    assert chen.passkeys[0].rp_id == "localhost" and chen.passkeys[0].origin == ORIGIN
    again = await browser.post("/enroll/claim", {"token": token})
    assert again.status_code == 400 and "already used" in again.json()["message"]
    refused = await browser.post("/enroll/options", {"token": token})
    assert refused.status_code == 400 and "already used" in refused.json()["message"]


async def test_a_directory_published_at_a_url_cannot_be_written(state_dir: Path) -> None:
    passkey = SoftwareAuthenticator("localhost", ORIGIN).passkey_record()
    with pytest.raises(ConfigurationError, match="cannot write"):
        publish_passkey("https://directory.example/directory.json", "chen", passkey)


async def test_sign_in_makes_a_new_session_stored_hashed(
    client: httpx2.AsyncClient, state_dir: Path, store: ConsoleStore
) -> None:
    browser = Browser(client)
    authenticator, _ = await enroll(browser, state_dir, "chen")
    anonymous = client.cookies["console_session"]
    finished = await sign_in(browser, authenticator)
    assert finished.json()["ok"]
    session_id = client.cookies["console_session"]
    assert session_id != anonymous
    with Session(store.engine) as db:
        rows = db.exec(select(ConsoleSession)).all()
    assert session_id not in {row.id_hash for row in rows}
    assert [row.subject for row in rows if row.subject] == ["chen"]
    inbox = await browser.get("/")
    assert (
        "Signed in as Chen" in inbox.text
        and "CNY 129.00" in inbox.text
        and "12,900 cents" in inbox.text
        and "c0ffee000001" in inbox.text
    )
    assert "50u7h0000001" not in inbox.text


async def test_a_passkey_nobody_enrolled_signs_nobody_in(client: httpx2.AsyncClient) -> None:
    browser = Browser(client)
    response = await sign_in(browser, SoftwareAuthenticator("localhost", ORIGIN))
    assert response.status_code == 403 and "not enrolled" in response.json()["message"]
    inbox = await browser.get("/")
    assert inbox.status_code == 303 and inbox.headers["location"] == "/signin"


async def test_case_text_is_escaped_and_another_tenants_case_is_no_such_case(
    app: Starlette, client: httpx2.AsyncClient, state_dir: Path
) -> None:
    chen = Browser(client)
    authenticator, _ = await enroll(chen, state_dir, "chen")
    await sign_in(chen, authenticator)
    page = await chen.get("/cases/c0ffee000001")
    assert page.status_code == 200
    assert "&lt;b&gt;129.00&lt;/b&gt;" in page.text and "<b>129.00</b>" not in page.text
    mei = Browser(httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=ORIGIN))
    mei_key, _ = await enroll(mei, state_dir, "mei")
    await sign_in(mei, mei_key)
    rows = (await mei.get("/inbox/rows")).text
    assert "50u7h0000001" in rows and "c0ffee000001" not in rows
    for path in ("/cases/c0ffee000001", "/cases/missing00001"):
        missing = await mei.get(path)
        assert missing.status_code == 404 and "No such case." in missing.text
    forged = await mei.post("/cases/c0ffee000001/review/options", {"decision": "approve"})
    assert forged.status_code == 404 and forged.json()["message"] == "No such case."


async def test_a_review_assertion_covers_this_digest_and_is_sent_once(
    client: httpx2.AsyncClient, state_dir: Path, cases: CaseSourceDouble
) -> None:
    browser = Browser(client)
    authenticator, _ = await enroll(browser, state_dir, "chen")
    await sign_in(browser, authenticator)
    begun = (await browser.post("/cases/c0ffee000001/review/options", {"decision": "approve"})).json()
    assert [entry["id"] for entry in begun["options"]["allowCredentials"]] == [authenticator.credential_id_b64]
    credential = authenticator.assert_(unb64(begun["options"]["challenge"]))
    elsewhere = await browser.post(
        "/cases/50u7h0000001/review/finish", {"ceremony": begun["ceremony"], "credential": credential}
    )
    assert elsewhere.status_code == 400 and cases.reviews == []  # taken: a ceremony is tried once
    begun = (await browser.post("/cases/c0ffee000001/review/options", {"decision": "approve"})).json()
    credential = authenticator.assert_(unb64(begun["options"]["challenge"]))
    body = {"ceremony": begun["ceremony"], "credential": credential}
    answer = (await browser.post("/cases/c0ffee000001/review/finish", body)).json()
    assert answer == {"ok": True, "message": "You approved this refund; it is being paid."}
    [(case_id, review)] = cases.reviews
    statement = decode_passkey_approval(review.approval_token).statement
    assert (case_id, statement.case_id, statement.digest, statement.decision) == (
        "c0ffee000001",
        "c0ffee000001",
        DIGEST,
        "approve",
    )
    claims = verify_passkey_approval(review.approval_token, load_directory(directory_location(state_dir)))
    assert claims.sub == "chen"
    replay = await browser.post("/cases/c0ffee000001/review/finish", body)
    assert replay.status_code == 400 and len(cases.reviews) == 1


async def test_an_inbox_with_nothing_waiting_says_so(state_dir: Path, store: ConsoleStore) -> None:
    south_only = CaseSourceDouble(waiting_view("50u7h0000001", tenant="south", applicant="bob"))
    app = build_app(south_only, DirectorySource(directory_location(state_dir)), store, ConsoleConfig.for_origin(ORIGIN))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=ORIGIN) as http:
        browser = Browser(http)
        authenticator, _ = await enroll(browser, state_dir, "chen")
        await sign_in(browser, authenticator)
        inbox = await browser.get("/")
    assert "Nothing waits for your approval." in inbox.text and "50u7h0000001" not in inbox.text


async def test_sign_out_is_a_form_post_with_the_csrf_field(client: httpx2.AsyncClient, state_dir: Path) -> None:
    browser = Browser(client)
    authenticator, _ = await enroll(browser, state_dir, "chen")
    await sign_in(browser, authenticator)
    refused = await client.post("/signout", data={"csrf_token": "forged"})
    assert refused.status_code == 403
    assert (await client.get("/")).status_code == 200  # still signed in
    signed_out = await client.post("/signout", data={"csrf_token": browser.csrf})
    assert signed_out.status_code == 303 and signed_out.headers["location"] == "/signin"
    assert (await client.get("/")).headers.get("location") == "/signin"

"""The console's browser stand-in for its ASGI tests: an httpx2 client that keeps cookies and the last
page's CSRF token, the software authenticator's enrollment and sign-in, and the fixtures every console
test builds the app with (the case client's test double holding one qinghe and one south case)."""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2

from devstack.software_authenticator import SoftwareAuthenticator
from keystore.enrollment import mint_enrollment_link

ORIGIN = "http://localhost:8090"
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)">')


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Browser:
    """An httpx2 client on the console app, keeping cookies and the last page's CSRF token."""

    def __init__(self, client: httpx2.AsyncClient) -> None:
        self.client = client
        self.csrf = ""

    async def get(self, path: str) -> httpx2.Response:
        response = await self.client.get(path)
        found = CSRF.search(response.text)
        if found:
            self.csrf = found.group(1)
        return response

    async def post(self, path: str, body: dict[str, Any], *, csrf: bool = True) -> httpx2.Response:
        headers = {"X-CSRF-Token": self.csrf} if csrf else {}
        return await self.client.post(path, json=body, headers=headers)


async def enroll(browser: Browser, state_dir: Path, subject: str) -> tuple[SoftwareAuthenticator, str]:
    link = mint_enrollment_link(state_dir, subject, console_url=ORIGIN, now=datetime.now(UTC))
    path, token = link.removeprefix(ORIGIN).split("#token=", 1)
    page = await browser.get(path)  # what a browser requests: the fragment stays behind
    assert page.status_code == 200, page.text
    assert token not in page.text
    claimed = (await browser.post("/enroll/claim", {"token": token})).json()
    assert claimed == {"ok": True, "message": f"This link enrolls a passkey for {subject}.", "subject": subject}
    begun = (await browser.post("/enroll/options", {"token": token})).json()
    assert begun["ok"], begun
    options = begun["options"]
    assert options["authenticatorSelection"]["userVerification"] == "required"
    authenticator = SoftwareAuthenticator("localhost", ORIGIN)
    credential = authenticator.register(unb64(options["challenge"]), unb64(options["user"]["id"]))
    finished = (
        await browser.post("/enroll/finish", {"token": token, "ceremony": begun["ceremony"], "credential": credential})
    ).json()
    assert finished["ok"], finished
    return authenticator, token


async def sign_in(browser: Browser, authenticator: SoftwareAuthenticator) -> httpx2.Response:
    await browser.get("/signin")
    begun = (await browser.post("/signin/options", {})).json()
    assert begun["options"]["userVerification"] == "required"
    credential = authenticator.assert_(unb64(begun["options"]["challenge"]))
    response = await browser.post("/signin/finish", {"ceremony": begun["ceremony"], "credential": credential})
    await browser.get("/")
    return response

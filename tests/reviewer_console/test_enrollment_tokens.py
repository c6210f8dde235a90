"""keystore.enrollment: a link is signed by the issuer for one reviewer, 15 minutes, audience
support-enroll, its token in the fragment (``/enroll#token=...``, never sent by a browser, so never in
a log); anything else is refused with a typed refusal. ``directory enroll`` prints it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from typer.testing import CliRunner

from cli.directory_commands import directory_app
from contracts.credentials import CredentialRefused
from keystore import (
    directory_location,
    load_directory,
    load_private_key,
    private_key_path,
    reviewer_kid,
)
from keystore.enrollment import ENROLLMENT_AUDIENCE, mint_enrollment_link, verify_enrollment_token

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


def token_of(link: str) -> str:
    """The token of a link: in its fragment, never in its query (which a browser sends and logs record)."""
    parts = urlsplit(link)
    assert parts.query == "", link
    return parse_qs(parts.fragment)["token"][0]


def test_a_link_names_the_console_and_verifies_for_the_reviewer_within_15_minutes(state_dir: Path) -> None:
    link = mint_enrollment_link(state_dir, "chen", console_url="http://localhost:8090/", now=NOW)
    assert link.startswith("http://localhost:8090/enroll#token=")
    directory = load_directory(directory_location(state_dir))
    claims = verify_enrollment_token(token_of(link), directory, now=NOW + timedelta(minutes=14))
    assert claims.sub == "chen"
    assert claims.exp - claims.iat == 15 * 60
    with pytest.raises(CredentialRefused) as expired:
        verify_enrollment_token(token_of(link), directory, now=NOW + timedelta(minutes=15))
    assert expired.value.code == "token_expired"


def test_two_links_have_different_ids(state_dir: Path) -> None:
    directory = load_directory(directory_location(state_dir))
    first, second = (
        verify_enrollment_token(
            token_of(mint_enrollment_link(state_dir, "chen", console_url="x", now=NOW)), directory, now=NOW
        )
        for _ in range(2)
    )
    assert first.jti != second.jti


@pytest.mark.parametrize(("subject", "code"), [("alice", "not_a_reviewer"), ("nobody", "unknown_person")])
def test_only_a_reviewer_of_the_directory_gets_a_link(state_dir: Path, subject: str, code: str) -> None:
    with pytest.raises(CredentialRefused) as refused:
        mint_enrollment_link(state_dir, subject, console_url="http://localhost:8090", now=NOW)
    assert refused.value.code == code


def test_a_token_signed_by_another_key_or_for_another_audience_is_refused(state_dir: Path) -> None:
    directory = load_directory(directory_location(state_dir))
    claims = {"sub": "chen", "jti": "0123456789abcdef", "iat": int(NOW.timestamp()), "exp": int(NOW.timestamp()) + 900}
    reviewer_key = load_private_key(private_key_path(state_dir, reviewer_kid("chen")))
    issuer_key = load_private_key(private_key_path(state_dir, "issuer"))
    forged = jwt.encode(
        {**claims, "aud": ENROLLMENT_AUDIENCE}, reviewer_key, algorithm="EdDSA", headers={"kid": "issuer"}
    )
    other_audience = jwt.encode(
        {**claims, "aud": "support-case"}, issuer_key, algorithm="EdDSA", headers={"kid": "issuer"}
    )
    for token, code in ((forged, "bad_signature"), (other_audience, "bad_signature"), ("not a token", "bad_signature")):
        with pytest.raises(CredentialRefused) as refused:
            verify_enrollment_token(token, directory, now=NOW)
        assert refused.value.code == code


def _enroll(state_dir: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(directory_app, ["enroll", *args], obj=SimpleNamespace(state_dir=state_dir))
    return result.exit_code, result.stdout, result.stderr


def test_directory_enroll_prints_the_link_on_one_line(state_dir: Path) -> None:
    code, out, err = _enroll(state_dir, "chen", "--console", "https://console.example")
    assert code == 0
    [line] = out.splitlines()
    assert line.startswith("https://console.example/enroll#token=")
    assert "?" not in line  # nothing a browser sends in its request line, so nothing a log records
    assert "in the first browser that opens it" in err
    directory = load_directory(directory_location(state_dir))
    assert verify_enrollment_token(token_of(line), directory, now=datetime.now(UTC)).sub == "chen"


@pytest.mark.parametrize("subject", ["alice", "nobody"])
def test_directory_enroll_refuses_a_non_reviewer_in_one_line(state_dir: Path, subject: str) -> None:
    code, out, err = _enroll(state_dir, subject)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("directory: ")


def test_directory_enroll_links_to_the_console_this_machine_configures(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONSOLE_ORIGIN", raising=False)
    monkeypatch.setenv("CONSOLE_PORT", "18090")
    assert _enroll(state_dir, "chen")[1].startswith("http://localhost:18090/enroll#token=")
    monkeypatch.setenv("CONSOLE_ORIGIN", "https://review.example/")
    assert _enroll(state_dir, "chen")[1].startswith("https://review.example/enroll#token=")
    assert _enroll(state_dir, "chen", "--console", "https://other.example")[1].startswith(
        "https://other.example/enroll"
    )
    monkeypatch.delenv("CONSOLE_ORIGIN")
    monkeypatch.setenv("CONSOLE_PORT", "not-a-port")
    assert _enroll(state_dir, "chen")[1].startswith("http://localhost:8090/enroll#token=")

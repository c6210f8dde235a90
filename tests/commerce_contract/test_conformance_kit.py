"""The conformance kit, run as a merchant runs it (``python -m commerce_contract``, a real process),
against our commerce server over stdio and over Streamable HTTP, and against broken copies of it.

Each server gets its own state dir holding what ``starter.py init`` writes: the seeded database, the
demo directory and the demo keys; the kit is given the same state dir, so it signs with the keys the
server trusts. The session's own key variables are removed, so the server reads its state dir's keys.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from commerce_contract.__main__ import main
from commerce_contract.runner import check_names
from commerce_server import database_url, make_engine, seed_fixture
from commerce_server.tokens import DATABASE_URL_ENV, SIGNING_KEY_ENV, TOKEN_SECRET_ENV
from commerce_server.tokens import DIRECTORY_ENV as COMMERCE_DIRECTORY_ENV
from contracts.credentials import COMMERCE_KID
from keystore import DIRECTORY_ENV, create_demo_directory, directory_location, private_key_path
from tests.commerce_service import PROJECT_ROOT, start_http_commerce

KEY_VARIABLES = (DIRECTORY_ENV, COMMERCE_DIRECTORY_ENV, SIGNING_KEY_ENV, DATABASE_URL_ENV)

DIGEST_IGNORED = """
import sys
from commerce_server import __main__ as entry, refunds

checked = refunds.check_approval

def ignoring_the_digest(claims, directory, **rules):
    checked(claims, directory, **(rules | {"digest": claims.digest}))

refunds.check_approval = ignoring_the_digest
sys.exit(entry.main())
"""
"""Our server with the approval's digest check taken out: it pays an approval of another proposal."""

NO_REPLAY = """
import sys
from commerce_server import __main__ as entry, refunds
from contracts.errors import error_from_code

def forgetting(self, recorded, approval, claims):
    raise error_from_code("quote_changed", "This server keeps no idempotency record.")

refunds.RefundSettlement._replay = forgetting
sys.exit(entry.main())
"""
"""Our server that does not answer a repeated approval with its receipt: not idempotent."""


def initialised(state_dir: Path) -> Path:
    """What ``starter.py init`` writes: the seeded database, the demo directory and keys."""
    state_dir.mkdir(parents=True)
    seed_fixture(make_engine(database_url(state_dir)))
    create_demo_directory(state_dir)
    return state_dir


def clean_environment(**extra: str) -> dict[str, str]:
    environ = {name: value for name, value in os.environ.items() if name not in KEY_VARIABLES}
    return {**environ, **extra}


def run_kit(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "commerce_contract", *arguments],
        cwd=PROJECT_ROOT,
        env=env or clean_environment(),
        capture_output=True,
        text=True,
        timeout=180,
    )


def stdio_server(state_dir: Path, script: Path | None = None) -> str:
    entry = str(script) if script is not None else "-m commerce_server"
    return f"{sys.executable} {entry} --profile alice --state-dir {state_dir}"


def verdicts(output: str) -> dict[str, str]:
    """Each check's verdict (PASS/FAIL) by name, from the kit's one line per check."""
    return dict((name, verdict) for verdict, name in re.findall(r"^(PASS|FAIL) (\w+):", output, re.MULTILINE))


def test_the_kit_passes_against_our_server_over_stdio_and_each_run_pays_the_next_order(tmp_path: Path) -> None:
    state = initialised(tmp_path / "state")

    first = run_kit("--stdio", stdio_server(state), "--state-dir", str(state))
    second = run_kit("--stdio", stdio_server(state), "--state-dir", str(state))

    assert first.returncode == 0, first.stdout + first.stderr
    assert verdicts(first.stdout) == dict.fromkeys(check_names(), "PASS")
    assert "13 of 13 checks passed" in first.stdout
    assert second.returncode == 0, second.stdout + second.stderr
    assert "PAID (simulated) 12900 cents on QH-1001 once" in first.stdout
    assert "PAID (simulated) 17900 cents on QH-1002 once" in second.stdout


def test_the_kit_passes_against_our_server_over_http(tmp_path: Path) -> None:
    state = initialised(tmp_path / "state")
    # The launcher starts from this process's environment: name the state dir's keys over the session's.
    own_keys = {
        COMMERCE_DIRECTORY_ENV: directory_location(state, {}),
        SIGNING_KEY_ENV: str(private_key_path(state, COMMERCE_KID)),
    }
    commerce = start_http_commerce(state, env=own_keys)
    try:
        result = run_kit(
            "--url",
            commerce.url,
            "--state-dir",
            str(state),
            env=clean_environment(**{TOKEN_SECRET_ENV: commerce.secret}),
        )
    finally:
        commerce.process.terminate()
        commerce.process.wait(timeout=30)

    assert result.returncode == 0, result.stdout + result.stderr
    assert verdicts(result.stdout) == dict.fromkeys(check_names(), "PASS")
    assert f"against Streamable HTTP: {commerce.url}; conforms" in result.stdout


def test_the_kit_fails_a_server_that_ignores_the_digest_and_names_the_check(tmp_path: Path) -> None:
    state = initialised(tmp_path / "state")
    script = tmp_path / "digest_ignored.py"
    script.write_text(DIGEST_IGNORED, encoding="utf-8")

    result = run_kit("--stdio", stdio_server(state, script), "--state-dir", str(state))

    assert result.returncode == 1, result.stdout + result.stderr
    seen = verdicts(result.stdout)
    assert seen["approval_another_digest"] == "FAIL"
    assert re.search(r"^FAIL approval_another_digest: PAID the approval \(receipt SIM-", result.stdout, re.MULTILINE)
    assert (seen["tool_list"], seen["approval_unsigned"], seen["approval_wrong_signer"]) == ("PASS", "PASS", "PASS")
    assert "failed: approval_another_digest" in result.stdout


def test_the_kit_fails_a_server_that_is_not_idempotent_and_names_the_check(tmp_path: Path) -> None:
    state = initialised(tmp_path / "state")
    script = tmp_path / "no_replay.py"
    script.write_text(NO_REPLAY, encoding="utf-8")

    result = run_kit("--stdio", stdio_server(state, script), "--state-dir", str(state))

    assert result.returncode == 1, result.stdout + result.stderr
    seen = verdicts(result.stdout)
    assert seen["idempotent_refund"] == "FAIL"
    assert "the same approval sent again was not answered with its receipt" in result.stdout
    assert [name for name, verdict in seen.items() if verdict == "FAIL"] == ["idempotent_refund"]


def test_bad_arguments_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state = initialised(tmp_path / "state")
    monkeypatch.delenv(TOKEN_SECRET_ENV, raising=False)

    no_target = _exit_status(lambda: main(["--state-dir", str(state)]))
    no_secret = main(["--url", "http://127.0.0.1:1/mcp", "--state-dir", str(state)])
    no_keys = main(["--stdio", "true", "--state-dir", str(tmp_path / "empty")])
    errors = capsys.readouterr().err.splitlines()

    assert (no_target, no_secret, no_keys) == (2, 2, 2)
    assert len(errors) == 3
    assert "one of the arguments --stdio --url is required" in errors[0]
    assert f"Set {TOKEN_SECRET_ENV}" in errors[1]
    assert "No directory at" in errors[2]


def _exit_status(call: Callable[[], int]) -> int:
    try:
        return call()
    except SystemExit as exited:
        return int(exited.code or 0)

"""The conformance kit, run as a merchant runs it (``python -m commerce_contract``, a real process),
against our commerce server over stdio and over Streamable HTTP, and against broken copies of it.

Each server gets its own state dir holding what ``starter.py init`` writes: the seeded database, the
demo directory and the demo keys; the kit is given the same state dir, so it signs with the keys the
server trusts. The session's own key variables are removed, so the server reads its state dir's keys.
The demo directory gives no tenant a four-eyes policy, so there the kit reports the policy check as not
checked; a state dir edited as a merchant would (a second reviewer and a policy) checks it too.

The backstop's wrong servers (``wrong_server.py``) are our server with one check patched away in its
own process: the applicant token's, the approval policy's, the reviewer's tenant's.
"""

from __future__ import annotations

import json
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
from contracts.action_policy import ActionKind, ActionRule
from contracts.credentials import COMMERCE_KID
from contracts.identity import Role
from keystore import (
    DIRECTORY_ENV,
    DIRECTORY_FILE,
    create_demo_directory,
    create_key_pair,
    directory_location,
    keys_dir,
    load_directory,
    private_key_path,
    reviewer_kid,
    write_directory,
)
from keystore.directory_edit import add_person, set_action, set_policy
from tests.commerce_service import PROJECT_ROOT, start_http_commerce

KEY_VARIABLES = (DIRECTORY_ENV, COMMERCE_DIRECTORY_ENV, SIGNING_KEY_ENV, DATABASE_URL_ENV)

DIGEST_IGNORED = """
import sys
from commerce_server import __main__ as entry, refunds

from dataclasses import replace

checked = refunds.approval_meets

def ignoring_the_digest(signed, terms, directory, **rules):
    return checked(signed, replace(terms, digest=signed.claims.digest), directory, **rules)

refunds.approval_meets = ignoring_the_digest
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


def initialised(state_dir: Path, *, allow: tuple[ActionKind, ...] = tuple(ActionKind)) -> Path:
    """What ``starter.py init`` writes: the seeded database, the demo directory and keys; and, as a
    merchant's test directory would, qinghe allowing the actions ``allow`` names (the customer confirms,
    one reviewer approves), so that their checks run."""
    state_dir.mkdir(parents=True)
    seed_fixture(make_engine(database_url(state_dir)))
    create_demo_directory(state_dir)
    path = keys_dir(state_dir) / DIRECTORY_FILE
    for kind in allow:
        write_directory(path, set_action(load_directory(str(path)), "qinghe", kind, ActionRule()))
    return state_dir


def with_four_eyes(state_dir: Path, *, from_cents: int) -> Path:
    """What a merchant's test directory adds for the policy check: a second reviewer of the customer's
    tenant (dana, with her key) and a policy that needs two reviewers from ``from_cents`` cents."""
    path = keys_dir(state_dir) / DIRECTORY_FILE
    jwk, _ = create_key_pair(state_dir, reviewer_kid("dana"))
    directory = add_person(load_directory(str(path)), "dana", "qinghe", Role.REVIEWER, "Dana", jwk)
    write_directory(path, set_policy(directory, "qinghe", from_cents))
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


def stdio_server(state_dir: Path, script: Path | None = None, *, wrong: str | None = None) -> str:
    entry = str(script) if script is not None else "-m commerce_server"
    if wrong is not None:
        entry = f"-m tests.commerce_contract.wrong_server {wrong}"
    return f"{sys.executable} {entry} --profile alice --state-dir {state_dir}"


def verdicts(output: str) -> dict[str, str]:
    """Each check's verdict (PASS/FAIL/SKIP) by name, from the kit's one line per check."""
    return dict((name, verdict) for verdict, name in re.findall(r"^(PASS|FAIL|SKIP) (\w+):", output, re.MULTILINE))


ALL = len(check_names())
NOT_SHOWN = {"approval_policy_not_met": "SKIP", "action_default_deny": "SKIP"}
"""What the demo directory with every action allowed cannot show: a four-eyes refund, and default deny."""
ACTION_CHECKS = [name for name in check_names() if name.startswith("action_")]
BACKSTOP = (
    "applicant_token_missing",
    "applicant_token_of_another_customer",
    "applicant_token_of_another_case",
    "approval_reviewer_of_another_tenant",
    "approval_policy_not_met",
    "approval_after_case_closed",
)


def test_the_kit_passes_against_our_server_over_stdio_and_each_run_pays_the_next_order(tmp_path: Path) -> None:
    state = initialised(tmp_path / "state")

    first = run_kit("--stdio", stdio_server(state), "--state-dir", str(state))
    second = run_kit("--stdio", stdio_server(state), "--state-dir", str(state))

    assert first.returncode == 0, first.stdout + first.stderr
    assert verdicts(first.stdout) == dict.fromkeys(check_names(), "PASS") | NOT_SHOWN
    assert set(BACKSTOP) <= set(check_names())
    assert f"{ALL - 2} of {ALL} checks passed" in first.stdout
    assert "; conforms; not checked (the fixture cannot show them): approval_policy_not_met" in first.stdout
    assert "SKIP approval_policy_not_met: not checked: the approval policy of tenant 'qinghe'" in first.stdout
    assert second.returncode == 0, second.stdout + second.stderr
    assert "PAID (simulated) 12900 cents on QH-1001 once" in first.stdout
    assert "PAID (simulated) 17900 cents on QH-1002 once" in second.stdout
    assert re.search(
        r"^PASS action_executes_once: EXECUTED cancel_order on QH-1006 once; signed receipt ACT-", first.stdout, re.M
    )
    # Its one processing order cancelled, the second run has nothing to cancel: not checked, never passed.
    later = verdicts(second.stdout)
    assert later.pop("action_foreign_order") == "PASS"
    assert later.pop("action_address_not_eligible") == "PASS"
    # A return is previewed, never executed: every run checks the same one.
    assert (later.pop("action_return_preview_exact"), later.pop("action_return_not_eligible")) == ("PASS", "PASS")
    assert (later.pop("action_exchange_preview_exact"), later.pop("action_exchange_not_eligible")) == ("PASS", "PASS")
    account = (later.pop("action_default_address_preview_exact"), later.pop("action_default_address_not_eligible"))
    assert account == ("PASS", "PASS")
    # A refund as an action is previewed only: the second run's is of the order the refund checks left unpaid.
    assert (later.pop("action_refund_preview_exact"), later.pop("action_refund_not_eligible")) == ("PASS", "PASS")
    assert re.search(r"^PASS action_refund_preview_exact: QH-1002: 17900 cents", first.stdout, re.M), first.stdout
    assert re.search(r"^PASS action_refund_preview_exact: QH-1009: 8000 cents", second.stdout, re.M), second.stdout
    assert all(later[name] == "SKIP" for name in ACTION_CHECKS if name in later), second.stdout
    assert "no order of cancellable_orders ['QH-1006'] is still processing" in second.stdout


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
    assert verdicts(result.stdout) == dict.fromkeys(check_names(), "PASS") | NOT_SHOWN
    assert f"against Streamable HTTP: {commerce.url}; conforms" in result.stdout


def test_the_kit_checks_the_four_eyes_policy_where_the_fixture_provides_one(tmp_path: Path) -> None:
    # Every refund of qinghe needs two reviewers: the kit also pays with two (chen and dana).
    state = with_four_eyes(initialised(tmp_path / "state"), from_cents=100)
    fixture = tmp_path / "fixture.json"
    fixture.write_text(
        json.dumps(
            {
                "customer": "alice",
                "refundable_orders": ["QH-1001", "QH-1002"],
                "foreign_order": "QH-2001",
                "other_customer": "lin",
                "foreign_reviewer": "mei",
                "four_eyes_order": "QH-1002",
                "cancellable_orders": ["QH-1006"],
                "returnable_orders": ["QH-1004"],
                "exchange_sku": "DESK-09",
            }
        ),
        encoding="utf-8",
    )

    result = run_kit("--stdio", stdio_server(state), "--state-dir", str(state), "--fixture", str(fixture))

    assert result.returncode == 0, result.stdout + result.stderr
    assert verdicts(result.stdout) == dict.fromkeys(check_names(), "PASS") | {"action_default_deny": "SKIP"}
    assert f"{ALL - 1} of {ALL} checks passed" in result.stdout
    assert result.stdout.rstrip().endswith(
        "; conforms; not checked (the fixture cannot show them): action_default_deny"
    )
    assert "PASS approval_policy_not_met: 1 reviewer's approval of 17900 cents on QH-1002 (policy: 2)" in result.stdout
    assert "PAID (simulated) 12900 cents on QH-1001 once" in result.stdout


@pytest.mark.parametrize(
    ("wrong", "check", "four_eyes_from"),
    [
        ("no-applicant-check", "applicant_token_missing", None),
        ("no-policy-check", "approval_policy_not_met", 15000),
        ("no-reviewer-tenant-check", "approval_reviewer_of_another_tenant", None),
    ],
)
def test_the_kit_fails_a_server_without_a_backstop_check_and_names_it(
    tmp_path: Path, wrong: str, check: str, four_eyes_from: int | None
) -> None:
    state = initialised(tmp_path / "state")
    if four_eyes_from is not None:  # QH-1002 (17900 cents) needs two reviewers, QH-1001 (12900) one
        with_four_eyes(state, from_cents=four_eyes_from)

    result = run_kit("--stdio", stdio_server(state, wrong=wrong), "--state-dir", str(state))

    assert result.returncode == 1, result.stdout + result.stderr
    seen = verdicts(result.stdout)
    failed = [name for name, verdict in seen.items() if verdict == "FAIL"]
    assert failed[0] == check, result.stdout
    assert re.search(rf"^FAIL {check}: PAID .* \(receipt SIM-", result.stdout, re.MULTILINE), result.stdout
    assert f"failed: {check}" in result.stdout
    names = check_names()
    assert all(seen[name] == "PASS" for name in names[: names.index(check)]), result.stdout
    if wrong == "no-policy-check":  # the unpaid QH-1001 is still paid once, correctly: nothing else fails
        assert failed == [check], result.stdout


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


def test_the_kit_checks_default_deny_where_the_tenant_allows_no_action(tmp_path: Path) -> None:
    state = initialised(tmp_path / "state", allow=())

    result = run_kit("--stdio", stdio_server(state), "--state-dir", str(state))

    assert result.returncode == 0, result.stdout + result.stderr
    seen = verdicts(result.stdout)
    assert seen["action_default_deny"] == "PASS"
    assert (
        "PASS action_default_deny: cancel_order, change_order_address, return_items, exchange_items, "
        "change_default_address, refund_order, modify_order_items, change_order_payment, which tenant 'qinghe' "
        "does not allow, refused action_not_allowed" in result.stdout
    )
    assert all(seen[name] == "SKIP" for name in ACTION_CHECKS if name != "action_default_deny"), result.stdout
    assert "tenant 'qinghe' allows no cancel_order (default deny is checked with it" in result.stdout


def test_the_kit_checks_default_deny_with_the_kinds_a_tenant_does_not_allow(tmp_path: Path) -> None:
    state = initialised(tmp_path / "state", allow=(ActionKind.CANCEL_ORDER,))

    result = run_kit("--stdio", stdio_server(state), "--state-dir", str(state))

    assert result.returncode == 0, result.stdout + result.stderr
    seen = verdicts(result.stdout)
    assert (seen["action_default_deny"], seen["action_executes_once"]) == ("PASS", "PASS")
    assert (seen["action_address_preview_exact"], seen["action_address_not_eligible"]) == ("SKIP", "SKIP")
    assert (
        "PASS action_default_deny: change_order_address, return_items, exchange_items, change_default_address, "
        "refund_order, modify_order_items, change_order_payment, which tenant 'qinghe' does not allow" in result.stdout
    )


@pytest.mark.parametrize(
    ("wrong", "check", "said"),
    [
        ("no-confirmation-check", "action_unconfirmed", "EXECUTED an execution without the customer's confirmation"),
        ("no-expiry-check", "action_expired", "EXECUTED an execution of an expired proposal"),
        ("conflicts-as-replays", "action_conflicting_replay", "EXECUTED the executed proposal's key with another body"),
    ],
)
def test_the_kit_fails_a_wrong_action_server_and_names_the_check(
    tmp_path: Path, wrong: str, check: str, said: str
) -> None:
    state = initialised(tmp_path / "state")

    result = run_kit("--stdio", stdio_server(state, wrong=wrong), "--state-dir", str(state))

    assert result.returncode == 1, result.stdout + result.stderr
    seen = verdicts(result.stdout)
    failed = [name for name, verdict in seen.items() if verdict == "FAIL"]
    assert failed[0] == check, result.stdout
    assert re.search(rf"^FAIL {check}: {re.escape(said)} \(receipt ACT-", result.stdout, re.MULTILINE), result.stdout
    assert f"failed: {check}" in result.stdout
    names = check_names()
    assert all(seen[name] in ("PASS", "SKIP") for name in names[: names.index(check)]), result.stdout


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

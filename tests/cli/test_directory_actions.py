"""``starter.py directory allow-action`` / ``deny-action``: which writes a tenant allows is data. Each
edit prints one line and leaves a directory every reader accepts; a refusal is one line, exit 2, and the
file byte-identical."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner, Result

import cli.action_policy_commands  # noqa: F401  (registers the commands on the directory sub-app)
from cli.directory_commands import directory_app
from cli.exit_codes import ExitCode
from contracts.action_policy import ActionKind, ActionRule
from keystore import DIRECTORY_ENV, create_demo_directory, directory_location, load_directory


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(DIRECTORY_ENV, raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    create_demo_directory(tmp_path)
    return tmp_path


def _run(state_dir: Path, *args: str) -> Result:
    return CliRunner().invoke(directory_app, list(args), obj=SimpleNamespace(state_dir=state_dir))


def _file(state_dir: Path) -> Path:
    return Path(directory_location(state_dir, {}))


def test_allow_then_deny_an_action_and_show_says_which(state_dir: Path) -> None:
    allowed = _run(
        state_dir,
        "allow-action",
        "qinghe",
        "cancel_order",
        "--reviewers",
        "2",
        "--reviewers-from",
        "5000",
        "--max-per-day",
        "3",
        "--expires-minutes",
        "60",
    )
    shown = _run(state_dir, "show")
    rule = load_directory(str(_file(state_dir))).action_rule("qinghe", ActionKind.CANCEL_ORDER)
    denied = _run(state_dir, "deny-action", "qinghe", "cancel_order")

    assert allowed.exit_code == 0, allowed.stderr
    assert allowed.stdout.startswith(
        "tenant qinghe: cancel_order allowed: the customer confirms and 2 reviewer(s) approve from 5000 cents; "
        "proposals hold 60 minutes; at most 3 a day per customer (directory "
    )
    assert rule == ActionRule(reviewers=2, reviewers_from_cents=5000, max_per_customer_per_day=3, expires_minutes=60)
    assert "tenant qinghe: cancel_order allowed" in shown.stdout
    assert "tenant south: no action allowed (default deny)" in shown.stdout
    assert denied.exit_code == 0 and denied.stdout.startswith("tenant qinghe: cancel_order denied")
    assert load_directory(str(_file(state_dir))).action_rule("qinghe", ActionKind.CANCEL_ORDER) is None


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("allow-action", "east", "cancel_order"), "directory: unknown tenant 'east'"),
        (
            ("allow-action", "qinghe", "cancel_order", "--no-customer-confirms", "--reviewers", "0"),
            "directory: an action nobody agrees to needs a daily cap (max_per_customer_per_day)",
        ),
    ],
)
def test_a_bad_rule_is_one_line_and_changes_nothing(state_dir: Path, args: tuple[str, ...], problem: str) -> None:
    before = _file(state_dir).read_bytes()

    result = _run(state_dir, *args)

    assert result.exit_code == ExitCode.REFUSED
    assert result.stderr.splitlines() == [problem]
    assert _file(state_dir).read_bytes() == before


def test_an_unknown_action_is_refused_by_name(state_dir: Path) -> None:
    result = _run(state_dir, "allow-action", "qinghe", "refund_everything")

    assert result.exit_code == 2
    assert "'refund_everything' is not one of 'cancel_order'" in result.stderr


def test_an_escalation_reviewer_is_one_of_the_tenants_reviewers_or_nobody(state_dir: Path) -> None:
    before = _file(state_dir).read_bytes()
    customer = _run(state_dir, "escalate", "qinghe", "alice")
    foreign = _run(state_dir, "escalate", "qinghe", "mei")
    neither = _run(state_dir, "escalate", "qinghe")
    both = _run(state_dir, "escalate", "qinghe", "chen", "--nobody")
    refused_bytes = _file(state_dir).read_bytes()
    named = _run(state_dir, "escalate", "qinghe", "chen")
    asked = load_directory(str(_file(state_dir))).escalation_reviewer("qinghe")
    cleared = _run(state_dir, "escalate", "qinghe", "--nobody")

    for refused in (customer, foreign, neither, both):
        assert refused.exit_code == ExitCode.REFUSED and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "'alice', who is not one of its reviewers" in customer.stderr and "'mei'" in foreign.stderr
    assert refused_bytes == before
    assert named.exit_code == 0 and named.stdout.startswith("tenant qinghe: chen is asked to decide proposals")
    assert asked == "chen"
    assert cleared.exit_code == 0 and load_directory(str(_file(state_dir))).escalation_reviewer("qinghe") is None
    assert _file(state_dir).read_bytes() == before  # nobody asked again: written as release 0.11 wrote it

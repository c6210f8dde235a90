"""``starter.py directory``: people are data. Each edit prints one line and leaves a directory every
reader accepts; each refusal is one ``directory: ...`` line, exit 2, and the file byte-identical.

The commands run in-process through typer's runner on the ``directory`` sub-app, with the state dir the
main callback would hand them; one test runs ``starter.py`` itself as a user does.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner, Result

from cli.directory_commands import directory_app
from cli.exit_codes import ExitCode
from contracts.directory import Directory
from keystore import (
    DIRECTORY_ENV,
    create_demo_directory,
    directory_location,
    load_directory,
    load_private_key,
    private_key_path,
    public_jwk,
)

ROOT = Path(__file__).resolve().parents[2]
DEMO_PEOPLE = ("alice", "bob", "chen", "lin", "mei")


@pytest.fixture(autouse=True)
def _own_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DIRECTORY_ENV, raising=False)
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    create_demo_directory(tmp_path)
    return tmp_path


def _run(state_dir: Path, *args: str) -> Result:
    return CliRunner().invoke(directory_app, list(args), obj=SimpleNamespace(state_dir=state_dir))


def _ok(state_dir: Path, *args: str) -> str:
    """The one line a successful command prints; the directory is then loaded as every reader does."""
    result = _run(state_dir, *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 1, lines
    _directory(state_dir)
    return lines[0]


def _directory(state_dir: Path) -> Directory:
    return load_directory(directory_location(state_dir, {}))


def _kids(state_dir: Path, subject: str) -> list[str]:
    person = _directory(state_dir).person(subject)
    assert person is not None, subject
    return person.kids


def _file(state_dir: Path) -> Path:
    return Path(directory_location(state_dir, {}))


def _refused(state_dir: Path, *args: str) -> str:
    """The one stderr line of a refused command, which changed nothing in the directory file."""
    before = _file(state_dir).read_bytes()
    result = _run(state_dir, *args)
    assert result.exit_code == ExitCode.REFUSED, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("directory: "), lines
    assert _file(state_dir).read_bytes() == before
    return lines[0]


def test_show_lists_the_five_demo_people_and_each_policy(state_dir: Path) -> None:
    result = _run(state_dir, "show")
    assert result.exit_code == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if any(f" {name} " in line for name in DEMO_PEOPLE)]
    assert len(rows) == 5
    assert any("chen" in row and "reviewer" in row and "reviewer:chen" in row for row in rows)
    assert any("alice" in row and "customer" in row and "qinghe" in row for row in rows)
    assert "tenant qinghe (Qinghe Home Goods (fictional)): one reviewer approves every refund" in result.stdout
    assert "tenant south (South Shop (fictional)):" in result.stdout


def test_show_json_is_the_document(state_dir: Path) -> None:
    result = _run(state_dir, "show", "--json")
    assert result.exit_code == 0, result.stderr
    assert Directory.model_validate_json(result.stdout) == _directory(state_dir)
    assert [person["subject"] for person in json.loads(result.stdout)["people"]] == list(DEMO_PEOPLE)


def test_a_new_tenant_its_customer_and_reviewer_then_policy_rotation_and_removal(state_dir: Path) -> None:
    assert _ok(state_dir, "add-tenant", "east", "--name", "East Shop") == (
        f"added tenant east (directory {_file(state_dir)})"
    )
    line = _ok(state_dir, "add-person", "ana", "--tenant", "east", "--role", "customer", "--name", "Ana")
    assert line.startswith("added customer ana to tenant east, no key")
    assert not private_key_path(state_dir, "reviewer:ana").exists()

    line = _ok(state_dir, "add-person", "kai", "--tenant", "east", "--role", "reviewer", "--name", "Kai")
    assert line == f"added reviewer kai to tenant east, key reviewer:kai (directory {_file(state_dir)})"
    key_file = private_key_path(state_dir, "reviewer:kai")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    directory = _directory(state_dir)
    assert _kids(state_dir, "kai") == ["reviewer:kai"]
    assert directory.key("reviewer:kai") == public_jwk(load_private_key(key_file), "reviewer:kai")
    assert all("d" not in key for key in directory.keys)
    assert directory.identity("ana").tenant == "east" and _kids(state_dir, "ana") == []

    four_eyes = _ok(state_dir, "set-policy", "east", "--two-reviewers-from", "10000")
    assert "two distinct reviewers from 10000 cents" in four_eyes
    assert _directory(state_dir).approvals_required("east", 10_000) == 2
    assert "one reviewer approves every refund" in _ok(state_dir, "set-policy", "east", "--one-reviewer")
    assert _directory(state_dir).approvals_required("east", 10_000) == 1

    line = _ok(state_dir, "rotate-key", "kai")
    assert "reviewer:kai:2" in line and "reviewer:kai no longer verifies" in line
    directory = _directory(state_dir)
    assert _kids(state_dir, "kai") == ["reviewer:kai:2"]
    assert directory.key("reviewer:kai") is None and directory.key("reviewer:kai:2") is not None
    assert key_file.exists()
    assert "reviewer:kai:3" in _ok(state_dir, "rotate-key", "kai")

    assert "removed reviewer kai" in _ok(state_dir, "remove-person", "kai")
    directory = _directory(state_dir)
    assert directory.person("kai") is None
    assert not any(str(key["kid"]).startswith("reviewer:kai") for key in directory.keys)


def test_a_person_added_again_never_gets_a_key_file_left_behind(state_dir: Path) -> None:
    _ok(state_dir, "add-person", "kai", "--tenant", "south", "--role", "reviewer")
    old = _directory(state_dir).key("reviewer:kai")
    _ok(state_dir, "remove-person", "kai")
    assert "key reviewer:kai:2" in _ok(state_dir, "add-person", "kai", "--tenant", "south", "--role", "reviewer")
    directory = _directory(state_dir)
    assert directory.key("reviewer:kai") is None
    assert directory.key("reviewer:kai:2") is not None and directory.key("reviewer:kai:2") != old


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("add-person", "alice", "--tenant", "qinghe", "--role", "customer"), "'alice' is already in the directory"),
        (("add-person", "chen", "--tenant", "south", "--role", "reviewer"), "(tenant qinghe)"),
        (("add-person", "kai", "--tenant", "east", "--role", "reviewer"), "unknown tenant 'east'"),
        (("add-person", "Kai", "--tenant", "south", "--role", "reviewer"), "subject: String should match pattern"),
        (("add-tenant", "south"), "tenant 'south' is already in the directory"),
        (("add-tenant", "East"), "tenant: String should match pattern"),
        (("set-policy", "east", "--two-reviewers-from", "100"), "unknown tenant 'east'"),
        (("set-policy", "south"), "exactly one of"),
        (("set-policy", "south", "--two-reviewers-from", "100", "--one-reviewer"), "exactly one of"),
        (("rotate-key", "alice"), "'alice' holds no key to rotate"),
        (("rotate-key", "nobody"), "'nobody' is not in the directory"),
        (("remove-person", "nobody"), "'nobody' is not in the directory"),
    ],
)
def test_a_bad_request_is_one_line_and_changes_nothing(state_dir: Path, args: tuple[str, ...], problem: str) -> None:
    keys_before = sorted(path.name for path in private_key_path(state_dir, "x").parent.iterdir())
    assert problem in _refused(state_dir, *args)
    assert sorted(path.name for path in private_key_path(state_dir, "x").parent.iterdir()) == keys_before


def test_a_missing_directory_says_to_run_init(tmp_path: Path) -> None:
    for args in (("show",), ("add-tenant", "east")):
        result = _run(tmp_path, *args)
        assert result.exit_code == ExitCode.REFUSED
        assert result.stderr.count("\n") == 1 and "run `starter.py init`" in result.stderr
        assert not _file(tmp_path).exists()


def test_a_directory_published_at_a_url_is_not_edited_here(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DIRECTORY_ENV, "https://directory.example/support.json")
    result = _run(state_dir, "add-tenant", "east")
    assert result.exit_code == ExitCode.REFUSED
    assert result.stderr.strip() == (
        "directory: https://directory.example/support.json is published at a URL; "
        "edit the document where it is published"
    )


def test_support_directory_names_the_file_edited(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = state_dir / "shared" / "directory.json"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(_file(state_dir).read_bytes())
    monkeypatch.setenv(DIRECTORY_ENV, str(elsewhere))
    assert str(elsewhere) in _ok(state_dir, "add-tenant", "east")
    assert load_directory(str(elsewhere)).tenant("east") is not None
    assert _directory(state_dir).tenant("east") is None


def test_the_main_app_hands_its_state_dir_to_the_directory_group(state_dir: Path) -> None:
    from cli.app import app

    result = CliRunner().invoke(app, ["--state-dir", str(state_dir), "directory", "add-tenant", "east"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == f"added tenant east (directory {_file(state_dir)})"
    assert _directory(state_dir).tenant("east") is not None


def test_starter_runs_the_directory_commands_without_a_profile(state_dir: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != DIRECTORY_ENV}
    base = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(state_dir), "directory"]
    added = subprocess.run([*base, "add-tenant", "east"], capture_output=True, text=True, timeout=60, env=env)
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == f"added tenant east (directory {_file(state_dir)})"
    refused = subprocess.run([*base, "add-tenant", "east"], capture_output=True, text=True, timeout=60, env=env)
    assert refused.returncode == ExitCode.REFUSED
    assert refused.stderr.strip() == "directory: tenant 'east' is already in the directory"
    assert _directory(state_dir).tenant("east") is not None

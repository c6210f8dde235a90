"""``starter.py knowledge check``: every broken file is named with its line; good knowledge passes.

Each broken directory is the example merchant's (docs/examples/east-knowledge) copied to a tmp dir with
one edit; the problem must be reported at the line the edit is on, found here in the edited file itself.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from cli.app import app
from cli.exit_codes import ExitCode
from contracts.errors import ConfigurationError
from knowledge.check import check_knowledge, require_valid_knowledge
from knowledge.location import KNOWLEDGE_DIR_ENV, PACKAGED, knowledge_location

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "east-knowledge"
DOC = "documents/EAST_RETURNS.md"
SKILL = "skills/refund/SKILL.md"
RULE = "refund_rules/east.json"


def knowledge_check(*args: str) -> Result:
    return CliRunner().invoke(app, ["knowledge", "check", *args])


def replace(old: str, new: str, count: int = 1) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, count)

    return edit


def line_of(path: Path, fragment: str, nth: int = 1) -> int:
    """The line number of the ``nth`` line of ``path`` that contains ``fragment``."""
    hits = [number for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if fragment in line]
    return hits[nth - 1]


BROKEN = [
    # (file, edit, (fragment locating the reported line, nth) or None for line 1, words of the problem)
    (DOC, replace('version: "2026-09"\n', ""), None, "lacks 'version'"),
    (DOC, replace('version: "2026-09"', 'version: "2026 09"'), ("version:", 1), "version '2026 09' is not well-formed"),
    (DOC, replace("effective_from: 2026-09-01", "effective_from: soon"), ("effective_from", 1), "effective_from"),
    (DOC, replace("effective_to: null", "effective_to: 2026-08-01"), ("effective_to", 1), "not after effective_from"),
    (DOC, replace("id: EAST_RETURNS", "id: EAST_TERMS"), ("id:", 1), "does not match the file name"),
    (DOC, replace("tenant: east", "tenant: East Shop"), ("tenant:", 1), "is not a tenant name"),
    (DOC, replace("status: active", "status: draft"), ("status:", 1), "header field 'status'"),
    (DOC, replace("---\nid:", "id:"), None, "must start with a '---' front-matter"),
    (DOC, replace("# p01 |", "# p1 |"), ("# p1 |", 1), "page id 'p1' is not well-formed"),
    (DOC, replace("# p02 |", "# p01 |"), ("# p01 |", 2), "page p01 appears twice (first at line 12)"),
    (DOC, replace("# p02 |", "# p03 |"), ("# p03 |", 1), "page p03 is out of order; expected p02"),
    (DOC, replace("# p02 | Refund amount", "# Refund amount"), ("# Refund amount", 1), "unknown heading"),
    (DOC, replace("## zh", "## fr"), ("## fr", 1), "unknown or misplaced heading '## fr'"),
    (DOC, replace("\n## en\n\nThe automatic", "\nThe automatic"), ("# p02 |", 1), "the '## en' section is missing"),
    (SKILL, replace("EAST_RETURNS:p02", "EAST_RETURNS:p09"), ("EAST_RETURNS:p09", 1), "cites page EAST_RETURNS:p09"),
    (SKILL, replace("name: refund", "name: refunds"), ("name:", 1), "does not match the folder 'refund'"),
    (SKILL, replace("## zh", "## de"), None, "needs exactly one '## en' and one '## zh' body"),
    (RULE, replace('"EAST_RETURNS:p01"', '"EAST_RETURNS:p05"'), ('"window_page"', 1), "is no page of any document"),
    (RULE, replace('"amount_page": "EAST_RETURNS:p02"', '"amount_page": "EAST:p02"'), ('"amount_page"', 1), "EAST:p02"),
    (RULE, replace('"policy_version": "2026-09"', '"policy_version": "2026-10"'), ('"policy_version"', 1), "version"),
    (RULE, replace('"EAST_RETURNS",', '"RETURNS",'), ('"policy_document"', 1), "'RETURNS' is no document"),
    (RULE, replace('"tenant": "east"', '"tenant": "west"'), ('"tenant"', 1), "file is named 'east.json'"),
    (RULE, replace('"refund_freight": false', '"refund_freight": true'), ('"refund_freight"', 1), "freight"),
    (RULE, replace('    "already_refunded"\n', '    "outside_window"\n'), ('"reason_order"', 1), "exactly once"),
    (RULE, replace('"window_days": 14,', '"window_days": "two weeks",'), ('"window_days"', 1), "window_days"),
    (RULE, replace('"tenant": "east",', '"tenant": "east"'), ('"policy_document"', 1), "not JSON"),
    (RULE, replace('  "rule_version": "east-returns-2026-09",\n', ""), None, "lacks 'rule_version'"),
]


@pytest.mark.parametrize(("file", "edit", "where", "words"), BROKEN)
def test_each_broken_file_is_refused_with_its_file_and_line(
    tmp_path: Path, file: str, edit: Callable[[str], str], where: tuple[str, int] | None, words: str
) -> None:
    root = tmp_path / "knowledge"
    shutil.copytree(EXAMPLE, root)
    path = root / file
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    line = line_of(path, *where) if where else 1

    result = knowledge_check(str(root))

    assert result.exit_code == ExitCode.REFUSED, (result.stdout, result.stderr)
    assert result.stdout == ""
    problems = result.stderr.splitlines()
    expected = f"{path}:{line}: "
    assert any(p.startswith(expected) and words in p for p in problems), (expected, words, problems)


@pytest.mark.parametrize("root", [PACKAGED.root, EXAMPLE], ids=["packaged", "example"])
def test_good_knowledge_passes_with_one_summary_line(root: Path) -> None:
    result = knowledge_check(str(root))
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    [summary] = result.stdout.splitlines()
    assert summary.endswith("no problems")


def test_without_a_directory_the_packaged_knowledge_is_checked() -> None:
    result = knowledge_check()
    assert result.exit_code == 0, result.stderr
    assert "9 documents" in result.stdout and "refund rules for qinghe" in result.stdout


def test_a_missing_directory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = knowledge_check(str(tmp_path / "nowhere"))
    assert result.exit_code == ExitCode.REFUSED
    assert result.stderr.splitlines() == [f"knowledge: {tmp_path / 'nowhere'} is not a directory"]


def test_an_empty_directory_lists_what_is_missing(tmp_path: Path) -> None:
    problems = [str(p) for p in check_knowledge(tmp_path).problems]
    assert problems == [
        f"{tmp_path / 'documents'}:1: missing: the documents/ folder holds the *.md documents",
        f"{tmp_path / 'refund_rules.json'}:1: no refund rule: add refund_rules.json or refund_rules/<tenant>.json",
    ]


def test_unset_is_the_packaged_knowledge_and_a_bad_directory_is_refused(tmp_path: Path) -> None:
    assert knowledge_location({}) == PACKAGED
    assert require_valid_knowledge({KNOWLEDGE_DIR_ENV: ""}) == PACKAGED
    assert require_valid_knowledge({KNOWLEDGE_DIR_ENV: str(EXAMPLE)}).root == EXAMPLE.resolve()

    with pytest.raises(ConfigurationError, match="is not a directory"):
        knowledge_location({KNOWLEDGE_DIR_ENV: str(tmp_path / "nowhere")})
    with pytest.raises(ConfigurationError, match="no documents/ folder"):
        knowledge_location({KNOWLEDGE_DIR_ENV: str(tmp_path)})
    broken = tmp_path / "broken"
    shutil.copytree(EXAMPLE, broken)
    rule = broken / RULE
    rule.write_text(rule.read_text(encoding="utf-8").replace('"EAST_RETURNS:p01"', '"EAST_RETURNS:p05"'))
    with pytest.raises(ConfigurationError) as refused:
        require_valid_knowledge({KNOWLEDGE_DIR_ENV: str(broken)})
    assert refused.value.code == "invalid_knowledge"
    assert f"1 problem, the first {broken.resolve() / RULE}:" in refused.value.message
    assert "\n" not in refused.value.message

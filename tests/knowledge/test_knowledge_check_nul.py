"""``starter.py knowledge check`` refuses a knowledge file holding a NUL byte (issue 44): one line naming
the file and the line of its first NUL, exit 2, whether the NUL is in the front-matter, the page text or a
skill. A NUL is no text a customer or a model should see, yet it passed every line rule."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from cli.exit_codes import ExitCode
from contracts.errors import ConfigurationError
from knowledge.check import check_knowledge, require_valid_knowledge
from knowledge.location import KNOWLEDGE_DIR_ENV

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "east-knowledge"
DOC = "documents/EAST_RETURNS.md"
SKILL = "skills/refund/SKILL.md"
RULE = "refund_rules/east.json"

NULS = [
    # (file, text the NUL goes right after, its first occurrence)
    pytest.param(DOC, "tenant: east", id="front-matter"),
    pytest.param(DOC, "These terms apply", id="page-text-en"),
    pytest.param(DOC, "本条款", id="page-text-zh"),
    pytest.param(SKILL, "This skill describes", id="skill"),
]


def with_nul(tmp_path: Path, file: str, after: str) -> tuple[Path, Path, int]:
    """The example knowledge copied, with a NUL after ``after`` in ``file``: (root, file, its line)."""
    root = tmp_path / "knowledge"
    shutil.copytree(EXAMPLE, root)
    path = root / file
    text = path.read_text(encoding="utf-8")
    assert after in text, after
    path.write_text(text.replace(after, after + "\x00", 1), encoding="utf-8")
    line = text[: text.index(after)].count("\n") + 1
    return root, path, line


@pytest.mark.parametrize(("file", "after"), NULS)
def test_a_nul_byte_is_one_line_naming_the_file_and_exit_2(tmp_path: Path, file: str, after: str) -> None:
    root, path, line = with_nul(tmp_path, file, after)

    result = CliRunner().invoke(app, ["knowledge", "check", str(root)])

    assert result.exit_code == ExitCode.REFUSED, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f"{path}:{line}: holds a NUL byte (U+0000); a knowledge file is plain text"]


def test_a_nul_byte_in_a_refund_rule_is_refused_as_not_json(tmp_path: Path) -> None:
    """JSON forbids a raw control character in a string, so the rule file was refused already."""
    root, path, line = with_nul(tmp_path, RULE, '"east')
    problems = [str(problem) for problem in check_knowledge(root).problems]
    assert len(problems) == 1 and problems[0].startswith(f"{path}:{line}: not JSON"), problems


def test_the_worker_refuses_a_knowledge_directory_with_a_nul_byte(tmp_path: Path) -> None:
    root, path, line = with_nul(tmp_path, DOC, "Digital goods")
    with pytest.raises(ConfigurationError) as refused:
        require_valid_knowledge({KNOWLEDGE_DIR_ENV: str(root)})
    assert refused.value.code == "invalid_knowledge"
    assert f"{path}:{line}: holds a NUL byte" in refused.value.message
    assert "\n" not in refused.value.message

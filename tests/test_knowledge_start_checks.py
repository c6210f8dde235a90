"""A bad ``SUPPORT_KNOWLEDGE_DIR`` refuses the worker's and the commerce server's start in one line,
exit 2, before either connects to anything (the helpers of :mod:`tests.test_start_checks`: a real
subprocess, a cleaned environment, a Temporal address nothing listens on)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import DemoKeys
from tests.test_start_checks import refusal, run, state_dir, worker

__all__ = ["state_dir"]  # the fixture, used by name below

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "east-knowledge"


def broken_knowledge(tmp_path: Path) -> Path:
    """The example merchant's knowledge with its rule pointing at a page that does not exist."""
    root = tmp_path / "knowledge"
    shutil.copytree(EXAMPLE, root)
    rule = root / "refund_rules" / "east.json"
    rule.write_text(rule.read_text(encoding="utf-8").replace('"EAST_RETURNS:p01"', '"EAST_RETURNS:p05"'))
    return root


def test_a_knowledge_dir_with_a_problem_refuses_the_worker(
    state_dir: Path, tmp_path: Path, demo_keys: DemoKeys
) -> None:
    root = broken_knowledge(tmp_path)
    line = refusal(worker(state_dir, demo_keys, SUPPORT_KNOWLEDGE_DIR=str(root)))
    assert line.startswith(f"worker: configuration error: invalid_knowledge: SUPPORT_KNOWLEDGE_DIR={root}: 1 problem")
    assert f"{root / 'refund_rules' / 'east.json'}:13: window_page 'EAST_RETURNS:p05'" in line


def test_a_missing_knowledge_dir_refuses_the_worker(state_dir: Path, tmp_path: Path, demo_keys: DemoKeys) -> None:
    line = refusal(worker(state_dir, demo_keys, SUPPORT_KNOWLEDGE_DIR=str(tmp_path / "nowhere")))
    assert line.startswith("worker: configuration error: knowledge_dir: SUPPORT_KNOWLEDGE_DIR=")
    assert "is not a directory" in line


def test_a_knowledge_dir_with_a_problem_refuses_the_commerce_server(
    state_dir: Path, tmp_path: Path, demo_keys: DemoKeys
) -> None:
    root = broken_knowledge(tmp_path)
    done = run(
        "commerce_server/__main__.py",
        state_dir,
        "--profile",
        "alice",
        COMMERCE_DIRECTORY=str(demo_keys.directory_path),
        SUPPORT_KNOWLEDGE_DIR=str(root),
    )
    line = refusal(done)
    assert line.startswith(f"commerce_server: SUPPORT_KNOWLEDGE_DIR={root}: 1 problem"), line
    assert "window_page 'EAST_RETURNS:p05'" in line

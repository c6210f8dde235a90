"""``starter.py audit`` prints a bounded text however large the history's strings are: a 5 MB answer
is cut with a line saying how much went and that ``--json`` has the whole, which it does."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cli.audit_render import LONG_LINE, MAX_AUDIT_CHARS, bounded
from cli.text_layout import WIDTH

ROOT = Path(__file__).resolve().parents[2]
HUGE = 5_000_000


def _payload(value: Any) -> dict[str, Any]:
    return {
        "metadata": {"encoding": base64.b64encode(b"json/plain").decode()},
        "data": base64.b64encode(json.dumps(value).encode()).decode(),
    }


def _history_with_answer(tmp_path: Path, answer: str) -> tuple[Path, str]:
    """The committed answered-delivery history with its final view's answer replaced (plain JSON payload)."""
    history = json.loads((ROOT / "tests" / "histories" / "v0.1" / "answered_delivery.json").read_text(encoding="utf-8"))
    case_id = ""
    for event in history["events"]:
        if "workflowExecutionStartedEventAttributes" in event:
            case_id = event["workflowExecutionStartedEventAttributes"]["workflowId"].removeprefix("case-")
        completed = event.get("workflowExecutionCompletedEventAttributes")
        if completed:
            original = completed["result"]["payloads"][0]
            encoding = base64.b64decode(original["metadata"]["encoding"])
            assert encoding == b"json/plain", encoding  # a compressed result would need the codec here
            view = json.loads(base64.b64decode(original["data"]))
            completed["result"]["payloads"][0] = _payload({**view, "answer": answer})
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    return path, case_id


def _audit(tmp_path: Path, path: Path, case_id: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(tmp_path / "state"), "audit", case_id]
    env = {key: value for key, value in os.environ.items() if key != "SUPPORT_DEBUG"}
    return subprocess.run(
        [*command, "--history", str(path), *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_a_five_megabyte_answer_is_cut_and_json_keeps_it_whole(tmp_path: Path) -> None:
    path, case_id = _history_with_answer(tmp_path, "A" * HUGE)
    text = _audit(tmp_path, path, case_id)
    assert text.returncode == 0, text.stderr
    assert len(text.stdout) < 2 * MAX_AUDIT_CHARS
    lines = text.stdout.splitlines()
    [cut] = [number for number, line in enumerate(lines) if "more characters cut" in line]
    shown = WIDTH - 4  # the answer is indented by four spaces
    assert lines[cut - 1] == "    " + "A" * shown
    assert f"{HUGE - shown:,} more characters cut (--json prints the whole audit)" in lines[cut]
    whole = _audit(tmp_path, path, case_id, "--json")
    assert whole.returncode == 0 and "A" * HUGE in whole.stdout


def test_a_flood_of_lines_is_cut_after_the_bound_with_a_count() -> None:
    lines = [f"line {number} " + "x" * 60 for number in range(20_000)]
    kept = bounded(lines)
    assert sum(len(line) for line in kept) <= MAX_AUDIT_CHARS + 2 * LONG_LINE
    assert kept[:-1] == lines[: len(kept) - 1]
    assert kept[-1].startswith(f"... {len(lines) - len(kept) + 1:,} more lines (")
    assert kept[-1].endswith("characters) cut (--json prints the whole audit)")


def test_ids_and_ordinary_lines_are_never_cut() -> None:
    lines = ["  digest " + "f" * 64, "  " + "w" * (LONG_LINE - 2), "short"]
    assert bounded(lines) == lines

"""``make demo`` prints nothing stray: every file that scripts/demo.sh waits on with grep exists before
the background process that writes it starts.

A background job (``cmd >"$FILE" 2>&1 &``) opens its redirection only once it runs, so a wait loop that
greps ``$FILE`` right after starting it could read a file that is not there yet and print
``grep: …: No such file or directory`` (seen in a fresh run of the demo).
"""

from __future__ import annotations

import re
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "demo.sh"
BACKGROUND_OUTPUT = re.compile(r'>"(\$STATE_DIR/[\w.-]+)" 2>&1 &\s*$')


def background_outputs(lines: list[str]) -> dict[str, int]:
    """Each file a background job writes, with the line (0-based) that starts the job."""
    found: dict[str, int] = {}
    for number, line in enumerate(lines):
        match = BACKGROUND_OUTPUT.search(line)
        if match:
            found[match.group(1)] = number
    return found


def test_every_file_the_demo_greps_for_a_background_job_exists_before_the_job_starts() -> None:
    lines = SCRIPT.read_text(encoding="utf-8").splitlines()
    outputs = background_outputs(lines)
    assert set(outputs) >= {"$STATE_DIR/dev-server.out", "$STATE_DIR/worker.log"}, outputs
    for output, started in outputs.items():
        created = [n for n, line in enumerate(lines) if re.match(rf'\s*: >"{re.escape(output)}"', line)]
        assert created and created[0] < started, f"{output} is not created before its job starts"
        greps = [n for n, line in enumerate(lines) if "grep" in line and f'"{output}"' in line]
        assert greps and all(n > created[0] for n in greps), f"{output} is read before it exists"


def test_the_check_would_catch_the_race() -> None:
    racy = ['$BIN/python worker.py >"$STATE_DIR/worker.log" 2>&1 &', 'grep -q polling "$STATE_DIR/worker.log"']
    outputs = background_outputs(racy)
    assert outputs == {"$STATE_DIR/worker.log": 0}
    assert not [line for line in racy if line.lstrip().startswith(': >"$STATE_DIR/worker.log"')]

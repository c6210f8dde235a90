"""The marked command blocks of the README and docs/approving.md, run as written, as a new user would.

Each block after a ``<!-- readme-test: NAME -->`` comment runs line by line in bash from the project
root: the README's quickstart first, then the approval channels docs/approving.md shows. A line ending
in ``&`` starts in the background (and is waited for: the dev server until it listens, the worker until
it polls). ``CASE`` and ``DIGEST`` are replaced by what the block's ``ask``
printed, and ``TOKEN`` by the approval token ``review-info --approve`` printed, as a user would copy
them. Every other line must exit 0. The only differences from a user's
shell: a fresh state dir and free ports, passed through the variables the README documents
(SUPPORT_STATE_DIR, TEMPORAL_PORT, TEMPORAL_UI_PORT, CODEC_PORT, CONSOLE_PORT, TEMPORAL_ADDRESS).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from contracts.case import CaseStatus, CaseView
from devstack.servers import free_port, wait_for_port
from tests.faults.fault_support import descendants_of

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The documents whose marked blocks run: the README's quickstart, then docs/approving.md's channels.
RUNNABLE = (README, ROOT / "docs" / "approving.md")
BLOCK = re.compile(r"<!-- readme-test: ([\w-]+)[^>]*-->\s*```bash\n(.*?)```", re.DOTALL)


def readme_blocks(documents: tuple[Path, ...] = RUNNABLE) -> dict[str, list[str]]:
    """Marked blocks as lists of commands (continuation lines joined), from every runnable document."""
    blocks: dict[str, list[str]] = {}
    for document in documents:
        for name, body in BLOCK.findall(document.read_text(encoding="utf-8")):
            assert name not in blocks, f"two blocks named {name}"
            blocks[name] = [line.strip() for line in body.replace("\\\n", " ").splitlines() if line.strip()]
    return blocks


def _without_comment(line: str) -> str:
    """The command without a trailing ``# comment`` (none of the README's commands quote a '#')."""
    return line.split(" #", 1)[0].strip()


class Shell:
    """Runs README lines with the README's variables; remembers CASE/DIGEST and background jobs."""

    def __init__(self, tmp: Path) -> None:
        self.port = free_port()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "DEEPSEEK", "SUPPORT_"))}
        self.env.update(
            SUPPORT_STATE_DIR=str(tmp / "state"),
            TEMPORAL_PORT=str(self.port),
            TEMPORAL_UI_PORT=str(free_port()),
            CODEC_PORT=str(free_port()),
            CONSOLE_PORT=str(free_port()),
            CHAT_PORT=str(free_port()),
            TEMPORAL_ADDRESS=f"127.0.0.1:{self.port}",
            COLUMNS="250",
        )
        # The README's user has only what `init` made: the state dir's keys, not the test process's.
        for name in (
            "COMMERCE_DATABASE_URL",
            "COMMERCE_MCP_URL",
            "COMMERCE_DIRECTORY",
            "COMMERCE_SIGNING_KEY",
            "TEMPORAL_NAMESPACE",
        ):
            self.env.pop(name, None)
        self.tmp = tmp
        self.jobs: list[tuple[subprocess.Popen, Path]] = []
        self.values: dict[str, str] = {}

    def run_block(self, lines: list[str]) -> None:
        for line in lines:
            command = _without_comment(self.fill(line))
            if command.endswith("&"):
                self.background(command.removesuffix("&").strip())
            else:
                self.foreground(command)

    def fill(self, line: str) -> str:
        for name, value in self.values.items():
            line = re.sub(rf"\b{name}\b", value, line)
        return line

    def foreground(self, command: str) -> None:
        done = subprocess.run(
            ["bash", "-c", command], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"{command!r} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr}"
        if " ask " in command:
            review = next(line for line in done.stdout.splitlines() if " review " in line and "--approve" in line)
            self.values["CASE"] = review.split(" review ")[1].split()[0]
            self.values["DIGEST"] = review.split("--digest ")[1].split()[0]
        if " review-info " in command and "--approve" in command:
            update = next(line for line in done.stdout.splitlines() if "workflow update execute" in line)
            self.values["TOKEN"] = update.split('"approval_token": "')[1].split('"')[0]

    def background(self, command: str) -> None:
        log = self.tmp / f"job-{len(self.jobs)}.log"
        with log.open("wb") as out:
            job = subprocess.Popen(
                ["bash", "-c", command],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.jobs.append((job, log))
        if "dev-server" in command:
            wait_for_port("127.0.0.1", self.port, timeout=90, process=job)
        elif "worker.py" in command:
            deadline = time.monotonic() + 90
            while "worker: polling task queue" not in log.read_text(errors="replace"):
                assert job.poll() is None, log.read_text(errors="replace")
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM each job's group, as Ctrl-C would; then SIGKILL whatever it started and left behind.

        The dev server runs in a session of its own (so a terminal's Ctrl-C reaches only the wrapper,
        which stops it), so a group signal alone would leave it running if the wrapper died first.
        """
        for job, _ in reversed(self.jobs):
            started = descendants_of(job.pid)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(job.pid, signal.SIGTERM)
            try:
                job.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(job.pid, signal.SIGKILL)
            for pid in started:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Shell]:
    running = Shell(tmp_path)
    yield running
    running.stop()


def test_the_readme_marks_its_runnable_blocks() -> None:
    assert set(readme_blocks((README,))) == {"walkthrough"}
    assert set(readme_blocks()) == {"walkthrough", "approve-by-signal", "approve-by-update"}


def test_the_readme_commands_run_as_written(shell: Shell) -> None:
    blocks = readme_blocks()
    settled = []
    for name in ("walkthrough", "approve-by-signal", "approve-by-update"):
        shell.run_block(blocks[name])
        settled.append(shell.values["CASE"])
    assert len(set(settled)) == 3

    for case_id in settled:  # each block's case was approved and paid, once
        shown = subprocess.run(
            ["bash", "-c", f".venv/bin/python starter.py --profile chen status {case_id} --json"],
            cwd=ROOT,
            env=shell.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        view = CaseView.model_validate_json(shown.stdout)
        assert view.status is CaseStatus.COMPLETED and view.receipt is not None, (case_id, view.reason)

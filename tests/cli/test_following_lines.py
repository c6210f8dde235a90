"""What a person is told when a wait for a case ends early: the case by its id, that it goes on, and how
to follow it; on Ctrl-C once, then exit 130 (the shell's code for SIGINT)."""

from __future__ import annotations

import asyncio

import pytest

from case_client._following import WaitCode
from cli.exit_codes import ExitCode, exit_code_for_error
from cli.following import Followed, case_goes_on, saying_on_interrupt
from cli.render import case_card_lines
from contracts.case import CaseStatus
from contracts.errors import TransientError
from tests.reviewer_console.console_double import waiting_view

STARTER = "python starter.py --profile alice"


def test_a_case_still_working_goes_on_and_says_how_to_follow_it() -> None:
    error = TransientError(WaitCode.CASE_WORKING, "case c1: still working after 300 s: …")
    assert case_goes_on("c1", STARTER, error, window=300) == f"Case c1 goes on; follow it: {STARTER} status c1 --wait"
    assert exit_code_for_error(error) is ExitCode.UNAVAILABLE


def test_a_case_without_a_worker_is_kept_until_one_runs() -> None:
    error = TransientError(WaitCode.WORKER_UNAVAILABLE, "case c1: no worker polls task queue 'q'")
    line = case_goes_on("c1", STARTER, error, window=300)
    assert line.startswith("Case c1 is kept and goes on once a worker runs (within 24 h of its start): ")
    assert line.endswith("status c1 --wait; the same question asked within 300 s of its start shows it again")
    decided = case_goes_on("c1", STARTER, error, queued=False)
    assert decided == f"Case c1 is kept and goes on once a worker runs: {STARTER} status c1 --wait"


def test_ctrl_c_names_the_case_once_it_has_started() -> None:
    assert Followed().interrupted_line(STARTER) == "interrupted: no case was started"
    assert "it may have started" in Followed("c1").interrupted_line(STARTER)
    line = Followed("c1", started=True).interrupted_line(STARTER)
    assert line.startswith("interrupted: case c1 goes on without this command")
    assert line.endswith(f"follow it: {STARTER} status c1 --wait")


async def test_an_interrupted_wait_says_so_once_and_stays_interrupted(capsys: pytest.CaptureFixture[str]) -> None:
    async def waits_forever() -> None:
        await asyncio.Event().wait()

    task = asyncio.ensure_future(saying_on_interrupt(Followed("c1", started=True), STARTER, waits_forever))
    await asyncio.sleep(0)
    task.cancel()  # what asyncio.run does with the command's task on Ctrl-C
    with pytest.raises(asyncio.CancelledError):
        await task
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("interrupted: case c1 goes on")


def test_the_interrupt_exit_code_is_the_shells() -> None:
    assert ExitCode.INTERRUPTED == 130


def card_row(lines: list[str], label: str) -> str:
    """The text of a card row, its wrapped continuation lines joined."""
    start = next(n for n, line in enumerate(lines) if line.startswith(f"  {label} "))
    parts = [lines[start][14:]]
    for line in lines[start + 1 :]:
        if not line.startswith(" " * 14):
            break
        parts.append(line.strip())
    return " ".join(parts)


def test_the_card_of_a_running_case_says_what_it_is_doing_after_its_phase() -> None:
    running = waiting_view("c1").model_copy(update={"status": CaseStatus.RUNNING})
    doing = "waiting for the model server (plan the case, attempt 1, 95 s so far)"
    lines = case_card_lines(running, now=doing)
    phase = next(n for n, line in enumerate(lines) if line.startswith("  phase "))
    assert lines[phase + 1].startswith("  now         waiting for the model server")
    assert card_row(lines, "now") == doing and all(len(line) <= 80 for line in lines)
    assert not [line for line in case_card_lines(running) if line.startswith("  now ")]

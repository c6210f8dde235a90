"""Waiting for a case at the command line: progress on stderr, and what a person is told when the wait
ends or is interrupted.

A case outlives the command that started it. When the wait ends before the case settles (the deadline,
a worker that is gone, Ctrl-C), the command names the case, says that it goes on (or what it waits
for) and how to follow it: never a traceback, and never "check the worker" for a worker that is busy
or a case that is working.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from rich.status import Status
from rich.text import Text

from case_client import CaseHandle
from case_client._following import WaitCode, Waiting, gave_up
from cli.render import errors, progress_text, worker_command
from contracts.case import CaseView
from contracts.case_start import UNSERVED_LIMIT
from contracts.errors import TransientError
from contracts.identity import Identity

T = TypeVar("T")

READ_PATIENCE_SECONDS = 60.0
"""How long ``status`` and the review commands wait for a busy worker to answer before giving up."""


def follow_command(starter: str, case_id: str) -> str:
    return f"{starter} status {case_id} --wait"


def case_goes_on(
    case_id: str, starter: str, error: TransientError, *, window: float | None = None, queued: bool = True
) -> str:
    """What to do about a case that was started (or found) but not followed to its end, by why the
    wait ended: no worker (it goes on once one runs; a case no worker has run yet, ``queued``, within
    the unserved limit of its start), or still working (it goes on now)."""
    follow = follow_command(starter, case_id)
    if error.code == WaitCode.WORKER_UNAVAILABLE and not queued:
        return f"Case {case_id} is kept and goes on once a worker runs: {follow}"
    if error.code == WaitCode.WORKER_UNAVAILABLE:
        again = f"; the same question asked within {window:g} s of its start shows it again" if window else ""
        hours = int(UNSERVED_LIMIT.total_seconds() // 3600)
        return f"Case {case_id} is kept and goes on once a worker runs (within {hours} h of its start): {follow}{again}"
    return f"Case {case_id} goes on; follow it: {follow}"


def interrupted_line(case_id: str, starter: str) -> str:
    """What Ctrl-C prints once a case has started: Ctrl-C stops only the waiting."""
    return (
        f"interrupted: case {case_id} goes on without this command (Ctrl-C stops only the waiting); "
        f"follow it: {follow_command(starter, case_id)}"
    )


@dataclass
class Followed:
    """The case a command follows, as far as it knows: ``None`` before it is started (or found),
    ``maybe`` while the start is in flight, ``started`` once Temporal has it."""

    case_id: str | None = None
    started: bool = False

    def interrupted_line(self, starter: str) -> str:
        if self.case_id is None:
            return "interrupted: no case was started"
        if not self.started:
            return (
                f"interrupted while case {self.case_id} was being started: it may have started; see "
                f"{follow_command(starter, self.case_id)}"
            )
        return interrupted_line(self.case_id, starter)


async def saying_on_interrupt(followed: Followed, starter: str, body: Callable[[], Awaitable[T]]) -> T:
    """Run ``body``; on Ctrl-C (asyncio cancels the command's task) say what became of the case, once,
    then let the interrupt end the command (exit 130, :func:`cli.main.run`)."""
    try:
        return await body()
    except asyncio.CancelledError:
        errors.print(followed.interrupted_line(starter))
        raise


async def settle_with_progress(
    case: CaseHandle, case_id: str, viewer: Identity, state_dir: Path, *, timeout: float
) -> CaseView:
    """:meth:`CaseHandle.settled` for ``viewer``: a spinner on a terminal, and every 30 s a line on stderr
    with what the case is doing (a busy worker, a slow model server, a commerce outage)."""
    with Status(progress_text(case_id), console=errors) as spinner:

        def waiting(report: Waiting) -> None:
            errors.print(report.sentence())

        return await case.settled(
            timeout=timeout,
            viewer=viewer,
            start_hint=worker_command(state_dir),
            on_progress=lambda view: spinner.update(progress_text(case_id, view)),
            on_waiting=waiting,
        )


async def read_with_progress(
    case: CaseHandle, viewer: Identity, state_dir: Path, *, patience: float = READ_PATIENCE_SECONDS
) -> CaseView:
    """:meth:`CaseHandle.read_patiently`: a busy worker is waited for up to ``patience`` seconds, saying so."""
    with Status(Text(f"case {case.case_id}: reading…"), console=errors):
        return await case.read_patiently(
            viewer,
            start_hint=worker_command(state_dir),
            patience=patience,
            on_waiting=lambda report: errors.print(report.sentence()),
        )


async def still_working(case: CaseHandle, error: TransientError, *, waited: float, starter: str) -> TransientError:
    """A wait for the end that ran out (``error``), said as what the case is doing now and how to follow
    it; ``error`` itself when what it is doing cannot be read."""
    try:
        work = await case.work()
    except TransientError:
        return error
    ran_out = gave_up(Waiting(case.case_id, waited, work))
    return TransientError(
        ran_out.code,
        f"{ran_out.message}. Case {case.case_id} goes on; follow it: {follow_command(starter, case.case_id)}",
    )

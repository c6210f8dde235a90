"""One turn of a conversation at the terminal: the progress lines as the case publishes them, then the
reply, and the lines a chat reads from its input without blocking the event loop.

The reply is the authority (the ``reply`` update, :meth:`case_client.CaseHandle.reply_within`); the
progress stream is read beside it from the offset current when the message was sent, and once the
reply is there the stream is read up to where the case stood when it answered (a few seconds at most:
a stream that cannot be read costs its lines, never the reply).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TextIO

from case_client import CaseHandle, Progress
from contracts.case import TERMINAL_STATUSES
from contracts.conversation import ProgressItem, ProgressKind, TurnReply

DRAIN_SECONDS = 5.0
"""After the reply, how long the progress lines published before it are waited for."""


@dataclass
class TurnProgress:
    """What the progress reader of one turn has shown: the next offset it will read, and the latest
    time the case said it waits for the customer until."""

    next_offset: int
    waiting_until: datetime | None = None
    moved: asyncio.Event = field(default_factory=asyncio.Event)

    def saw(self, progress: Progress) -> None:
        self.next_offset = max(self.next_offset, progress.offset + 1)
        if progress.item.kind is ProgressKind.WAITING_FOR_CUSTOMER:
            self.waiting_until = progress.item.until
        self.moved.set()

    async def reached(self, offset: int) -> None:
        while self.next_offset < offset:
            self.moved.clear()
            await self.moved.wait()


async def show_progress(
    stream: AsyncIterator[Progress], seen: TurnProgress, show: Callable[[ProgressItem], None]
) -> None:
    """Every item of ``stream`` to ``show`` as it comes; a stream that fails ends quietly (the reply
    does not depend on it)."""
    with contextlib.suppress(Exception):
        async for progress in stream:
            seen.saw(progress)
            show(progress.item)


async def follow_turn(
    case: CaseHandle,
    turn: int,
    offset: int | None,
    *,
    timeout: float,
    show: Callable[[ProgressItem], None],
) -> tuple[TurnReply, TurnProgress]:
    """The reply to message ``turn`` (``case_still_working`` after ``timeout`` seconds), with every
    progress item from ``offset`` on shown as it comes (none when ``offset`` is None: the stream could
    not be read)."""
    seen = TurnProgress(next_offset=offset or 0)
    reader = None if offset is None else asyncio.create_task(show_progress(case.progress(offset), seen, show))
    try:
        answer = await case.reply_within(turn, timeout=timeout)
        if reader is not None:
            await _drain(case, answer, reader, seen)
    finally:
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
    return answer, seen


async def _drain(case: CaseHandle, answer: TurnReply, reader: asyncio.Task[None], seen: TurnProgress) -> None:
    """Wait (up to :data:`DRAIN_SECONDS`) for the lines published before the answer: up to the offset
    the case stood at when it answered, or now; for a case that ended, to its stream's end."""
    target = answer.progress_offset
    if answer.status not in TERMINAL_STATUSES:
        with contextlib.suppress(Exception):
            target = max(target, await asyncio.wait_for(case.progress_offset(), DRAIN_SECONDS))
    caught_up = asyncio.create_task(seen.reached(target if answer.status not in TERMINAL_STATUSES else sys.maxsize))
    try:
        await asyncio.wait({caught_up, reader}, timeout=DRAIN_SECONDS, return_when=asyncio.FIRST_COMPLETED)
    finally:
        caught_up.cancel()


class LineReader:
    """Lines of ``stream`` (a chat's stdin) read on a daemon thread, so that waiting for the next line
    never holds the event loop, and an interrupted chat never waits for a line at exit."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        threading.Thread(target=self._read, name="chat-input", daemon=True).start()

    def _read(self) -> None:
        # An unreadable input ends the chat like its end; a closed loop means the chat is over.
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            for text in iter(self._stream.readline, ""):
                self._loop.call_soon_threadsafe(self._lines.put_nowait, text)
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._lines.put_nowait, None)

    async def next(self) -> str | None:
        """The next line without its line break, or None at the end of the input."""
        text = await self._lines.get()
        return None if text is None else text.rstrip("\r\n")

"""Asking a busy Temporal server again: a call it cancels, cannot serve just now, or asks to try again
later is retried.

Two helpers, for two kinds of call:

* :func:`ask_again_while_busy`: a read that the loaded dev server now and then cancels
  (``operation was canceled``); a few quick attempts, then the error itself.
* :func:`ask_until_served`: a call the server may refuse for a while with *try again later*
  (``RESOURCE_EXHAUSTED: too many requests issued to Worker Deployment 'qinghe-support'. Please try
  again later`` when several workers start at once and all ask the deployment's workflow at the same
  moment). It waits with exponential back-off and jitter (:class:`Backoff`) for a bounded time, then
  raises :class:`~contracts.errors.TransientError` (exit 5, try again). It is for reads and for writes
  that are idempotent (making the same build current twice is harmless); never for a write that would
  do something twice.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from temporalio.service import RPCError, RPCStatusCode

from case_client._codes import ClientErrorCode
from contracts.errors import TransientError

T = TypeVar("T")

log = logging.getLogger(__name__)

DESCRIBE_ATTEMPTS = 5
PASSING_STATUSES = (RPCStatusCode.CANCELLED, RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED)
"""What a busy server answers a describe with now and then (the dev server under load: ``operation was
canceled``): asked again, it answers."""
TRY_AGAIN_STATUSES = (*PASSING_STATUSES, RPCStatusCode.RESOURCE_EXHAUSTED)
"""What a server answers when it wants the same call again later: the passing statuses, and
``RESOURCE_EXHAUSTED`` (a rate or concurrency limit: ``too many requests issued to Worker Deployment
...``)."""
TRY_AGAIN_WORDS = "try again later"
"""Any error whose message says this asks for the call again, whatever its status."""


busy_pause: Callable[[float], Awaitable[None]] = asyncio.sleep
"""How :func:`ask_again_while_busy` pauses between attempts; a test sets it to a clock of its own so
that the pauses pass without real waiting."""


async def ask_again_while_busy(call: Callable[[], Awaitable[T]]) -> T:
    """``call()``'s answer; a :data:`PASSING_STATUSES` error is asked again, up to
    :data:`DESCRIBE_ATTEMPTS` times, 0.2 s apart and doubling (:data:`busy_pause`). Any other error, or
    the last one, is raised. Only for reads: asking again must not change anything."""
    for attempt in range(1, DESCRIBE_ATTEMPTS):
        try:
            return await call()
        except RPCError as error:
            if error.status not in PASSING_STATUSES:
                raise
        await busy_pause(0.2 * 2 ** (attempt - 1))
    return await call()


def asks_to_try_again(error: BaseException) -> bool:
    """Whether ``error`` is the server asking for the same call later: an :class:`RPCError` with a
    :data:`TRY_AGAIN_STATUSES` status, or any error whose message says *try again later* (the SDK's
    worker passes the server's answer to a poll on as its own error)."""
    if isinstance(error, RPCError) and error.status in TRY_AGAIN_STATUSES:
        return True
    return TRY_AGAIN_WORDS in str(error).lower()


@dataclass(frozen=True)
class Backoff:
    """How long :func:`ask_until_served` waits between attempts, and for how long in all.

    The pause after attempt ``n`` (from 1) is ``first_seconds * multiplier ** (n - 1)``, at most
    ``max_seconds``, times a factor drawn uniformly from ``[1 - jitter, 1 + jitter)``: workers that
    were refused together do not all come back at the same moment. Past ``budget_seconds`` from the
    first attempt nothing is asked again. ``draw`` (a number in [0, 1), :func:`random.random`),
    ``sleep`` and ``clock`` are injectable so that tests wait no real time and are deterministic.
    """

    first_seconds: float = 0.25
    multiplier: float = 2.0
    max_seconds: float = 8.0
    budget_seconds: float = 60.0
    jitter: float = 0.25
    draw: Callable[[], float] = random.random
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        if not (self.first_seconds > 0 and self.multiplier >= 1 and self.max_seconds >= self.first_seconds):
            raise ValueError("Backoff needs first_seconds > 0, multiplier >= 1 and max_seconds >= first_seconds")
        if not (0 <= self.jitter < 1 and self.budget_seconds >= 0):
            raise ValueError("Backoff needs 0 <= jitter < 1 and budget_seconds >= 0")

    def base(self, attempt: int) -> float:
        """The pause after attempt ``attempt`` before its jitter."""
        return min(self.max_seconds, self.first_seconds * self.multiplier ** (attempt - 1))

    def pause(self, attempt: int) -> float:
        """The pause after attempt ``attempt``: :meth:`base` times its jitter (one draw)."""
        return self.base(attempt) * (1 - self.jitter + 2 * self.jitter * self.draw())


START_BACKOFF = Backoff()
"""A worker's start: about 60 s of asking again, pauses from 0.25 s growing to 8 s."""


async def ask_until_served(call: Callable[[], Awaitable[T]], what: str, backoff: Backoff = START_BACKOFF) -> T:
    """``call()``'s answer, asked again while the server asks to try again (:func:`asks_to_try_again`),
    pausing as ``backoff`` says; any other error is raised as it is.

    After ``backoff.budget_seconds`` (the last attempt made at that time at the latest) a try-again
    answer raises :class:`TransientError` (``temporal_busy``, the CLI's exit 5) naming ``what`` and the
    server's last answer. Only for reads and idempotent writes."""
    deadline = backoff.clock() + backoff.budget_seconds
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except Exception as error:
            if not asks_to_try_again(error):
                raise
            answer = error.message if isinstance(error, RPCError) else str(error)
            left = deadline - backoff.clock()
            if left <= 0:
                raise TransientError(
                    ClientErrorCode.TEMPORAL_BUSY,
                    f"{what}: the Temporal server still asked to try again after {attempt} attempts in "
                    f"{backoff.budget_seconds:.0f}s ({answer[:200]}); start it again in a while",
                ) from None
            pause = min(backoff.pause(attempt), left)
            log.warning(
                "%s: the Temporal server asked to try again (attempt %d: %s); asking again in %.1fs",
                what,
                attempt,
                answer[:200],
                pause,
            )
        await backoff.sleep(pause)

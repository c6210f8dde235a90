"""Asking a busy Temporal server again: a read it cancels or cannot serve just now is retried."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from temporalio.service import RPCError, RPCStatusCode

T = TypeVar("T")

DESCRIBE_ATTEMPTS = 5
PASSING_STATUSES = (RPCStatusCode.CANCELLED, RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED)
"""What a busy server answers a describe with now and then (the dev server under load: ``operation was
canceled``): asked again, it answers."""


async def ask_again_while_busy(call: Callable[[], Awaitable[T]]) -> T:
    """``call()``'s answer; a :data:`PASSING_STATUSES` error is asked again, up to
    :data:`DESCRIBE_ATTEMPTS` times, 0.2 s apart and doubling. Any other error, or the last one, is
    raised. Only for reads: asking again must not change anything."""
    for attempt in range(1, DESCRIBE_ATTEMPTS):
        try:
            return await call()
        except RPCError as error:
            if error.status not in PASSING_STATUSES:
                raise
        await asyncio.sleep(0.2 * 2 ** (attempt - 1))
    return await call()

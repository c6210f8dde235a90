"""The boundary every activity crosses on its way back to Temporal: heartbeats out, bounded failures back.

One worker interceptor does two things for every activity, so that no activity has to remember them:

* **Heartbeats.** While an activity with a heartbeat timeout runs, a background task heartbeats at a
  third of that timeout, the first time one third after the start: Temporal counts the heartbeat
  timeout from the start, so an activity that ends sooner (as most do) sends no heartbeat request at
  all. A worker that dies (SIGKILL, a lost machine) stops heartbeating, and Temporal schedules the
  next attempt on another worker once the heartbeat timeout passes, instead of waiting out the much
  longer start-to-close timeout that a slow but healthy call needs.
* **Bounded failures.** Whatever an activity raises leaves it through
  :func:`contracts.errors.to_application_error`, without its cause chain: a one-line message, the
  stable code and class, and the attempt number. Cancellation passes through untouched. The SDK then
  logs the failure; :class:`contracts.logs.OneLineFailures` writes that as one line with its code and
  case id, so an unexpected error (neither a :class:`SupportError` nor an ``ApplicationError``) has
  its own stack logged here first, while it still points at the bug.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from contracts.errors import SupportError, to_application_error

HEARTBEATS_PER_TIMEOUT = 3
heartbeat_pause: Callable[[float], Awaitable[None]] = asyncio.sleep
"""How the heartbeat task waits between beats; a test sets it to a clock of its own so that the
intervals pass without real waiting."""

_T = TypeVar("_T")


class ActivityBoundary(Interceptor):
    """Worker interceptor: pass ``interceptors=[ActivityBoundary()]`` to ``Worker``."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _BoundaryInbound(next)


class _BoundaryInbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        return await run_within_boundary(lambda: self.next.execute_activity(input))


async def run_within_boundary(body: Callable[[], Awaitable[_T]]) -> _T:
    """Run one activity body (inside an activity context) with heartbeats and bounded failures."""
    try:
        async with _heartbeating():
            return await body()
    except Exception as error:
        if not isinstance(error, (SupportError, ApplicationError)):
            activity.logger.error("unexpected %s in the activity", type(error).__name__, exc_info=error)
        raise to_application_error(error, attempt=activity.info().attempt) from None


@contextlib.asynccontextmanager
async def _heartbeating() -> AsyncIterator[None]:
    """Heartbeat in the background while the body runs, when the activity has a heartbeat timeout."""
    timeout = activity.info().heartbeat_timeout
    if not timeout:
        yield
        return
    interval = timeout.total_seconds() / HEARTBEATS_PER_TIMEOUT

    async def beat() -> None:
        while True:  # the first beat after one interval: Temporal times the heartbeat from the start
            await heartbeat_pause(interval)
            activity.heartbeat()

    task = asyncio.create_task(beat(), name=f"heartbeat-{activity.info().activity_type}")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

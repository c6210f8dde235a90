"""Run an activity in Temporal's ActivityEnvironment behind the worker's real boundary.

``ActivityEnvironment`` runs no worker interceptors; tests that check what an activity's failure
looks like to Temporal wrap the activity with :func:`activities.runtime.boundary.run_within_boundary`, the
very function the worker's interceptor calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.testing import ActivityEnvironment

from activities.runtime.boundary import run_within_boundary


async def run_bounded(fn: Callable[..., Awaitable[Any]], *args: Any, env: ActivityEnvironment | None = None) -> Any:
    """``env.run(fn, *args)`` with heartbeats and bounded ``ApplicationError`` failures."""

    async def bounded(*call_args: Any) -> Any:
        return await run_within_boundary(lambda: fn(*call_args))

    return await (env or ActivityEnvironment()).run(bounded, *args)

"""The boundary heartbeats a running activity every third of its heartbeat timeout, first after one interval."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta

from temporalio.testing import ActivityEnvironment

from activities.boundary import HEARTBEATS_PER_TIMEOUT, run_within_boundary

TIMEOUT = timedelta(seconds=0.9)
INTERVAL = TIMEOUT.total_seconds() / HEARTBEATS_PER_TIMEOUT


def environment(beats: list[tuple[object, ...]], timeout: timedelta | None = TIMEOUT) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timeout)
    env.on_heartbeat = lambda *details: beats.append(details)
    return env


async def run_for(seconds: float, env: ActivityEnvironment) -> str:
    async def body() -> str:
        await asyncio.sleep(seconds)
        return "done"

    async def activity() -> str:
        return await run_within_boundary(body)

    return await env.run(activity)


async def test_an_activity_shorter_than_one_interval_sends_no_heartbeat() -> None:
    beats: list[tuple[object, ...]] = []
    assert await run_for(INTERVAL / 4, environment(beats)) == "done"
    assert beats == []


async def test_a_longer_activity_heartbeats_every_interval_while_it_runs() -> None:
    beats: list[tuple[object, ...]] = []
    assert await run_for(INTERVAL * 2.5, environment(beats)) == "done"
    assert 1 <= len(beats) <= 2  # after one interval and after two (a loaded machine may be late)
    sent = len(beats)
    await asyncio.sleep(INTERVAL * 1.5)
    assert len(beats) == sent  # the heartbeat task ends with the activity


async def test_an_activity_without_a_heartbeat_timeout_never_heartbeats() -> None:
    beats: list[tuple[object, ...]] = []
    assert await run_for(INTERVAL * 1.5, environment(beats, timeout=None)) == "done"
    assert beats == []

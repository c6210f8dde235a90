"""The boundary heartbeats a running activity every third of its heartbeat timeout, first after one
interval. The intervals pass on a clock of the test's own (``boundary.heartbeat_pause``): no real waiting."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from datetime import timedelta

import pytest
from temporalio.testing import ActivityEnvironment

from activities.runtime import boundary
from activities.runtime.boundary import HEARTBEATS_PER_TIMEOUT, run_within_boundary

TIMEOUT = timedelta(seconds=0.9)
INTERVAL = TIMEOUT.total_seconds() / HEARTBEATS_PER_TIMEOUT


class Intervals:
    """The heartbeat task's pauses: each recorded, and each over once ``passing`` lets it (at once by
    default; never, until the task is cancelled, when it is False)."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.passing = True

    async def pause(self, seconds: float) -> None:
        self.asked.append(seconds)
        if not self.passing:
            await asyncio.Event().wait()
        await asyncio.sleep(0)


@pytest.fixture
def intervals(monkeypatch: pytest.MonkeyPatch) -> Intervals:
    clock = Intervals()
    monkeypatch.setattr(boundary, "heartbeat_pause", clock.pause)
    return clock


def environment(beats: list[tuple[object, ...]], timeout: timedelta | None = TIMEOUT) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timeout)
    env.on_heartbeat = lambda *details: beats.append(details)
    return env


async def run_until(done: Callable[[], bool], env: ActivityEnvironment) -> str:
    """Run an activity whose body ends once ``done()`` holds."""

    async def body() -> str:
        while not done():
            await asyncio.sleep(0)
        return "done"

    async def activity() -> str:
        return await run_within_boundary(body)

    return await env.run(activity)


async def test_an_activity_shorter_than_one_interval_sends_no_heartbeat(intervals: Intervals) -> None:
    beats: list[tuple[object, ...]] = []
    intervals.passing = False  # the activity ends within its first interval
    assert await run_until(lambda: bool(intervals.asked), environment(beats)) == "done"
    assert beats == [] and intervals.asked == [INTERVAL]


async def test_a_longer_activity_heartbeats_every_interval_while_it_runs(intervals: Intervals) -> None:
    beats: list[tuple[object, ...]] = []
    assert await run_until(lambda: len(beats) == 2, environment(beats)) == "done"
    assert len(beats) == 2 and intervals.asked[:2] == [INTERVAL, INTERVAL]  # a beat after each interval
    asked = len(intervals.asked)
    for _ in range(10):
        await asyncio.sleep(0)
    assert len(beats) == 2 and len(intervals.asked) == asked  # the heartbeat task ends with the activity


async def test_an_activity_without_a_heartbeat_timeout_never_heartbeats(intervals: Intervals) -> None:
    beats: list[tuple[object, ...]] = []
    turns = iter(range(20))
    assert await run_until(lambda: next(turns, None) is None, environment(beats, timeout=None)) == "done"
    assert beats == [] and intervals.asked == []

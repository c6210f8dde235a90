"""Workers that start together: the server asks some of them to try again later, and they do.

Eight workers of one build started at once on one dev server got ``RESOURCE_EXHAUSTED: too many requests
issued to Worker Deployment 'qinghe-support'. Please try again later`` from the deployment describe (and
the set-current) of their start, and two to four of them exited 1 (issue 44, item 8). Here, with no
server: such an answer is asked again with exponential back-off and jitter, within a bounded time, and
past it the worker gets the project's transient error, exit 5 (try again), in one line. The clock and
the sleep are fakes (no real time passes) and the jitter's draws are given, so every run is the same.
(tests/cluster/test_eight_workers.py starts the eight real workers.)
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentResponse,
    SetWorkerDeploymentCurrentVersionResponse,
)
from temporalio.common import WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode

import worker
from case_client._busy_server import START_BACKOFF, Backoff, ask_until_served, asks_to_try_again
from case_client.deployment import current_build_id, make_current
from cli.exit_codes import ExitCode, exit_code_for_error
from contracts.errors import TransientError, WireCode

BUSY = "too many requests issued to Worker Deployment 'qinghe-support'. Please try again later"
OURS = WorkerDeploymentVersion("qinghe-support", "0.6.0-abc")


def _busy() -> RPCError:
    return RPCError(BUSY, RPCStatusCode.RESOURCE_EXHAUSTED, b"")


class _Clock:
    """Time that passes only when slept; every pause is remembered."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def _backoff(clock: _Clock, draws: Iterable[float] = itertools.repeat(0.5), budget_seconds: float = 60.0) -> Backoff:
    draw = iter(draws)
    return Backoff(budget_seconds=budget_seconds, draw=lambda: next(draw), sleep=clock.sleep, clock=clock.time)


class _Deployment:
    """A workflow service holding one deployment: its describe and set-current answer ``busy`` errors
    first (RESOURCE_EXHAUSTED unless given), then as the server does."""

    def __init__(self, *, describe_busy: int = 0, set_busy: int = 0, current: str = "", stale: bool = False) -> None:
        self.describe_busy = describe_busy
        self.set_busy = set_busy
        self.current = current
        self.stale = stale
        """The describe names no current version (it was read before another worker's set-current)."""
        self.describes = 0
        self.sets = 0

    async def describe_worker_deployment(self, request: Any) -> DescribeWorkerDeploymentResponse:
        self.describes += 1
        if self.describe_busy:
            self.describe_busy -= 1
            raise _busy()
        response = DescribeWorkerDeploymentResponse()
        if not self.stale:
            response.worker_deployment_info.routing_config.current_deployment_version.build_id = self.current
        return response

    async def set_worker_deployment_current_version(self, request: Any) -> SetWorkerDeploymentCurrentVersionResponse:
        self.sets += 1
        if self.set_busy:
            self.set_busy -= 1
            raise _busy()
        # As the server answers: the version that was current before, itself when it already was.
        response = SetWorkerDeploymentCurrentVersionResponse()
        if self.current:
            response.previous_deployment_version.deployment_name = request.deployment_name
            response.previous_deployment_version.build_id = self.current
        else:
            response.previous_version = "__unversioned__"
        self.current = request.build_id
        return response


def _client(service: object) -> Any:
    return SimpleNamespace(namespace="default", identity="test@host", workflow_service=service)


# --- the describe and the set-current of a worker's start ------------------------------------------


async def test_a_describe_the_server_asks_to_try_again_is_asked_again_and_answers() -> None:
    clock = _Clock()
    service = _Deployment(describe_busy=3, current="b1")
    assert await current_build_id(_client(service), "qinghe-support", backoff=_backoff(clock)) == "b1"
    assert service.describes == 4
    assert clock.pauses == [0.25, 0.5, 1.0]  # draws of 0.5: no jitter either way


async def test_a_set_current_the_server_asks_to_try_again_is_asked_again_and_makes_the_build_current() -> None:
    clock = _Clock()
    service = _Deployment(describe_busy=1, set_busy=2)
    assert await make_current(_client(service), OURS, backoff=_backoff(clock)) is True
    assert service.current == OURS.build_id
    assert (service.describes, service.sets) == (2, 3)
    assert clock.pauses == [0.25, 0.25, 0.5]  # each call has its own attempts


async def test_a_build_another_worker_made_current_first_is_not_made_current_again() -> None:
    """Eight workers see no current version and all make their build current: the server answers the
    later ones with no change (the previous version is their own build), and they say "is", not "made"."""
    service = _Deployment(current=OURS.build_id, stale=True)
    assert await make_current(_client(service), OURS, backoff=_backoff(_Clock())) is False
    assert (service.sets, service.current) == (1, OURS.build_id)
    assert await make_current(_client(_Deployment(current="0.5.0-old")), OURS, backoff=_backoff(_Clock())) is True


async def test_a_busy_answer_past_the_budget_is_a_transient_error_that_exits_5() -> None:
    clock = _Clock()
    service = _Deployment(describe_busy=1000)
    with pytest.raises(TransientError) as raised:
        await make_current(_client(service), OURS, backoff=_backoff(clock, budget_seconds=60.0))
    error = raised.value
    assert error.code == "temporal_busy" and "still asked to try again" in error.message and BUSY in error.message
    assert exit_code_for_error(error) is ExitCode.UNAVAILABLE
    # Bounded: no pause runs past the budget, and one last attempt is made when it is spent.
    assert clock.now == 60.0 and sum(clock.pauses) == 60.0
    assert service.describes == len(clock.pauses) + 1 and service.sets == 0
    assert len(clock.pauses) < 20


async def test_a_set_current_busy_past_the_budget_is_a_transient_error_too() -> None:
    clock = _Clock()
    service = _Deployment(set_busy=1000)
    with pytest.raises(TransientError, match=r"make qinghe-support:0\.6\.0-abc current"):
        await make_current(_client(service), OURS, backoff=_backoff(clock, budget_seconds=5.0))
    assert clock.now == 5.0 and service.current == ""


# --- the back-off --------------------------------------------------------------------------------


def test_the_back_off_grows_with_jitter_within_bounds() -> None:
    backoff = Backoff(draw=random.Random(44).random)
    pauses = [backoff.pause(attempt) for attempt in range(1, 11)]
    bases = [backoff.base(attempt) for attempt in range(1, 11)]
    assert bases == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0, 8.0]
    for pause, base in zip(pauses, bases, strict=True):
        assert 0.75 * base <= pause < 1.25 * base
    growing = pauses[:6]
    assert growing == sorted(growing) and len(set(growing)) == 6  # each above the one before, up to the cap
    assert len({round(pause / base, 6) for pause, base in zip(pauses, bases, strict=True)}) == 10  # jittered


def test_the_jitter_spreads_workers_refused_together_and_its_extremes_are_the_bounds() -> None:
    one, other = Backoff(draw=random.Random(1).random), Backoff(draw=random.Random(2).random)
    assert [one.pause(n) for n in range(1, 6)] != [other.pause(n) for n in range(1, 6)]
    assert Backoff(draw=lambda: 0.0).pause(3) == 0.75 and Backoff(draw=lambda: 0.999999).pause(3) < 1.25


def test_a_worker_start_asks_again_for_about_a_minute() -> None:
    assert START_BACKOFF.budget_seconds == 60.0 and START_BACKOFF.max_seconds <= 10.0
    with pytest.raises(ValueError):
        Backoff(jitter=1.0)
    with pytest.raises(ValueError):
        Backoff(first_seconds=0.0)


# --- which answers are asked again ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "again"),
    [
        (RPCError(BUSY, RPCStatusCode.RESOURCE_EXHAUSTED, b""), True),
        (RPCError("operation was canceled", RPCStatusCode.CANCELLED, b""), True),
        (RPCError("unavailable", RPCStatusCode.UNAVAILABLE, b""), True),
        (RPCError("busy. Please try again later", RPCStatusCode.UNKNOWN, b""), True),
        (RuntimeError(f"Poll failure: {BUSY}"), True),
        (RPCError("denied", RPCStatusCode.PERMISSION_DENIED, b""), False),
        (RPCError("no Worker Deployment found", RPCStatusCode.NOT_FOUND, b""), False),
        (RuntimeError("boom"), False),
    ],
)
def test_what_asks_to_try_again(error: Exception, again: bool) -> None:
    assert asks_to_try_again(error) is again


async def test_another_error_is_raised_at_once() -> None:
    clock = _Clock()
    calls = 0

    async def refused() -> None:
        nonlocal calls
        calls += 1
        raise RPCError("denied", RPCStatusCode.PERMISSION_DENIED, b"")

    with pytest.raises(RPCError, match="denied"):
        await ask_until_served(refused, "describe", _backoff(clock))
    assert (calls, clock.pauses) == (1, [])


# --- the worker's exit status -----------------------------------------------------------------------


def test_a_worker_stopped_by_a_try_again_answer_exits_5_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert worker.stopped_by(RuntimeError(f"Poll failure:\n{BUSY}")) == ExitCode.UNAVAILABLE == 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("worker: unavailable: the Temporal server asked to try again")
    assert worker.stopped_by(RuntimeError("boom")) == ExitCode.UNEXPECTED
    assert capsys.readouterr().err == "worker: stopped after a fatal worker error: boom\n"


def test_a_start_that_ran_out_of_budget_exits_5_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    error = TransientError(WireCode("temporal_busy"), f"describe worker deployment 'qinghe-support': ... ({BUSY})")
    assert worker.refused(error) == 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("worker: unavailable: temporal_busy: ")

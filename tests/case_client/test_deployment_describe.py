"""Reads of a busy server: a describe it cancels under load (which build is current, who polls a task
queue) is asked again. (The deployment describe's back-off, budget and try-again answers:
test_busy_server_backoff.py.)"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.api.workflowservice.v1 import DescribeTaskQueueResponse, DescribeWorkerDeploymentResponse
from temporalio.service import RPCError, RPCStatusCode

from case_client import _busy_server
from case_client._busy_server import DESCRIBE_ATTEMPTS, Backoff
from case_client._connection import live_poller_identities
from case_client.deployment import current_build_id
from contracts.errors import TransientError


class _Service:
    """A workflow service whose describe answers with ``errors`` first, then names build ``b1``."""

    def __init__(self, *errors: RPCStatusCode) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def describe_worker_deployment(self, request: Any) -> DescribeWorkerDeploymentResponse:
        self.calls += 1
        if self.errors:
            raise RPCError("operation was canceled", self.errors.pop(0), b"")
        response = DescribeWorkerDeploymentResponse()
        response.worker_deployment_info.routing_config.current_deployment_version.build_id = "b1"
        return response


def _client(service: object) -> Any:
    return SimpleNamespace(namespace="default", workflow_service=service)


class _Clock:
    """Time that passes only when slept: no real waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


def _backoff(clock: _Clock) -> Backoff:
    return Backoff(budget_seconds=10.0, draw=lambda: 0.5, sleep=clock.sleep, clock=clock.time)


async def test_a_cancelled_describe_is_asked_again() -> None:
    service = _Service(RPCStatusCode.CANCELLED, RPCStatusCode.UNAVAILABLE)
    assert await current_build_id(_client(service), "d", backoff=_backoff(_Clock())) == "b1"
    assert service.calls == 3


async def test_a_describe_cancelled_every_time_is_a_transient_error_once_the_budget_is_spent() -> None:
    clock = _Clock()
    service = _Service(*[RPCStatusCode.CANCELLED] * 100)
    with pytest.raises(TransientError, match="still asked to try again"):
        await current_build_id(_client(service), "d", backoff=_backoff(clock))
    assert clock.now == 10.0 and 2 < service.calls < 100


async def test_a_refusal_is_not_asked_again_and_a_new_deployment_has_no_current_build() -> None:
    denied = _Service(RPCStatusCode.PERMISSION_DENIED)
    with pytest.raises(RPCError):
        await current_build_id(_client(denied), "d")
    assert denied.calls == 1
    assert await current_build_id(_client(_Service(RPCStatusCode.NOT_FOUND)), "d") is None


class _QueueService:
    """A workflow service whose task-queue describe is cancelled ``cancelled`` times, then names a poller."""

    def __init__(self, cancelled: int) -> None:
        self.cancelled = cancelled
        self.calls = 0

    async def describe_task_queue(self, request: Any, timeout: Any = None) -> DescribeTaskQueueResponse:
        self.calls += 1
        if self.cancelled:
            self.cancelled -= 1
            raise RPCError("operation was canceled", RPCStatusCode.CANCELLED, b"")
        response = DescribeTaskQueueResponse()
        poller = response.pollers.add()
        poller.identity = f"worker-{request.task_queue_type}"
        poller.last_access_time.GetCurrentTime()
        return response


@pytest.fixture
def busy_pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses between describes asked again, recorded instead of waited."""
    pauses: list[float] = []

    async def pause(seconds: float) -> None:
        pauses.append(seconds)

    monkeypatch.setattr(_busy_server, "busy_pause", pause)
    return pauses


async def test_a_cancelled_task_queue_describe_is_asked_again(busy_pauses: list[float]) -> None:
    """A fresh clone's test_ask_retry failed on one 'operation was canceled' from the loaded dev server."""
    service = _QueueService(cancelled=2)
    identities = await live_poller_identities(_client(service), "q")
    assert identities == ["worker-1", "worker-2"]
    assert service.calls == 4
    assert busy_pauses == [0.2, 0.4]  # the first task type's describe, cancelled twice, asked again


async def test_a_task_queue_describe_cancelled_every_time_is_a_transient_error(busy_pauses: list[float]) -> None:
    service = _QueueService(cancelled=2 * DESCRIBE_ATTEMPTS)
    with pytest.raises(TransientError, match="cannot describe task queue 'q'"):
        await live_poller_identities(_client(service), "q")
    assert service.calls == DESCRIBE_ATTEMPTS
    assert busy_pauses == [0.2, 0.4, 0.8, 1.6]  # doubling, about 3 s in all on a real server

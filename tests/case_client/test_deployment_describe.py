"""Asking the server which build is current: a describe it cancels under load is asked again."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.api.workflowservice.v1 import DescribeWorkerDeploymentResponse
from temporalio.service import RPCError, RPCStatusCode

from case_client.deployment import DESCRIBE_ATTEMPTS, current_build_id


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


def _client(service: _Service) -> Any:
    return SimpleNamespace(namespace="default", workflow_service=service)


async def test_a_cancelled_describe_is_asked_again() -> None:
    service = _Service(RPCStatusCode.CANCELLED, RPCStatusCode.UNAVAILABLE)
    assert await current_build_id(_client(service), "d") == "b1"
    assert service.calls == 3


async def test_a_describe_cancelled_every_time_is_raised_after_the_last_attempt() -> None:
    service = _Service(*[RPCStatusCode.CANCELLED] * DESCRIBE_ATTEMPTS)
    with pytest.raises(RPCError):
        await current_build_id(_client(service), "d")
    assert service.calls == DESCRIBE_ATTEMPTS


async def test_a_refusal_is_not_asked_again_and_a_new_deployment_has_no_current_build() -> None:
    denied = _Service(RPCStatusCode.PERMISSION_DENIED)
    with pytest.raises(RPCError):
        await current_build_id(_client(denied), "d")
    assert denied.calls == 1
    assert await current_build_id(_client(_Service(RPCStatusCode.NOT_FOUND)), "d") is None

"""The counters the activities record, through the Temporal SDK's activity metric meter.

``activity.metric_meter()`` is the meter of the worker's runtime: with ``SUPPORT_METRICS_PORT`` set
these counters are served beside the SDK's own metrics (:mod:`activities.runtime.metrics_runtime`), otherwise
the meter does nothing. The SDK adds ``namespace``, ``task_queue`` and ``activity_type`` labels itself.
Every label value set here is from a bounded set: an activity name, a provider label, a tool name, a
stable error code, a tenant id the directory lists. No question, name or order id is ever a label.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from temporalio import activity
from temporalio.common import MetricCounter

from contracts.errors import INTERNAL_ERROR, SupportError
from contracts.metrics import OTHER_LABEL, MetricLabel, WorkerMetric, bounded_code
from contracts.model_io import ModelCallMeta, ToolObservation, ToolRequest
from contracts.tools import INVESTIGATION_TOOLS

OK = "ok"
OTHER = OTHER_LABEL
UNKNOWN_PROVIDER = "unknown"
"""The provider label of a failure that came before any provider was named (a bad setting)."""


def _counter(metric: WorkerMetric, description: str) -> MetricCounter:
    return activity.metric_meter().create_counter(metric.value, description)


def outcome_of(error: BaseException) -> str:
    """A failure's label: its stable code, or ``internal_error`` for an exception that is not ours."""
    return bounded_code(error.code) if isinstance(error, SupportError) else INTERNAL_ERROR.value


class _Reply(Protocol):
    @property
    def meta(self) -> ModelCallMeta: ...


_Self = TypeVar("_Self")
_Request = TypeVar("_Request")
_Result = TypeVar("_Result", bound=_Reply)


def counted_model_request(
    method: Callable[[_Self, _Request], Awaitable[_Result]],
) -> Callable[[_Self, _Request], Awaitable[_Result]]:
    """Decorate a model activity (under ``@activity.defn``): count its request by kind (the activity
    type), provider and outcome (the case counts the tokens of the reply or of a refused one)."""

    @functools.wraps(method)
    async def counted(self: _Self, request: _Request) -> _Result:
        kind = activity.info().activity_type
        try:
            result = await method(self, request)
        except Exception as error:
            named = error if isinstance(error, SupportError) else None
            provider = (named.provider if named else None) or UNKNOWN_PROVIDER
            _model_request(kind, provider, outcome_of(error))
            raise
        _model_request(kind, result.meta.provider, OK)
        return result

    return counted


def _model_request(kind: str, provider: str, outcome: str) -> None:
    """Count one request. Its tokens are counted by the case instead (workflows/case_metrics.py
    ``model_reply``), where the verified tenant is known and the operator's price is attached."""
    labels = {MetricLabel.KIND.value: kind, MetricLabel.PROVIDER.value: provider}
    _counter(WorkerMetric.MODEL_REQUESTS, "Model requests by kind, provider and outcome").add(
        1, {**labels, MetricLabel.OUTCOME.value: outcome}
    )


def counted_tool_call(
    method: Callable[[_Self, ToolRequest], Awaitable[ToolObservation]],
) -> Callable[[_Self, ToolRequest], Awaitable[ToolObservation]]:
    """Decorate the tool activity (under ``@activity.defn``): count each call by tool and outcome:
    ``ok``, the code of the refusal the model is shown, or the code of the failure raised instead."""

    @functools.wraps(method)
    async def counted(self: _Self, request: ToolRequest) -> ToolObservation:
        tool = request.name if request.name in INVESTIGATION_TOOLS else OTHER
        try:
            observation = await method(self, request)
        except Exception as error:
            _tool_call(tool, outcome_of(error))
            raise
        _tool_call(tool, OK if observation.ok else bounded_code(observation.error_code))
        return observation

    return counted


def _tool_call(tool: str, outcome: str) -> None:
    _counter(WorkerMetric.TOOL_CALLS, "Investigation tool calls by tool and outcome").add(
        1, {MetricLabel.TOOL.value: tool, MetricLabel.OUTCOME.value: outcome}
    )


def count_settlement_retry(tenant: str) -> None:
    """Count a settlement attempt after the first (``activity.info().attempt > 1``): a commerce call that
    failed or timed out and is being tried again. ``tenant`` must be one the directory lists."""
    if activity.info().attempt > 1:
        _counter(WorkerMetric.SETTLEMENT_RETRIES, "Settlement attempts after the first, by tenant").add(
            1, {MetricLabel.TENANT.value: tenant}
        )

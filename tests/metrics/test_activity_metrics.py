"""The activity counters and the metrics settings, without a server: the SDK's in-memory metric buffer.

A Temporal runtime with a ``MetricBuffer`` records every counter update an activity makes through
``activity.metric_meter()``; ``ActivityEnvironment`` runs the decorated activities with that meter. The
end-to-end scrape after a real case is tests/metrics/test_exported_metrics.py.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig
from temporalio.testing import ActivityEnvironment

from activities.runtime.activity_metrics import count_settlement_retry, counted_model_request, counted_tool_call
from activities.runtime.metrics_runtime import MetricsEndpoint, metrics_endpoint
from commerce_server.metrics import serve_metrics
from contracts.errors import ConfigurationError, TransientError, WireCode
from contracts.knowledge import Language
from contracts.metrics import WorkerMetric
from contracts.model_io import ModelCallMeta, ModelUsage, ToolObservation, ToolRequest
from contracts.names import ActivityName
from contracts.tools import ToolName
from keystore import demo_identity


class Recorded:
    """The counter updates a runtime's buffer holds, as ``{(name, labels): total}``."""

    def __init__(self) -> None:
        self.buffer = MetricBuffer(10_000)
        self.runtime = Runtime(telemetry=TelemetryConfig(metrics=self.buffer))
        self.totals: Counter[tuple[str, frozenset[tuple[str, str]]]] = Counter()

    def environment(self, activity_type: str, attempt: int = 1) -> ActivityEnvironment:
        env = ActivityEnvironment()
        env.metric_meter = self.runtime.metric_meter
        env.info = dataclasses.replace(env.info, activity_type=activity_type, attempt=attempt)
        return env

    def read(self) -> Counter[tuple[str, frozenset[tuple[str, str]]]]:
        for update in self.buffer.retrieve_updates():
            labels = frozenset((str(k), str(v)) for k, v in update.attributes.items())
            self.totals[(update.metric.name, labels)] += int(update.value)
        return self.totals

    def value(self, metric: WorkerMetric, **labels: str) -> int:
        wanted = set(labels.items())
        return sum(v for (name, have), v in self.read().items() if name == metric.value and wanted <= have)


@dataclasses.dataclass
class Reply:
    meta: ModelCallMeta


class FakeModel:
    def __init__(self, reply: Reply | None = None, error: Exception | None = None) -> None:
        self.reply, self.error = reply, error

    @counted_model_request
    async def plan(self, request: str) -> Reply:
        if self.error is not None:
            raise self.error
        assert self.reply is not None
        return self.reply


def meta(usage: ModelUsage | None) -> ModelCallMeta:
    return ModelCallMeta(provider="deepseek", model="deepseek-chat", attempt=1, usage=usage)


async def test_a_reply_counts_one_request_and_leaves_its_tokens_to_the_case() -> None:
    """Tokens are counted by the workflow (workflows/case_metrics.py), which knows the verified tenant."""
    recorded = Recorded()
    usage = ModelUsage(prompt_tokens=120, completion_tokens=30, total_tokens=150)
    env = recorded.environment(ActivityName.PLAN_CASE)
    await env.run(FakeModel(Reply(meta(usage))).plan, "Please refund QH-1001")
    await env.run(FakeModel(Reply(meta(None))).plan, "Please refund QH-1001")

    labels = {"kind": ActivityName.PLAN_CASE.value, "provider": "deepseek"}
    assert recorded.value(WorkerMetric.MODEL_REQUESTS, **labels, outcome="ok") == 2
    assert recorded.value(WorkerMetric.MODEL_TOKENS) == 0


async def test_a_failed_request_counts_its_code() -> None:
    recorded = Recorded()
    refused = TransientError(WireCode("rate_limited"), "slow down").naming_model(
        "deepseek-chat", "deepseek", {"prompt_tokens": 50, "completion_tokens": 0, "total_tokens": 50}
    )
    with pytest.raises(TransientError):
        await recorded.environment(ActivityName.PLAN_CASE).run(FakeModel(error=refused).plan, "q")
    with pytest.raises(ValueError):
        await recorded.environment(ActivityName.PLAN_CASE).run(FakeModel(error=ValueError("bug")).plan, "q")

    assert recorded.value(WorkerMetric.MODEL_REQUESTS, provider="deepseek", outcome="rate_limited") == 1
    assert recorded.value(WorkerMetric.MODEL_REQUESTS, provider="unknown", outcome="internal_error") == 1


class FakeTools:
    def __init__(self, observation: ToolObservation | None = None, error: Exception | None = None) -> None:
        self.observation, self.error = observation, error

    @counted_tool_call
    async def run(self, request: ToolRequest) -> ToolObservation:
        if self.error is not None:
            raise self.error
        assert self.observation is not None
        return self.observation


def tool_request(name: str) -> ToolRequest:
    return ToolRequest(
        case_id="case-1",
        applicant=demo_identity("alice"),
        language=Language.EN,
        call_id="call-1",
        name=name,
        arguments={"order_id": "QH-1001"},
    )


def observation(ok: bool, code: str | None = None) -> ToolObservation:
    return ToolObservation(call_id="call-1", name=ToolName.GET_ORDER, ok=ok, error_code=code)


async def test_tool_calls_are_counted_by_tool_and_bounded_outcome() -> None:
    recorded = Recorded()
    env = recorded.environment(ActivityName.RUN_INVESTIGATION_TOOL)
    await env.run(FakeTools(observation(True)).run, tool_request(ToolName.GET_ORDER))
    await env.run(FakeTools(observation(False, "order_not_accessible")).run, tool_request(ToolName.GET_ORDER))
    await env.run(FakeTools(observation(False, "QH-1001 is not yours")).run, tool_request(ToolName.GET_ORDER))
    await env.run(FakeTools(observation(True)).run, tool_request("Please refund QH-1001"))
    with pytest.raises(TransientError):
        await env.run(
            FakeTools(error=TransientError(WireCode("commerce_unavailable"), "down")).run, tool_request("get_order")
        )

    tool = ToolName.GET_ORDER.value
    assert recorded.value(WorkerMetric.TOOL_CALLS, tool=tool, outcome="ok") == 1
    assert recorded.value(WorkerMetric.TOOL_CALLS, tool=tool, outcome="order_not_accessible") == 1
    assert recorded.value(WorkerMetric.TOOL_CALLS, tool=tool, outcome="other") == 1  # never the text
    assert recorded.value(WorkerMetric.TOOL_CALLS, tool="other", outcome="ok") == 1  # never the name
    assert recorded.value(WorkerMetric.TOOL_CALLS, tool=tool, outcome="commerce_unavailable") == 1
    values = {value for (_, labels) in recorded.read() for _, value in labels}
    assert not any("QH-1001" in value for value in values)


def test_only_a_settlement_attempt_after_the_first_is_a_retry() -> None:
    recorded = Recorded()
    recorded.environment(ActivityName.EXECUTE_REFUND, attempt=1).run(count_settlement_retry, "qinghe")
    assert recorded.value(WorkerMetric.SETTLEMENT_RETRIES) == 0
    recorded.environment(ActivityName.EXECUTE_REFUND, attempt=3).run(count_settlement_retry, "qinghe")
    assert recorded.value(WorkerMetric.SETTLEMENT_RETRIES, tenant="qinghe") == 1


def test_the_worker_endpoint_is_off_unless_a_port_is_set() -> None:
    assert metrics_endpoint({}) is None
    assert metrics_endpoint({"SUPPORT_METRICS_PORT": " "}) is None
    assert metrics_endpoint({"SUPPORT_METRICS_PORT": "9464"}) == MetricsEndpoint("127.0.0.1", 9464)
    endpoint = metrics_endpoint({"SUPPORT_METRICS_PORT": "9464", "SUPPORT_METRICS_HOST": "::"})
    assert endpoint is not None and endpoint.url == "http://[::]:9464/metrics"


@pytest.mark.parametrize("value", ["http", "-1", "0", "65536", "94 64"])
def test_a_bad_port_is_a_configuration_error_on_either_side(value: str) -> None:
    with pytest.raises(ConfigurationError, match=r"SUPPORT_METRICS_PORT=.* is not a port"):
        metrics_endpoint({"SUPPORT_METRICS_PORT": value})
    with pytest.raises(ConfigurationError, match=r"COMMERCE_METRICS_PORT=.* is not a port"):
        serve_metrics({"COMMERCE_METRICS_PORT": value})


def test_the_commerce_endpoint_is_off_unless_a_port_is_set() -> None:
    assert serve_metrics({}) is None

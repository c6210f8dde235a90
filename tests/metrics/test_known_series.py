"""The series written at 0 at start, the build id tag, and the commerce server's health metric, without
a server: the SDK's in-memory metric buffer and prometheus_client's registry. The real scrape after real
cases is tests/metrics/test_exported_metrics.py."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import REGISTRY
from sqlalchemy import create_engine
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig

from activities.runtime.known_series import KnownLabels, initial_series, known_labels
from commerce_server.metrics import HealthCollector, database_answers, initialise
from contracts.case import CaseStatus
from contracts.conversation import MessageRefusal, ReplySource
from contracts.directory import Directory
from contracts.metrics import KNOWN_TOOL_REFUSALS, WorkerMetric, bounded_name
from contracts.names import WORKFLOW_NAME
from workflows.tool_gate import ToolRefusal

ROOT = Path(__file__).resolve().parents[2]
KNOWN = KnownLabels("0.8.0-abc", "default", "support-cases", ("qinghe", "shanshui"), (("deepseek", "deepseek-chat"),))


def test_every_tenant_starts_at_zero_for_each_status_decision_code_and_model() -> None:
    series = list(initial_series(KNOWN))
    labels = {(s.metric, dict(s.labels).get("tenant"), tuple(sorted(dict(s.labels)))) for s in series}
    for tenant in KNOWN.tenants:
        assert (WorkerMetric.REFUNDS_PAID, tenant, ("tenant",)) in labels
        assert (WorkerMetric.APPROVALS_DECIDED, tenant, ("decision", "kind", "tenant")) in labels
        assert (WorkerMetric.MODEL_TOKENS, tenant, ("direction", "model", "provider", "tenant")) in labels
    ended = {dict(s.labels)["status"] for s in series if s.metric is WorkerMetric.CASES_ENDED}
    assert {CaseStatus.COMPLETED, CaseStatus.REJECTED, CaseStatus.FAILED} <= ended
    refused = {dict(s.labels)["code"] for s in series if s.metric is WorkerMetric.TOOL_CALLS_REFUSED}
    assert "order_not_bound_to_case" in refused
    for tenant in KNOWN.tenants:
        assert (WorkerMetric.CUSTOMER_MESSAGES, tenant, ("tenant",)) in labels
        messages = {
            dict(s.labels)["code"]
            for s in series
            if s.metric is WorkerMetric.CUSTOMER_MESSAGES_REFUSED and dict(s.labels)["tenant"] == tenant
        }
        assert messages == {refusal.value for refusal in MessageRefusal}
        replies = {
            dict(s.labels)["kind"]
            for s in series
            if s.metric is WorkerMetric.CUSTOMER_REPLIES and dict(s.labels)["tenant"] == tenant
        }
        assert replies == {source.value for source in ReplySource}


def test_the_sdk_labels_are_those_the_sdk_adds_to_a_workflow_or_an_activity_counter() -> None:
    for series in initial_series(KNOWN):
        sdk = dict(series.sdk_labels)
        assert sdk["namespace"] == "default" and sdk["task_queue"] == "support-cases"
        if series.metric in (WorkerMetric.MODEL_REQUESTS, WorkerMetric.TOOL_CALLS, WorkerMetric.SETTLEMENT_RETRIES):
            assert set(sdk) == {"namespace", "task_queue", "activity_type"}
        else:
            assert sdk == {"namespace": "default", "task_queue": "support-cases", "workflow_type": WORKFLOW_NAME}


def test_the_runtime_writes_the_known_series_at_zero_with_the_build_id() -> None:
    buffer = MetricBuffer(100_000)
    runtime = Runtime(telemetry=TelemetryConfig(metrics=buffer, global_tags={"build_id": KNOWN.build_id}))
    for series in initial_series(KNOWN):
        meter = runtime.metric_meter.with_additional_attributes(dict(series.sdk_labels))
        meter.create_counter(series.metric.value).add(0, dict(series.labels))
    updates = buffer.retrieve_updates()
    assert len(updates) == len(list(initial_series(KNOWN)))
    assert all(update.value == 0 for update in updates)


def test_known_labels_name_every_tenant_of_the_directory_and_bound_the_model_names() -> None:
    directory = Directory.model_validate({"tenants": [{"tenant": "qinghe", "display_name": "Qinghe"}], "people": []})
    known = known_labels("b", "default", "q", directory, [("openai-compatible", "qwen2.5:7b"), ("x", "a b")])
    assert known.tenants == ("qinghe",)
    assert known.models == (("openai-compatible", "qwen2.5:7b"), ("x", "other"))
    assert bounded_name("Please refund QH-1001") == "other"


def test_the_known_tool_refusals_are_every_code_the_tool_gate_returns() -> None:
    source = "".join(
        (ROOT / "workflows" / name).read_text(encoding="utf-8") for name in ("tool_gate.py", "turn_admission.py")
    )
    returned = set(re.findall(r'return "([a-z_]+)"', source)) | set(re.findall(r'= "([a-z_]+_in_turn)"', source))
    returned |= {ToolRefusal[name].value for name in re.findall(r"return ToolRefusal\.([A-Z_]+)", source)}
    assert returned and returned <= set(KNOWN_TOOL_REFUSALS), sorted(returned - set(KNOWN_TOOL_REFUSALS))


def test_the_commerce_counters_start_at_zero_for_each_tenant_and_code() -> None:
    initialise(["qinghe"])
    assert REGISTRY.get_sample_value("commerce_refunds_paid_total", {"tenant": "qinghe"}) is not None
    assert REGISTRY.get_sample_value("commerce_refunds_refused_total", {"code": "quote_changed"}) is not None
    assert REGISTRY.get_sample_value("commerce_token_refusals_total", {"code": "token_rejected"}) is not None
    executed = {"tenant": "qinghe", "kind": "change_order_address"}
    assert REGISTRY.get_sample_value("commerce_actions_executed_total", executed) is not None
    refused = {"tool": "execute_action", "code": "confirmation_required"}
    assert REGISTRY.get_sample_value("commerce_action_refusals_total", refused) is not None


def test_the_health_metric_is_one_while_the_database_answers_and_zero_when_it_does_not(tmp_path: Path) -> None:
    healthy = HealthCollector(database_answers(create_engine(f"sqlite:///{tmp_path / 'commerce.db'}")))
    assert [sample.value for family in healthy.collect() for sample in family.samples] == [1.0]
    missing = tmp_path / "no-such-folder" / "commerce.db"
    failing = HealthCollector(database_answers(create_engine(f"sqlite:///{missing}")))
    assert [sample.value for family in failing.collect() for sample in family.samples] == [0.0]

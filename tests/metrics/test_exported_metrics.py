"""What an on-call engineer can alert on, read from the real endpoints after a real refund case.

One case runs to its receipt (alice's refund of QH-1001, approved by chen after one refused review) on
a real ``worker.py`` with ``SUPPORT_METRICS_PORT`` set, its commerce server a real ``python -m
commerce_server --http`` with ``COMMERCE_METRICS_PORT`` set; one request with a forged bearer token is
refused there. Both endpoints are scraped once, and every test of this module reads those scrapes:
the counters and their values, the SDK's latency metrics, the absence of anything a customer wrote
from every label, and that each metric the dashboard and the alert rules query is one of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from temporalio.client import Client, WorkflowUpdateFailedError

from activities.commerce_http import COMMERCE_URL_ENV
from commerce_server.db import make_engine
from commerce_server.metrics import METRICS_PORT_ENV as COMMERCE_METRICS_PORT_ENV
from commerce_server.tokens import TOKEN_SECRET_ENV
from contracts.case import CaseStatus, CaseView, ReviewOutcome
from contracts.metrics import CommerceMetric, WorkerMetric
from contracts.names import ActivityName
from contracts.tools import ToolName
from devstack.servers import free_port, wait_for_port
from keystore import demo_identity
from tests.commerce_service import HttpCommerce, start_http_commerce
from tests.credentials_support import signed_review
from tests.faults.fault_support import REFUND_QUESTION, FaultWorld, WorkerProcess, spawn_worker
from tests.metrics.scrape import Scrape, all_names, exported_names, scrape

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "support-cases.json"
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
ORDER_ID = "QH-1001"


@dataclass(frozen=True)
class Scraped:
    worker: Scrape
    commerce: Scrape
    worker_log: str
    final: CaseView


def total(metric: WorkerMetric | CommerceMetric) -> str:
    return f"{metric.value}_total"


@pytest.fixture(scope="module")
def commerce_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpCommerce, int]]:
    port = free_port()
    service = start_http_commerce(
        tmp_path_factory.mktemp("commerce-metrics"), env={COMMERCE_METRICS_PORT_ENV: str(port)}
    )
    try:
        wait_for_port("127.0.0.1", port, timeout=30, process=service.process)
        yield service, port
    finally:
        service.process.terminate()
        service.process.wait(timeout=10)


@pytest.fixture(scope="module")
async def scraped(
    temporal_server, temporal_client: Client, commerce_service: tuple[HttpCommerce, int], tmp_path_factory
) -> AsyncIterator[Scraped]:
    service, commerce_port = commerce_service
    world = FaultWorld.create(temporal_client, tmp_path_factory.mktemp("metrics-world"))
    world.engine.dispose()
    world.engine = make_engine(f"sqlite:///{service.state_dir / 'commerce.db'}")
    port = free_port()
    env = {"SUPPORT_METRICS_PORT": str(port), COMMERCE_URL_ENV: service.url, TOKEN_SECRET_ENV: service.secret}
    worker: WorkerProcess = spawn_worker(temporal_server.address, world.state_dir, world.task_queue, name="w", env=env)
    try:
        await worker.ready()
        handle = await world.start(REFUND_QUESTION)
        view = await world.waiting_for_approval(handle)
        with pytest.raises(WorkflowUpdateFailedError):  # counted as a refused approval
            await handle.execute_update(
                "review", signed_review("chen", view.case_id, "0" * 64), result_type=ReviewOutcome
            )
        assert view.digest is not None
        outcome = await handle.execute_update(
            "review", signed_review("chen", view.case_id, view.digest), result_type=ReviewOutcome
        )
        assert outcome.accepted
        final = await world.result(handle)
        refuse_a_forged_bearer_token(service.url)
        yield Scraped(
            scrape(f"http://127.0.0.1:{port}/metrics"),
            scrape(f"http://127.0.0.1:{commerce_port}/metrics"),
            worker.log(),
            final,
        )
    finally:
        worker.cleanup()
        world.engine.dispose()


def refuse_a_forged_bearer_token(url: str) -> None:
    request = urllib.request.Request(
        url, data=b"{}", method="POST", headers={"Authorization": "Bearer forged.token.value"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401


def test_the_worker_prints_where_it_serves_metrics(scraped: Scraped) -> None:
    assert "worker: metrics on http://127.0.0.1:" in scraped.worker_log
    assert scraped.final.status is CaseStatus.COMPLETED
    assert scraped.final.receipt is not None and scraped.final.receipt.amount_cents == 12900


def test_the_case_approval_and_refund_counters_have_the_values_of_the_one_case(scraped: Scraped) -> None:
    metrics = scraped.worker
    assert metrics.value(total(WorkerMetric.CASES_STARTED), tenant="qinghe") == 1
    assert metrics.value(total(WorkerMetric.CASES_ENDED), tenant="qinghe", status="completed") == 1
    assert metrics.value(total(WorkerMetric.APPROVALS_ACCEPTED), tenant="qinghe", kind="signature") == 1
    assert metrics.value(total(WorkerMetric.APPROVALS_REFUSED), tenant="qinghe", code="digest_mismatch") == 1
    assert metrics.value(total(WorkerMetric.REFUNDS_PAID), tenant="qinghe") == 1
    assert metrics.value(total(WorkerMetric.REFUNDED_CENTS), tenant="qinghe") == 12900


def test_model_requests_tokens_and_tool_calls_are_counted_by_kind_and_outcome(scraped: Scraped) -> None:
    metrics = scraped.worker
    for kind in (ActivityName.PLAN_CASE, ActivityName.COMPOSE_ANSWER, ActivityName.REVIEW_ANSWER):
        assert metrics.value(total(WorkerMetric.MODEL_REQUESTS), kind=kind, provider="rehearsal", outcome="ok") >= 1
    # The rehearsal model reports no usage, and unknown tokens are never counted: only the series at 0
    # that every counter starts with. tests/metrics/test_activity_metrics.py counts a provider's usage.
    assert metrics.value(total(WorkerMetric.MODEL_TOKENS)) == 0
    assert metrics.value(total(WorkerMetric.TOOL_CALLS), tool=ToolName.CALCULATE_REFUND, outcome="ok") >= 1
    assert metrics.value(total(WorkerMetric.SETTLEMENT_RETRIES)) == 0  # one attempt paid it


def test_the_sdk_exports_the_task_latencies_the_backlog_alert_reads(scraped: Scraped) -> None:
    names = scraped.worker.names
    assert "temporal_workflow_task_schedule_to_start_latency_seconds_bucket" in names
    assert "temporal_activity_schedule_to_start_latency_seconds_bucket" in names
    assert scraped.worker.value("temporal_activity_schedule_to_start_latency_seconds_count") > 0


def test_the_commerce_server_counts_the_paid_refund_and_the_refused_token(scraped: Scraped) -> None:
    metrics = scraped.commerce
    assert metrics.value(total(CommerceMetric.REFUNDS_PAID), tenant="qinghe") == 1
    assert metrics.value(total(CommerceMetric.REFUNDED_CENTS), tenant="qinghe") == 12900
    assert metrics.value(total(CommerceMetric.TOKEN_REFUSALS), code="token_rejected") == 1
    assert metrics.value(total(CommerceMetric.REFUNDS_REFUSED)) == 0


def test_no_label_value_holds_the_question_the_customer_or_the_order(scraped: Scraped) -> None:
    alice = demo_identity("alice")
    forbidden = [REFUND_QUESTION, "refund QH", ORDER_ID, alice.display_name]
    values = scraped.worker.label_values() | scraped.commerce.label_values()
    assert "qinghe" in values  # the labels were read
    for value in values:
        for text in forbidden:
            assert text not in value, (text, value)


def queried_names() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    rules = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    expressions += [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    assert expressions
    return all_names(expressions)


def test_every_metric_the_dashboard_and_the_alerts_query_is_exported(scraped: Scraped) -> None:
    exported = exported_names(scraped.worker, scraped.commerce)
    missing = sorted(queried_names() - exported)
    assert not missing, f"queried but not exported: {missing}"


@pytest.mark.parametrize("value", ["abc", "0", "70000"])
def test_a_bad_metrics_port_refuses_the_worker_start_in_one_line(value: str, tmp_path: Path) -> None:
    env = {**os.environ, "SUPPORT_METRICS_PORT": value, "TEMPORAL_ADDRESS": "127.0.0.1:1"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "worker.py"), "--state-dir", str(tmp_path / "state")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert lines == [
        f"worker: configuration error: invalid_metrics_port: SUPPORT_METRICS_PORT={value!r} is not a port; "
        "use 1-65535 or unset it"
    ]


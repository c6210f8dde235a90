"""What an on-call engineer can alert on, read from the real endpoints after real cases.

A real ``worker.py`` with ``SUPPORT_METRICS_PORT`` set runs two cases on a Temporal dev server that
serves its own metrics (``--metrics-port``), its commerce server a real ``python -m commerce_server
--http`` with ``COMMERCE_METRICS_PORT`` set, its model a provider that answers as the rehearsal model
does and reports token usage (priced by a price table). Alice's refund of QH-1001: the model also asks
for QH-1003, another customer's order, which the case refuses; chen's first review is refused (a stale
digest), his second approves and the refund is paid. Alice's refund of QH-1002: chen rejects it. One
request with a forged bearer token is refused at the commerce server. The worker is scraped before the
first case (the series written at 0) and every endpoint after; every test reads those scrapes.
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
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError

from activities.commerce.commerce_http import COMMERCE_URL_ENV
from case_client._conversation import MessageRefused, new_message_id, send_message, wait_reply
from commerce_server.db import make_engine
from commerce_server.metrics import METRICS_PORT_ENV as COMMERCE_METRICS_PORT_ENV
from commerce_server.tokens import TOKEN_SECRET_ENV
from contracts.case import CaseStatus, CaseView, Decision, ReviewOutcome
from contracts.conversation import CustomerMessage, MessageRefusal, ReplySource
from contracts.metrics import APPROVAL_WAIT_SECONDS, COMMERCE_HEALTH, CommerceMetric, WorkerMetric
from contracts.names import ActivityName
from contracts.tools import ToolName
from devstack.servers import free_port, wait_for_port
from keystore import demo_identity
from tests.adversarial.provider import ScriptedProvider, call, tool_calls
from tests.case_world import connect_case_client
from tests.commerce_service import HttpCommerce, start_http_commerce
from tests.credentials_support import applicant_token, signed_review
from tests.faults.fault_support import REFUND_QUESTION, FaultWorld, WorkerProcess, spawn_worker
from tests.metrics.metered_stack import (
    PICO_USD_PER_REPLY,
    USAGE,
    MeteredTemporal,
    price_table,
    rehearsed_with_usage,
    scrape_until,
    start_metered_temporal,
    temporal_queue_label,
    with_usage,
)
from tests.metrics.scrape import Scrape, all_names, exported_names, scrape

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "support-cases.json"
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
ORDER_ID = "QH-1001"
OTHER_CUSTOMERS_ORDER = "QH-1003"
REJECTED_QUESTION = "Please refund QH-1002 and explain the amount and the policy"
PROMETHEUS_OWN = frozenset({"up"})
"""Series Prometheus writes itself for each target (the target-down alerts read ``up``)."""


@dataclass(frozen=True)
class Scraped:
    before: Scrape
    """The worker before the first case: only the series written at 0."""
    worker: Scrape
    commerce: Scrape
    temporal: Scrape
    worker_log: str
    final: CaseView
    rejected: CaseView
    task_queue: str
    model_replies: int


def total(metric: WorkerMetric | CommerceMetric) -> str:
    return f"{metric.value}_total"


@pytest.fixture(scope="module")
def metered_temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MeteredTemporal]:
    server = start_metered_temporal(tmp_path_factory.mktemp("metered-temporal"))
    try:
        yield server
    finally:
        server.stop()


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
    metered_temporal: MeteredTemporal, commerce_service: tuple[HttpCommerce, int], tmp_path_factory
) -> AsyncIterator[Scraped]:
    service, commerce_port = commerce_service
    client = await connect_case_client(metered_temporal.address)
    root = tmp_path_factory.mktemp("metrics-world")
    world = FaultWorld.create(client, root)
    world.engine.dispose()
    world.engine = make_engine(f"sqlite:///{service.state_dir / 'commerce.db'}")
    provider = ScriptedProvider().start()
    provider.default_all(rehearsed_with_usage)
    provider.script(  # after two turns as rehearsed, the model asks for another customer's order
        "investigate",
        rehearsed_with_usage,
        rehearsed_with_usage,
        with_usage(tool_calls(call("get_order", {"order_id": OTHER_CUSTOMERS_ORDER}, "metrics-other-order"))),
    )
    port = free_port()
    env = {
        "SUPPORT_METRICS_PORT": str(port),
        COMMERCE_URL_ENV: service.url,
        TOKEN_SECRET_ENV: service.secret,
        "SUPPORT_MODEL_PRICES": str(price_table(root / "prices.toml", provider.model)),
        **provider.env(),
    }
    worker: WorkerProcess = spawn_worker(metered_temporal.address, world.state_dir, world.task_queue, name="w", env=env)
    try:
        await worker.ready()
        url = f"http://127.0.0.1:{port}/metrics"
        before = scrape(url)
        handle = await world.start(REFUND_QUESTION)
        view = await world.waiting_for_approval(handle)
        await write_while_waiting(handle, view.case_id)
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
        second = await world.start(REJECTED_QUESTION)
        proposal = await world.waiting_for_approval(second)
        assert proposal.digest is not None
        review = signed_review("chen", proposal.case_id, proposal.digest, Decision.REJECT)
        assert (await second.execute_update("review", review, result_type=ReviewOutcome)).accepted
        rejected = await world.result(second)
        refuse_a_forged_bearer_token(service.url)
        yield Scraped(
            before,
            scrape(url),
            scrape(f"http://127.0.0.1:{commerce_port}/metrics"),
            scrape_until(metered_temporal.metrics_url, lambda s: backlog_reported(s, world.task_queue)),
            worker.log(),
            final,
            rejected,
            world.task_queue,
            sum(1 for request in provider.requests if request.status == 200),
        )
    finally:
        worker.cleanup()
        provider.stop()
        world.engine.dispose()


async def write_while_waiting(handle: WorkflowHandle, case_id: str) -> None:
    """bob writes to alice's case (refused: another_customers_case); alice asks for news (taken, and
    answered from the case's records)."""
    bobs = CustomerMessage(
        text="news?", token=applicant_token(demo_identity("bob"), case_id), message_id=new_message_id()
    )
    with pytest.raises(MessageRefused):
        await send_message(handle, bobs)
    alices = CustomerMessage(
        text="any news?", token=applicant_token(demo_identity("alice"), case_id), message_id=new_message_id()
    )
    accepted = await send_message(handle, alices)
    answer = await wait_reply(handle, accepted.turn, wait_seconds=25)
    assert answer.reply is not None and answer.reply.source is ReplySource.CASE_RECORDS, answer


def backlog_reported(temporal: Scrape, task_queue: str) -> bool:
    queue = temporal_queue_label(task_queue)
    names = {s.name for s in temporal.samples if s.labels.get("taskqueue") == queue}
    return {"approximate_backlog_count", "approximate_backlog_age_seconds", "pending_polls"} <= names


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
    assert scraped.rejected.status is CaseStatus.REJECTED


def test_the_case_approval_and_refund_counters_have_the_values_of_the_two_cases(scraped: Scraped) -> None:
    metrics = scraped.worker
    assert metrics.value(total(WorkerMetric.CASES_STARTED), tenant="qinghe") == 2
    assert metrics.value(total(WorkerMetric.CASES_ENDED), tenant="qinghe", status="completed") == 1
    assert metrics.value(total(WorkerMetric.CASES_ENDED), tenant="qinghe", status="rejected") == 1
    decided = total(WorkerMetric.APPROVALS_DECIDED)
    assert metrics.value(decided, tenant="qinghe", kind="signature", decision="approve") == 1
    assert metrics.value(decided, tenant="qinghe", kind="signature", decision="reject") == 1
    assert metrics.value(total(WorkerMetric.APPROVALS_REFUSED), tenant="qinghe", code="digest_mismatch") == 1
    assert metrics.value(total(WorkerMetric.REFUNDS_PAID), tenant="qinghe") == 1
    assert metrics.value(total(WorkerMetric.REFUNDED_CENTS), tenant="qinghe") == 12900


def test_customer_messages_and_replies_are_counted_by_code_and_author(scraped: Scraped) -> None:
    metrics = scraped.worker
    assert metrics.value(total(WorkerMetric.CUSTOMER_MESSAGES), tenant="qinghe") == 1
    refused = total(WorkerMetric.CUSTOMER_MESSAGES_REFUSED)
    assert metrics.value(refused, tenant="qinghe", code=MessageRefusal.ANOTHER_CUSTOMER.value) == 1
    assert metrics.value(refused) == 1
    replies = total(WorkerMetric.CUSTOMER_REPLIES)
    assert metrics.value(replies, tenant="qinghe", kind=ReplySource.CASE_RECORDS.value) == 1  # the news
    assert metrics.value(replies, tenant="qinghe", kind=ReplySource.RECEIPT.value) == 1  # the paid refund
    assert metrics.value(replies, tenant="qinghe", kind=ReplySource.MODEL_DRAFT.value) == 2  # each proposal
    written_at_zero = [s for s in scraped.before.samples if s.name == replies and s.labels.get("kind") == "receipt"]
    assert written_at_zero and all(sample.value == 0 for sample in written_at_zero)


def test_the_tool_call_the_case_refused_is_counted_by_its_code(scraped: Scraped) -> None:
    refused = total(WorkerMetric.TOOL_CALLS_REFUSED)
    assert scraped.worker.value(refused, tenant="qinghe", code="order_not_bound_to_case") == 1
    assert scraped.worker.value(refused) == 1
    # the refused call never reached the tool activity: get_order ran for each case's own order only
    assert scraped.worker.value(total(WorkerMetric.TOOL_CALLS), tool=ToolName.GET_ORDER) == 2


def test_tokens_and_cost_are_counted_by_tenant_and_model(scraped: Scraped) -> None:
    metrics, replies = scraped.worker, scraped.model_replies
    labels = {"tenant": "qinghe", "provider": "openai-compatible", "model": "scripted-adversary"}
    tokens = total(WorkerMetric.MODEL_TOKENS)
    assert replies >= 8  # plan, investigate turns, compose, review of two cases
    assert metrics.value(tokens, **labels, direction="prompt") == replies * USAGE["prompt_tokens"]
    assert metrics.value(tokens, **labels, direction="completion") == replies * USAGE["completion_tokens"]
    assert metrics.value(total(WorkerMetric.MODEL_COST_PICO_USD), **labels) == replies * PICO_USD_PER_REPLY


def test_model_requests_and_tool_calls_are_counted_by_kind_and_outcome(scraped: Scraped) -> None:
    metrics = scraped.worker
    requests = total(WorkerMetric.MODEL_REQUESTS)
    for kind in (ActivityName.PLAN_CASE, ActivityName.COMPOSE_ANSWER, ActivityName.REVIEW_ANSWER):
        assert metrics.value(requests, kind=kind, provider="openai-compatible", outcome="ok") >= 2
    assert metrics.value(total(WorkerMetric.TOOL_CALLS), tool=ToolName.CALCULATE_REFUND, outcome="ok") >= 2
    assert metrics.value(total(WorkerMetric.SETTLEMENT_RETRIES)) == 0  # one attempt paid it


def test_the_approval_wait_is_a_histogram_by_decision(scraped: Scraped) -> None:
    metrics = scraped.worker
    for decision in ("approve", "reject"):
        assert metrics.value(f"{APPROVAL_WAIT_SECONDS}_count", tenant="qinghe", decision=decision) == 1
        assert metrics.value(f"{APPROVAL_WAIT_SECONDS}_bucket", tenant="qinghe", decision=decision, le="+Inf") == 1
    assert 0 < metrics.value(f"{APPROVAL_WAIT_SECONDS}_sum", tenant="qinghe") < 600


def test_every_worker_metric_carries_the_build_id(scraped: Scraped) -> None:
    line = next(line for line in scraped.worker_log.splitlines() if line.startswith("worker: deployment"))
    build_id = line.split(" build ", 1)[1].split("'")[1]
    assert scraped.worker.samples
    assert {sample.labels.get("build_id") for sample in scraped.worker.samples} == {build_id}


def test_the_first_event_of_every_known_label_set_counts(scraped: Scraped) -> None:
    """Each counter a case incremented for qinghe was already exported at 0 with exactly the same labels
    (the SDK's included) before the first case: ``increase()`` then counts its first event."""
    counted = [
        WorkerMetric.CASES_STARTED, WorkerMetric.CASES_ENDED, WorkerMetric.APPROVALS_DECIDED,
        WorkerMetric.APPROVALS_REFUSED, WorkerMetric.REFUNDS_PAID, WorkerMetric.REFUNDED_CENTS,
        WorkerMetric.TOOL_CALLS_REFUSED, WorkerMetric.MODEL_TOKENS, WorkerMetric.MODEL_COST_PICO_USD,
        WorkerMetric.MODEL_REQUESTS, WorkerMetric.TOOL_CALLS,
    ]  # fmt: skip
    zero = {(s.name, frozenset(s.labels.items())): s.value for s in scraped.before.samples}
    checked = 0
    for sample in scraped.worker.samples:
        if sample.name not in {total(metric) for metric in counted} or not sample.value:
            continue
        assert zero.get((sample.name, frozenset(sample.labels.items()))) == 0, f"born at its first event: {sample}"
        checked += 1
    assert checked >= len(counted)


def test_the_sdk_exports_the_task_latencies_the_dashboard_reads(scraped: Scraped) -> None:
    names = scraped.worker.names
    assert "temporal_workflow_task_schedule_to_start_latency_seconds_bucket" in names
    assert "temporal_activity_schedule_to_start_latency_seconds_bucket" in names
    assert scraped.worker.value("temporal_activity_schedule_to_start_latency_seconds_count") > 0


def test_the_temporal_server_exports_the_polls_and_the_backlog_of_the_case_queue(scraped: Scraped) -> None:
    queue = temporal_queue_label(scraped.task_queue)
    polls = [s for s in scraped.temporal.samples if s.name == "pending_polls" and s.labels.get("taskqueue") == queue]
    assert polls and sum(s.value for s in polls) > 0  # the worker still runs: its long polls are held
    for name in ("approximate_backlog_count", "approximate_backlog_age_seconds"):
        assert any(s.name == name and s.labels.get("taskqueue") == queue for s in scraped.temporal.samples), name


def test_the_commerce_server_counts_the_paid_refund_and_the_refused_token(scraped: Scraped) -> None:
    metrics = scraped.commerce
    assert metrics.value(total(CommerceMetric.REFUNDS_PAID), tenant="qinghe") == 1
    assert metrics.value(total(CommerceMetric.REFUNDED_CENTS), tenant="qinghe") == 12900
    assert metrics.value(total(CommerceMetric.TOKEN_REFUSALS), code="token_rejected") == 1
    assert metrics.value(total(CommerceMetric.REFUNDS_REFUSED)) == 0
    assert any(
        s.name == total(CommerceMetric.REFUNDS_REFUSED) and s.labels == {"code": "quote_changed"}
        for s in metrics.samples
    )
    assert metrics.value(COMMERCE_HEALTH) == 1


def test_no_label_value_holds_the_question_the_customer_or_the_order(scraped: Scraped) -> None:
    alice = demo_identity("alice")
    forbidden = [REFUND_QUESTION, REJECTED_QUESTION, "refund QH", ORDER_ID, OTHER_CUSTOMERS_ORDER, alice.display_name]
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
    exported = exported_names(scraped.worker, scraped.commerce, scraped.temporal) | PROMETHEUS_OWN
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

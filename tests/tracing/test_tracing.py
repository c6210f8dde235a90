"""Tracing: off by default, turned on by the standard OTEL variables, and one trace per case.

The case test runs one real QH-1001 refund on the session dev server with the production worker; its
spans go to an in-memory exporter on a provider of the test's own (never OpenTelemetry's global one).
The commerce test starts the HTTP commerce service with tracing on (console exporter) and checks that
its server span joins the worker's trace through the MCP request's ``_meta`` (``traceparent``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from temporalio.client import Client
from temporalio.contrib.opentelemetry import TracingInterceptor

from activities.commerce.commerce_http import CommerceHttpCaller
from activities.commerce.commerce_sessions import TracedCommerce
from activities.model.model_settings import load_model_settings
from case_client import TemporalTarget, connect
from case_tracing import Tracing, tracer_of, tracing_from_env
from case_worker import build_worker
from contracts.case import CaseStatus, CaseView, ReviewOutcome
from contracts.errors import ConfigurationError
from contracts.names import WORKFLOW_NAME, ActivityName
from keystore import demo_identity
from keystore.directory_file import DirectorySource
from tests.case_world import open_world
from tests.commerce_service import start_http_commerce
from tests.conftest import DemoKeys
from tests.credentials_support import signed_review

ROOT = Path(__file__).resolve().parents[2]
REFUND_QUESTION = "Please refund QH-1001 and explain the amount and the policy"
OWN_TRACES = ("QueryWorkflow:", "HandleQuery:", "StartWorkflowUpdate:")
"""Client calls that start a trace of their own (the workflow's handler span links to it)."""


@pytest.fixture
def tracing() -> Iterator[tuple[Tracing, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield Tracing.for_provider(provider), exporter
    provider.shutdown()


# --- the standard variables -----------------------------------------------------------------------


def test_tracing_is_off_without_the_otel_variables_or_when_the_sdk_is_disabled() -> None:
    assert tracing_from_env({}) is None
    assert tracing_from_env({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}) is None
    assert tracing_from_env({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}) is None


def test_an_exporter_or_a_collector_endpoint_turns_tracing_on() -> None:
    console = tracing_from_env({"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "svc"}, service_name="x")
    assert console is not None
    try:
        assert [type(e) for e in console.exporters] == [ConsoleSpanExporter]
        assert console.provider.resource.attributes["service.name"] == "svc"
        assert isinstance(console.interceptor, TracingInterceptor) and console.interceptor.tracer is console.tracer
    finally:
        console.provider.shutdown()
    otlp = tracing_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, service_name="worker")
    assert otlp is not None
    try:
        assert [type(e) for e in otlp.exporters] == [OTLPSpanExporter]
        assert otlp.provider.resource.attributes["service.name"] == "worker"
    finally:
        otlp.provider.shutdown()


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"OTEL_TRACES_EXPORTER": "jaeger"}, "'jaeger'"),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "'grpc'"),
    ],
)
def test_an_exporter_the_service_cannot_use_is_a_one_line_configuration_error(environ, named) -> None:
    with pytest.raises(ConfigurationError) as refused:
        tracing_from_env(environ)
    assert refused.value.code == "tracing_config" and named in refused.value.message
    assert "\n" not in str(refused.value)


async def test_without_tracing_no_client_or_worker_gets_a_tracing_interceptor(temporal_server, tmp_path) -> None:
    if any(name.startswith("OTEL_") for name in os.environ):
        pytest.skip("this process has OTEL variables set")
    client = await connect(TemporalTarget(address=temporal_server.address))
    assert client.config()["interceptors"] == [] and tracer_of(client) is None
    worker, cleanup = build_worker(client, tmp_path, model_settings=load_model_settings({}))
    try:
        assert not any(isinstance(i, TracingInterceptor) for i in worker.config()["interceptors"])
    finally:
        await cleanup()


# --- one case, one trace --------------------------------------------------------------------------


async def test_a_refund_case_is_one_trace_from_start_to_the_commerce_calls(temporal_client, tmp_path, tracing) -> None:
    traced, exporter = tracing
    client = Client(**{**temporal_client.config(), "interceptors": [traced.interceptor]})
    world, worker, cleanup = await open_world(client, tmp_path / "state")
    # The client's interceptor runs in the worker too (Temporal applies it); it is never added twice.
    assert not any(isinstance(i, TracingInterceptor) for i in worker.worker.config()["interceptors"])
    try:
        async with worker:
            handle = await world.start(REFUND_QUESTION)
            view = await world.settled(handle)
            assert view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None
            review = signed_review("chen", view.case_id, view.digest)
            outcome = await handle.execute_update("review", review, result_type=ReviewOutcome)
            assert outcome.accepted
            final: CaseView = await handle.result()
    finally:
        await cleanup()
        world.engine.dispose()
    assert final.status is CaseStatus.COMPLETED

    spans: tuple[ReadableSpan, ...] = exporter.get_finished_spans()
    [start] = [s for s in spans if s.name == f"StartWorkflow:{WORKFLOW_NAME}"]
    assert start.kind is SpanKind.CLIENT and start.parent is None and start.context is not None
    trace_id = start.context.trace_id
    case = [s for s in spans if s.context is not None and s.context.trace_id == trace_id]
    others = [s for s in spans if s not in case]
    assert all(s.name.startswith(OWN_TRACES) for s in others), sorted({s.name for s in others})

    names = {s.name for s in case}
    assert {f"RunWorkflow:{WORKFLOW_NAME}", f"CompleteWorkflow:{WORKFLOW_NAME}", "HandleUpdate:review"} <= names
    for activity in (
        ActivityName.VERIFY_APPLICANT,
        ActivityName.PLAN_CASE,
        ActivityName.INVESTIGATE_TURN,
        ActivityName.COMPOSE_ANSWER,
        ActivityName.RUN_INVESTIGATION_TOOL,
        ActivityName.EXECUTE_REFUND,
        ActivityName.WRITE_CASE_RECORD,
    ):
        assert {f"StartActivity:{activity}", f"RunActivity:{activity}"} <= names, activity
    assert {"commerce get_order", "commerce execute_refund"} <= names, sorted(names)

    by_id = {s.context.span_id: s for s in case if s.context is not None}
    for span in case:
        if span.name.startswith("commerce "):
            assert span.kind is SpanKind.CLIENT and span.attributes is not None
            assert span.attributes["support.case_id"] == view.case_id
            assert span.parent is not None and by_id[span.parent.span_id].name.startswith("RunActivity:")
    [refund] = [s for s in case if s.name == "commerce execute_refund"]
    assert refund.parent is not None
    assert by_id[refund.parent.span_id].name == f"RunActivity:{ActivityName.EXECUTE_REFUND}"
    # The reviewer's update is its own trace; the workflow's handler span sits in the case and links to it.
    [update] = [s for s in spans if s.name == "StartWorkflowUpdate:review"]
    [handled] = [s for s in case if s.name == "HandleUpdate:review"]
    assert update.context is not None
    assert [link.context.span_id for link in handled.links] == [update.context.span_id]


# --- the commerce service joins the trace ---------------------------------------------------------


@pytest.fixture
def traced_http_commerce(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """The HTTP commerce service, its process traced to a console exporter (stdout to a file): the
    server turns tracing on itself from the OTEL variables, as it does in production."""
    out = tmp_path / "spans.jsonl"
    traced = {"OTEL_TRACES_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "100"}
    with out.open("w") as stdout:
        service = start_http_commerce(tmp_path / "commerce-service", env=traced, stdout=stdout, stderr=None)
    try:
        yield service.url, service.secret, out
    finally:
        service.process.terminate()
        service.process.wait(timeout=10)


def _console_spans(path: Path) -> list[dict]:
    text, decoder, spans, at = path.read_text(), json.JSONDecoder(), [], 0
    while (at := text.find("{", at)) >= 0:
        span, at = decoder.raw_decode(text, at)
        spans.append(span)
    return spans


async def test_the_commerce_server_span_joins_the_trace_of_the_call(
    traced_http_commerce, tracing, demo_keys: DemoKeys
) -> None:
    url, secret, out = traced_http_commerce
    traced, exporter = tracing
    directory = DirectorySource(str(demo_keys.directory_path))
    commerce = TracedCommerce(CommerceHttpCaller(url, secret, directory), traced.tracer)
    order = await commerce.call(demo_identity("alice"), "get_order", {"order_id": "QH-1001"}, case_id="case-trace-test")
    assert order["order_id"] == "QH-1001"
    [call] = exporter.get_finished_spans()
    assert call.name == "commerce get_order" and call.context is not None
    deadline = time.monotonic() + 10
    while not (served := [s for s in _console_spans(out) if s["name"] == "tools/call get_order"]):
        assert time.monotonic() < deadline, out.read_text()[-2000:]
        time.sleep(0.1)
    [server] = served
    assert server["kind"] == "SpanKind.SERVER"
    assert server["context"]["trace_id"] == f"0x{call.context.trace_id:032x}"
    assert server["parent_id"] == f"0x{call.context.span_id:016x}"
    assert server["resource"]["attributes"]["service.name"] == "qinghe-commerce"

"""The worker's Prometheus endpoint: a Temporal runtime whose metrics are served on ``/metrics``.

The Temporal SDK serves its own runtime metrics (task latencies, poll counts, activity and workflow
outcomes) and every counter recorded through ``workflow.metric_meter()`` and ``activity.metric_meter()``
from one HTTP endpoint that the Rust core runs for the runtime. So the endpoint is a property of the
runtime the worker's client is connected with (:func:`case_client.connect` takes it), not of a server
of ours. A runtime binds its port when it is created, once per process: :func:`metrics_runtime` is
called once, by ``worker.py main``.

Off unless ``SUPPORT_METRICS_PORT`` is set. ``SUPPORT_METRICS_HOST`` is the address to listen on,
default ``127.0.0.1``: the counters name tenants and refusal codes, so they are published beyond the
machine only when asked for (the compose file sets ``0.0.0.0`` for the Prometheus container), and an
address beyond loopback is said in one line on stderr at start (:func:`beyond_loopback`), as the codec
server and the reviewer console say theirs.

Every metric carries the worker's build id (``build_id``, a global tag), so a release's replicas are
told apart on every panel. At start every counter is also written at 0 for each label set the worker
already knows (:mod:`activities.runtime.known_series`: every tenant of the directory times the statuses, codes and
models it may count): ``increase()`` sees a series' first value only as a starting point, so without
the 0 the first refund of a tenant, or the first after a restart, would never count.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from activities.runtime.codes import StartupErrorCode
from activities.runtime.known_series import KnownLabels, initial_series
from contracts.errors import ConfigurationError
from contracts.listening import beyond_loopback_warning, is_loopback_host
from contracts.logs import core_logging
from contracts.metrics import (
    APPROVAL_WAIT,
    APPROVAL_WAIT_BUCKETS,
    BUILD_ID_LABEL,
    MetricsEndpoint,
    WorkerMetric,
    metrics_endpoint_from,
)

METRICS_PORT_ENV = "SUPPORT_METRICS_PORT"
METRICS_HOST_ENV = "SUPPORT_METRICS_HOST"


def metrics_endpoint(environ: Mapping[str, str] = os.environ) -> MetricsEndpoint | None:
    """The worker's endpoint (``SUPPORT_METRICS_PORT`` / ``SUPPORT_METRICS_HOST``), or None when off."""
    return metrics_endpoint_from(environ, METRICS_PORT_ENV, METRICS_HOST_ENV)


def beyond_loopback(endpoint: MetricsEndpoint) -> str | None:
    """The warning line the worker prints on stderr when ``endpoint`` listens beyond loopback
    (``SUPPORT_METRICS_HOST=0.0.0.0``, say); None on a loopback address."""
    if is_loopback_host(endpoint.host):
        return None
    return beyond_loopback_warning(
        "worker",
        endpoint.url,
        "whoever reaches it reads the counters, which name tenants and refusal codes",
        f"keep {METRICS_HOST_ENV} on 127.0.0.1, or let only the Prometheus scraper reach it",
    )


def metrics_runtime(endpoint: MetricsEndpoint, known: KnownLabels | None = None) -> Runtime:
    """A Temporal runtime serving Prometheus metrics on ``endpoint``: counters end in ``_total``,
    durations are seconds (``temporal_activity_schedule_to_start_latency_seconds``...). Every counter of
    :class:`contracts.metrics.WorkerMetric` is exported from the start, as one unlabelled series at 0:
    an alert on a counter that nothing has incremented yet (settlement retries) then reads 0, not "no
    data", and a rule naming a counter that does not exist is caught by the metrics tests. With
    ``known``, every metric carries its build id and each known label set starts at 0 too.

    Raises :class:`ConfigurationError` when the address cannot be bound (taken, or not an address of
    this machine)."""
    config = PrometheusConfig(
        bind_address=endpoint.bind_address,
        counters_total_suffix=True,
        unit_suffix=True,
        durations_as_seconds=True,
        histogram_bucket_overrides={APPROVAL_WAIT: list(APPROVAL_WAIT_BUCKETS)},
    )
    tags = {BUILD_ID_LABEL: known.build_id} if known is not None else {}
    try:
        runtime = Runtime(telemetry=TelemetryConfig(metrics=config, global_tags=tags, logging=core_logging()))
    except Exception as error:  # the bridge raises a plain exception for a bind failure
        raise ConfigurationError(
            StartupErrorCode.METRICS_BIND_FAILED,
            f"cannot serve metrics on {endpoint.bind_address} ({str(error).splitlines()[0][:120]}); "
            f"free the port or set {METRICS_PORT_ENV} to another one",
        ) from None
    for metric in WorkerMetric:
        runtime.metric_meter.create_counter(metric.value).add(0)
    for series in initial_series(known) if known is not None else ():
        meter = runtime.metric_meter.with_additional_attributes(dict(series.sdk_labels))
        meter.create_counter(series.metric.value).add(0, dict(series.labels))
    return runtime

"""The commerce server's counters (prometheus_client) and the endpoint that serves them.

Counted where the server decides: a refund paid (after its transaction commits, never on a replayed
receipt), a refund refused (by its stable code), a bearer token refused. Label values are tenant ids
and refusal codes only. The counters live in this process: the endpoint is for the HTTP deployment
(``python -m commerce_server --http``, one process per replica). In stdio mode the worker starts one
server per applicant session, so only the first of them could bind a fixed port; the others print one
warning line and serve without an endpoint, and their counts are not scraped (the worker's own
counters cover stdio deployments).

``COMMERCE_METRICS_PORT`` turns the endpoint on (unset: off); ``COMMERCE_METRICS_HOST`` is the
address, default ``127.0.0.1``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from prometheus_client import Counter, start_http_server

from contracts.metrics import CommerceMetric, MetricLabel, bounded_code, metrics_endpoint_from

METRICS_PORT_ENV = "COMMERCE_METRICS_PORT"
METRICS_HOST_ENV = "COMMERCE_METRICS_HOST"

# prometheus_client appends _total to a counter's name itself.
REFUNDS_PAID = Counter(CommerceMetric.REFUNDS_PAID.value, "Refunds paid (simulated)", [MetricLabel.TENANT.value])
REFUNDED_CENTS = Counter(
    CommerceMetric.REFUNDED_CENTS.value, "Cents refunded (simulated), summed", [MetricLabel.TENANT.value]
)
REFUNDS_REFUSED = Counter(
    CommerceMetric.REFUNDS_REFUSED.value, "Refund executions refused, by code", [MetricLabel.CODE.value]
)
TOKEN_REFUSALS = Counter(
    CommerceMetric.TOKEN_REFUSALS.value, "Bearer tokens refused, by code", [MetricLabel.CODE.value]
)


def count_refund_paid(tenant: str, amount_cents: int) -> None:
    """One refund paid for ``tenant`` (a tenant the directory lists: the applicant's)."""
    REFUNDS_PAID.labels(tenant).inc()
    REFUNDED_CENTS.labels(tenant).inc(amount_cents)


def count_refund_refused(code: str) -> None:
    REFUNDS_REFUSED.labels(bounded_code(code)).inc()


def count_token_refused(code: str) -> None:
    TOKEN_REFUSALS.labels(bounded_code(code)).inc()


def serve_metrics(environ: Mapping[str, str] = os.environ) -> str | None:
    """Start the endpoint ``COMMERCE_METRICS_PORT`` names, in a daemon thread; return the line to print
    (where it serves, or a warning that it could not bind), or None when the port is unset.

    A port that is not 1-65535 is a :class:`ConfigurationError`; a port that is taken is not: the
    server serves its tools without the endpoint (see the module docstring for stdio)."""
    endpoint = metrics_endpoint_from(environ, METRICS_PORT_ENV, METRICS_HOST_ENV)
    if endpoint is None:
        return None
    try:
        start_http_server(endpoint.port, addr=endpoint.host)
    except OSError as error:
        return f"warning: metrics not served: cannot bind {endpoint.bind_address} ({error.strerror or error})"
    return f"metrics on {endpoint.url}"

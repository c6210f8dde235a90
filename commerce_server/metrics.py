"""The commerce server's counters (prometheus_client) and the endpoint that serves them.

Counted where the server decides: a refund paid (after its transaction commits, never on a replayed
receipt), a refund refused (by its stable code), an action executed (likewise) or refused (by tool and
code), a bearer token refused. Label values are tenant ids
and refusal codes only. The counters live in this process: the endpoint is for the HTTP deployment
(``python -m commerce_server --http``, one process per replica). In stdio mode the worker starts one
server per applicant session, so only the first of them could bind a fixed port; the others print one
warning line and serve without an endpoint, and their counts are not scraped (the worker's own
counters cover stdio deployments).

``COMMERCE_METRICS_PORT`` turns the endpoint on (unset: off); ``COMMERCE_METRICS_HOST`` is the
address, default ``127.0.0.1``.

At start each counter is written at 0 for the label sets the server knows (every tenant of the
directory, every refusal code): ``increase()`` reads a series' first sample as its start, so a series
born at 1 would lose the first refund. ``commerce_health_ok`` is the health check, run at every scrape:
1 while the database answers, 0 when it does not, so an alert sees a commerce server that is up but
cannot pay whether or not a refund is settling.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping

from prometheus_client import REGISTRY, Counter, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import text
from sqlalchemy.engine import Engine

from contracts.action_policy import ActionKind
from contracts.errors import CommerceErrorCode
from contracts.metrics import COMMERCE_HEALTH, CommerceMetric, MetricLabel, bounded_code, metrics_endpoint_from

logger = logging.getLogger(__name__)
HEALTH_TIMEOUT_SECONDS = 5

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

ACTIONS_EXECUTED = Counter(
    CommerceMetric.ACTIONS_EXECUTED.value,
    "Actions executed (simulated), by kind",
    [MetricLabel.TENANT.value, MetricLabel.KIND.value],
)
ACTION_REFUSALS = Counter(
    CommerceMetric.ACTION_REFUSALS.value,
    "Action previews and executions refused, by tool and code",
    [MetricLabel.TOOL.value, MetricLabel.CODE.value],
)
ACTION_TOOLS = ("preview_action", "execute_action")


def count_action_executed(tenant: str, kind: str) -> None:
    """One action executed for ``tenant`` (after its transaction commits; never on a replay)."""
    ACTIONS_EXECUTED.labels(tenant, kind).inc()


def count_action_refused(tool: str, code: str) -> None:
    ACTION_REFUSALS.labels(tool, bounded_code(code)).inc()


def count_refund_paid(tenant: str, amount_cents: int) -> None:
    """One refund paid for ``tenant`` (a tenant the directory lists: the applicant's)."""
    REFUNDS_PAID.labels(tenant).inc()
    REFUNDED_CENTS.labels(tenant).inc(amount_cents)


def count_refund_refused(code: str) -> None:
    REFUNDS_REFUSED.labels(bounded_code(code)).inc()


def count_token_refused(code: str) -> None:
    TOKEN_REFUSALS.labels(bounded_code(code)).inc()


def initialise(tenants: Iterable[str]) -> None:
    """Write every known label set at 0: each tenant's refunds and actions, each refusal code."""
    for tenant in tenants:
        REFUNDS_PAID.labels(tenant)
        REFUNDED_CENTS.labels(tenant)
        for kind in ActionKind:
            ACTIONS_EXECUTED.labels(tenant, kind.value)
    for code in CommerceErrorCode:
        REFUNDS_REFUSED.labels(code.value)
        for tool in ACTION_TOOLS:
            ACTION_REFUSALS.labels(tool, code.value)
    TOKEN_REFUSALS.labels(CommerceErrorCode.TOKEN_REJECTED.value)


def database_answers(engine: Engine) -> Callable[[], bool]:
    """The health check: the commerce database answers a ``SELECT 1`` (the refunds need it)."""

    def check() -> bool:
        try:
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except Exception as error:  # any failure is "unhealthy"; the reason goes to the log, once a scrape
            logger.warning("health check: the commerce database does not answer (%s)", type(error).__name__)
            return False
        return True

    return check


_HEALTH: list[Collector] = []
"""The one health collector of this process (a registry refuses a second of the same name)."""


class HealthCollector(Collector):
    """``commerce_health_ok``: the health check's answer at scrape time (1 healthy, 0 not)."""

    def __init__(self, check: Callable[[], bool]) -> None:
        self._check = check

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(
            COMMERCE_HEALTH,
            "1 when the commerce server's health check passes (its database answers)",
            value=1.0 if self._check() else 0.0,
        )


def serve_metrics(
    environ: Mapping[str, str] = os.environ,
    *,
    health: Callable[[], bool] | None = None,
    tenants: Iterable[str] = (),
) -> str | None:
    """Start the endpoint ``COMMERCE_METRICS_PORT`` names, in a daemon thread; return the line to print
    (where it serves, or a warning that it could not bind), or None when the port is unset. ``health``
    is the health check the endpoint reports (:func:`database_answers`); ``tenants`` start at 0.

    A port that is not 1-65535 is a :class:`ConfigurationError`; a port that is taken is not: the
    server serves its tools without the endpoint (see the module docstring for stdio)."""
    endpoint = metrics_endpoint_from(environ, METRICS_PORT_ENV, METRICS_HOST_ENV)
    if endpoint is None:
        return None
    initialise(tenants)
    if health is not None and not _HEALTH:
        _HEALTH.append(HealthCollector(health))
        REGISTRY.register(_HEALTH[0])
    try:
        start_http_server(endpoint.port, addr=endpoint.host)
    except OSError as error:
        return f"warning: metrics not served: cannot bind {endpoint.bind_address} ({error.strerror or error})"
    return f"metrics on {endpoint.url}"

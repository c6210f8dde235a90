"""The names of every metric the worker and the commerce server export, and of their labels.

The worker's metrics go through the Temporal SDK's metric meter (``workflow.metric_meter()``,
``activity.metric_meter()``), so they are served on the same Prometheus endpoint as the SDK's own
runtime metrics (``SUPPORT_METRICS_PORT``) and a replaying workflow does not count twice. The commerce
server serves its own with prometheus_client (``COMMERCE_METRICS_PORT``). Label values are bounded sets
(tenant ids from the directory, statuses, refusal codes, tool and activity names): never a customer's
question, name or order id. The dashboard and alert rules under deploy/ query these names; a test
checks that every name they use is exported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from contracts.errors import ConfigurationError, SettingCode


class WorkerMetric(StrEnum):
    """Counters the worker exports (Prometheus adds ``_total``)."""

    CASES_STARTED = "support_cases_started"
    CASES_ENDED = "support_cases_ended"
    APPROVALS_DECIDED = "support_approvals_decided"
    """Reviews the case accepted as a decision, by ``decision`` (approve or reject) and kind."""
    APPROVALS_REFUSED = "support_approvals_refused"
    REFUNDS_PAID = "support_refunds_paid"
    REFUNDED_CENTS = "support_refunded_cents"
    MODEL_REQUESTS = "support_model_requests"
    MODEL_TOKENS = "support_model_tokens"
    """Counted by the case (the verified tenant is known there), by tenant, provider, model, direction."""
    MODEL_COST_PICO_USD = "support_model_cost_pico_usd"
    """The operator's price of those tokens in pico-US-dollars (10**-12 USD: exact integers, as the case
    sums them), by tenant, provider and model; replies without usage or price add nothing."""
    TOOL_CALLS = "support_tool_calls"
    TOOL_CALLS_REFUSED = "support_tool_calls_refused"
    """Tool calls the case's gate refused before any activity ran (another customer's order...), by code."""
    SETTLEMENT_RETRIES = "support_settlement_retries"
    CUSTOMER_MESSAGES = "support_customer_messages"
    """Further customer messages a case took (the first is the case's start), by tenant."""
    CUSTOMER_MESSAGES_REFUSED = "support_customer_messages_refused"
    """Customer messages a case refused, by tenant and refusal code (``another_customers_case``...)."""
    PROPOSALS_ESCALATED = "support_proposals_escalated"
    """Proposals that neared their expiry undecided and were escalated to the tenant's escalation
    reviewer, by tenant (a tenant that names none escalates nothing)."""
    PROPOSALS_NEAR_EXPIRY = "support_proposals_near_expiry"
    """Proposals that neared their expiry undecided, by tenant, whether or not an escalation reviewer was
    asked (cases started on release 0.12 after the near-expiry note; escalations are counted here too)."""
    CUSTOMER_REPLIES = "support_customer_replies"
    """Replies the case sent its customer, by tenant and ``kind`` (who wrote it: ``model_draft``,
    ``case_records``, ``receipt``...)."""


APPROVAL_WAIT = "support_approval_wait"
"""Histogram (the SDK appends ``_seconds``): from the proposal made to a reviewer's decision."""
APPROVAL_WAIT_SECONDS = f"{APPROVAL_WAIT}_seconds"
APPROVAL_WAIT_BUCKETS = (30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 43200.0, 86400.0)
"""Seconds: a reviewer answers in minutes to hours; a proposal expires after its TTL (900 s by default)."""
BUILD_ID_LABEL = "build_id"
"""A global tag on every metric the worker exports (the SDK's own included): its deployment build id."""


class CommerceMetric(StrEnum):
    """Counters the commerce server exports (prometheus_client adds ``_total``)."""

    REFUNDS_PAID = "commerce_refunds_paid"
    REFUNDED_CENTS = "commerce_refunded_cents"
    REFUNDS_REFUSED = "commerce_refunds_refused"
    TOKEN_REFUSALS = "commerce_token_refusals"
    ACTIONS_EXECUTED = "commerce_actions_executed"
    ACTION_REFUSALS = "commerce_action_refusals"


COMMERCE_HEALTH = "commerce_health_ok"
"""Gauge: 1 when the commerce server's health check passes at scrape time (its database answers), else 0."""


class MetricLabel(StrEnum):
    TENANT = "tenant"
    STATUS = "status"
    CODE = "code"
    KIND = "kind"
    """A model request kind (an ActivityName value) or, on approvals, ``signature`` or ``passkey``."""
    PROVIDER = "provider"
    DIRECTION = "direction"
    """``prompt`` or ``completion`` on model tokens."""
    TOOL = "tool"
    OUTCOME = "outcome"
    MODEL = "model"
    DECISION = "decision"
    """``approve`` or ``reject`` on approvals decided."""


UNVERIFIED_TENANT = "unverified"
"""The tenant label of a case whose applicant was not (yet) verified: a start argument names a tenant,
but any namespace writer can send one, so an unverified name never becomes a label value."""

OTHER_LABEL = "other"
"""The label of a code or name outside the bounded set (never the value itself)."""
_CODE_SHAPE = re.compile(r"[a-z][a-z0-9_]{0,63}")
_NAME_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,79}")
KNOWN_TOOL_REFUSALS = (
    "order_not_bound_to_case",
    "duplicate_call_id",
    "write_tool_not_allowed",
    "unknown_tool",
    "malformed_arguments",
    "unexpected_fields",
    "missing_fields",
    "invalid_argument_type",
    "argument_too_long",
    "invalid_argument",
    "repeated_call",
    "too_many_calls_in_turn",
    "case_write_cap_reached",
)
"""The codes workflows/tool_gate.py and workflows/turn_admission.py refuse a model's tool call with
(a test reads them from the source); ``order_not_bound_to_case`` is a model asking for another order."""
DEFAULT_METRICS_HOST = "127.0.0.1"
"""Counters name tenants and refusal codes: published beyond the machine only when a host is set."""


def bounded_code(code: str | None) -> str:
    """``code`` when it has the shape of a stable code (``order_not_accessible``), else ``other``: a
    code is a label value, and one that a peer sent must not smuggle in an order id or free text."""
    return code if code and _CODE_SHAPE.fullmatch(code) else OTHER_LABEL


def bounded_name(name: str | None) -> str:
    """``name`` when it looks like a provider or model name (``deepseek-chat``, ``qwen2.5:7b``), else
    ``other``: a model name comes from configuration or a provider's reply, never from a customer."""
    return name if name and _NAME_SHAPE.fullmatch(name) else OTHER_LABEL


@dataclass(frozen=True)
class MetricsEndpoint:
    """Where a process serves its Prometheus metrics."""

    host: str
    port: int

    @property
    def bind_address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.bind_address}/metrics"


def metrics_endpoint_from(environ: Mapping[str, str], port_env: str, host_env: str) -> MetricsEndpoint | None:
    """The endpoint ``port_env`` / ``host_env`` name, or None when the port is unset or empty; a port
    that is not 1-65535 is a :class:`ConfigurationError`."""
    raw = (environ.get(port_env) or "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise ConfigurationError(
            SettingCode.INVALID_METRICS_PORT, f"{port_env}={raw[:20]!r} is not a port; use 1-65535 or unset it"
        )
    return MetricsEndpoint((environ.get(host_env) or "").strip() or DEFAULT_METRICS_HOST, int(raw))

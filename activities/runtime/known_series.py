"""The label sets of the worker's counters that are known when it starts, to be written at 0.

Prometheus's ``increase()`` and ``rate()`` read a series' first sample as its starting point: a counter
that appears at 1 (the first refund of a tenant, the first after a worker restart) adds nothing to an
alert or a panel. So :func:`activities.runtime.metrics_runtime.metrics_runtime` writes 0 for every label set
listed here before the first case runs: each tenant of the directory times the statuses, decisions,
codes and models its counters may carry. A series only matches the one a case later increments when
every label is the same, the ones the SDK adds included: ``namespace``, ``task_queue`` and
``workflow_type`` on a workflow's counters, ``activity_type`` instead of ``workflow_type`` on an
activity's (tests/metrics checks a real scrape for it). A tenant added to the directory while the worker
runs starts at its first event instead; the next worker start lists it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from contracts.case import TERMINAL_STATUSES, CaseStatus, Decision
from contracts.conversation import MessageRefusal, ReplySource
from contracts.directory import Directory
from contracts.metrics import KNOWN_TOOL_REFUSALS, MetricLabel, WorkerMetric, bounded_name
from contracts.names import WORKFLOW_NAME, ActivityName, ReviewRefusal
from contracts.tools import INVESTIGATION_TOOLS

APPROVAL_KINDS = ("signature", "passkey")
DIRECTIONS = ("prompt", "completion")
MODEL_KINDS = (
    ActivityName.PLAN_CASE,
    ActivityName.INVESTIGATE_TURN,
    ActivityName.COMPOSE_ANSWER,
    ActivityName.REVIEW_ANSWER,
)
OK = "ok"

Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class KnownLabels:
    """What the worker knows at start: its build, where it polls, the tenants and the models."""

    build_id: str
    namespace: str
    task_queue: str
    tenants: tuple[str, ...]
    models: tuple[tuple[str, str], ...]
    """(provider, model) pairs: the model the worker is configured with, and its reviewer's if separate."""


@dataclass(frozen=True)
class Series:
    metric: WorkerMetric
    sdk_labels: Labels
    """The labels the SDK adds to a counter recorded in the workflow or in an activity."""
    labels: Labels


def known_labels(
    build_id: str, namespace: str, task_queue: str, directory: Directory, models: Iterable[tuple[str, str]]
) -> KnownLabels:
    named = tuple(dict.fromkeys((bounded_name(provider), bounded_name(model)) for provider, model in models))
    return KnownLabels(build_id, namespace, task_queue, tuple(entry.tenant for entry in directory.tenants), named)


def initial_series(known: KnownLabels) -> Iterator[Series]:
    """Every label set to write at 0, workflow counters first."""
    case: Labels = (("namespace", known.namespace), ("task_queue", known.task_queue), ("workflow_type", WORKFLOW_NAME))
    ended = sorted({*TERMINAL_STATUSES, CaseStatus.FAILED})
    for tenant in known.tenants:
        t = (MetricLabel.TENANT.value, tenant)
        for metric in (
            WorkerMetric.CASES_STARTED,
            WorkerMetric.REFUNDS_PAID,
            WorkerMetric.REFUNDED_CENTS,
            WorkerMetric.PROPOSALS_ESCALATED,
        ):
            yield Series(metric, case, (t,))
        for status in ended:
            yield Series(WorkerMetric.CASES_ENDED, case, (t, (MetricLabel.STATUS.value, status.value)))
        for kind in APPROVAL_KINDS:
            for decision in Decision:
                labels = (t, (MetricLabel.KIND.value, kind), (MetricLabel.DECISION.value, decision.value))
                yield Series(WorkerMetric.APPROVALS_DECIDED, case, labels)
        for code in [refusal.value for refusal in ReviewRefusal]:
            yield Series(WorkerMetric.APPROVALS_REFUSED, case, (t, (MetricLabel.CODE.value, code)))
        for code in KNOWN_TOOL_REFUSALS:
            yield Series(WorkerMetric.TOOL_CALLS_REFUSED, case, (t, (MetricLabel.CODE.value, code)))
        yield Series(WorkerMetric.CUSTOMER_MESSAGES, case, (t,))
        for refusal in MessageRefusal:
            yield Series(WorkerMetric.CUSTOMER_MESSAGES_REFUSED, case, (t, (MetricLabel.CODE.value, refusal.value)))
        for source in ReplySource:
            yield Series(WorkerMetric.CUSTOMER_REPLIES, case, (t, (MetricLabel.KIND.value, source.value)))
        for provider, model in known.models:
            named = (t, (MetricLabel.PROVIDER.value, provider), (MetricLabel.MODEL.value, model))
            yield Series(WorkerMetric.MODEL_COST_PICO_USD, case, named)
            for direction in DIRECTIONS:
                yield Series(WorkerMetric.MODEL_TOKENS, case, (*named, (MetricLabel.DIRECTION.value, direction)))
    yield from _activity_series(known)


def _activity_series(known: KnownLabels) -> Iterator[Series]:
    def step(activity: ActivityName) -> Labels:
        return (("activity_type", activity.value), ("namespace", known.namespace), ("task_queue", known.task_queue))

    for kind in MODEL_KINDS:
        for provider in dict.fromkeys(provider for provider, _ in known.models):
            labels = ((MetricLabel.KIND.value, kind.value), (MetricLabel.PROVIDER.value, provider))
            yield Series(WorkerMetric.MODEL_REQUESTS, step(kind), (*labels, (MetricLabel.OUTCOME.value, OK)))
    for tool in INVESTIGATION_TOOLS:
        labels = ((MetricLabel.TOOL.value, tool), (MetricLabel.OUTCOME.value, OK))
        yield Series(WorkerMetric.TOOL_CALLS, step(ActivityName.RUN_INVESTIGATION_TOOL), labels)
    for tenant in known.tenants:
        yield Series(
            WorkerMetric.SETTLEMENT_RETRIES, step(ActivityName.EXECUTE_REFUND), ((MetricLabel.TENANT.value, tenant),)
        )

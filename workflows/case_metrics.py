"""The case's counters, through the workflow's metric meter (contracts/metrics.py names them).

Workflow code: the SDK's meter records nothing while a workflow task replays, so a case counted once
is never counted again by the worker that replays it after a crash or a cache eviction. Every label
value is from a bounded set: the verified tenant (``unverified`` before the applicant token is
checked), a status, a refusal code, an approval kind. Nothing a customer wrote becomes a label.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.metrics import UNVERIFIED_TENANT, MetricLabel, WorkerMetric
    from contracts.passkey import PASSKEY_PREFIX
    from workflows.case_state import CaseState

MAX_CODE_CHARS = 60
"""A refusal code is one of a few dozen names; anything longer is cut so a label stays bounded."""


def tenant_label(s: CaseState) -> str:
    """The tenant the verified applicant belongs to; ``unverified`` until the token was checked."""
    return s.case.applicant.tenant if s.directory is not None else UNVERIFIED_TENANT


def _count(metric: WorkerMetric, description: str, value: int = 1, **labels: str) -> None:
    counter = workflow.metric_meter().create_counter(metric.value, description)
    counter.add(value, {MetricLabel(name).value: label for name, label in labels.items()})


def case_started(s: CaseState) -> None:
    _count(WorkerMetric.CASES_STARTED, "Cases whose applicant was verified", tenant=tenant_label(s))


def case_ended(s: CaseState) -> None:
    _count(
        WorkerMetric.CASES_ENDED,
        "Cases that ended, by final status",
        tenant=tenant_label(s),
        status=s.lifecycle.status.value,
    )


def approval_accepted(s: CaseState, approval_token: str | None) -> None:
    kind = "passkey" if approval_token and approval_token.startswith(PASSKEY_PREFIX) else "signature"
    _count(WorkerMetric.APPROVALS_ACCEPTED, "Reviews the case accepted", tenant=tenant_label(s), kind=kind)


def approval_refused(s: CaseState, code: str) -> None:
    _count(
        WorkerMetric.APPROVALS_REFUSED,
        "Reviews the case refused, by refusal code",
        tenant=tenant_label(s),
        code=code.split(":", 1)[0][:MAX_CODE_CHARS],
    )


def refund_paid(s: CaseState, amount_cents: int) -> None:
    tenant = tenant_label(s)
    _count(WorkerMetric.REFUNDS_PAID, "Refunds the commerce server paid (SIMULATED)", tenant=tenant)
    _count(WorkerMetric.REFUNDED_CENTS, "Cents refunded (SIMULATED)", amount_cents, tenant=tenant)

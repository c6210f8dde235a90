"""The case's counters, through the workflow's metric meter (contracts/metrics.py names them).

Workflow code: the SDK's meter records nothing while a workflow task replays, so a case counted once
is never counted again by the worker that replays it after a crash or a cache eviction. Every label
value is from a bounded set: the verified tenant (``unverified`` before the applicant token is
checked), a status, a refusal code, an approval kind and decision, a provider and model name. Nothing
a customer wrote becomes a label. activities/runtime/known_series.py writes each tenant's label sets at 0 when
the worker starts, so the first event of each counts in ``increase()``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.case import Decision
    from contracts.case_input import CaseState
    from contracts.conversation import MessageRefusal, ReplySource
    from contracts.metrics import (
        APPROVAL_WAIT,
        OTHER_LABEL,
        UNVERIFIED_TENANT,
        MetricLabel,
        WorkerMetric,
        bounded_code,
        bounded_name,
    )
    from contracts.model_io import ModelCallMeta
    from contracts.passkey import PASSKEY_PREFIX

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


def approval_decided(s: CaseState, approval_token: str | None, decision: Decision, now: datetime) -> None:
    """A review the case accepted, by its decision (approve or reject), and how long it waited: from
    the proposal made to this decision (a four-eyes case records each reviewer's)."""
    kind = "passkey" if approval_token and approval_token.startswith(PASSKEY_PREFIX) else "signature"
    tenant = tenant_label(s)
    _count(
        WorkerMetric.APPROVALS_DECIDED,
        "Reviews the case accepted as a decision, by decision (approve, reject)",
        tenant=tenant,
        kind=kind,
        decision=decision.value,
    )
    if s.proposal is not None:
        waited = max(now - s.proposal.created_at, timedelta(0))
        histogram = workflow.metric_meter().create_histogram_timedelta(
            APPROVAL_WAIT, "From the refund proposal made to a reviewer's decision"
        )
        histogram.record(waited, {MetricLabel.TENANT.value: tenant, MetricLabel.DECISION.value: decision.value})


def proposal_escalated(s: CaseState) -> None:
    _count(
        WorkerMetric.PROPOSALS_ESCALATED,
        "Proposals escalated to the tenant's escalation reviewer as they neared their expiry undecided",
        tenant=tenant_label(s),
    )


def proposal_near_expiry(s: CaseState) -> None:
    _count(
        WorkerMetric.PROPOSALS_NEAR_EXPIRY,
        "Proposals that neared their expiry undecided (escalated or not)",
        tenant=tenant_label(s),
    )


def approval_refused(s: CaseState, code: str) -> None:
    _count(
        WorkerMetric.APPROVALS_REFUSED,
        "Reviews the case refused, by refusal code",
        tenant=tenant_label(s),
        code=code.split(":", 1)[0][:MAX_CODE_CHARS],
    )


def message_accepted(s: CaseState) -> None:
    _count(WorkerMetric.CUSTOMER_MESSAGES, "Further customer messages the case took", tenant=tenant_label(s))


def message_refused(s: CaseState | None, refusal: MessageRefusal) -> None:
    """A refused customer message, by its code: in the update's validator (before Temporal records
    anything) or in its handler (the credential did not prove the case's customer)."""
    _count(
        WorkerMetric.CUSTOMER_MESSAGES_REFUSED,
        "Customer messages the case refused, by refusal code",
        tenant=tenant_label(s) if s is not None else UNVERIFIED_TENANT,
        code=refusal.value,
    )


def reply_sent(s: CaseState, source: ReplySource) -> None:
    _count(
        WorkerMetric.CUSTOMER_REPLIES,
        "Replies the case sent its customer, by who wrote them",
        tenant=tenant_label(s),
        kind=source.value,
    )


def tool_call_refused(s: CaseState, code: str) -> None:
    """A tool call the case's gate refused before any activity ran (``order_not_bound_to_case``: the
    model asked for an order that is not the case's)."""
    _count(
        WorkerMetric.TOOL_CALLS_REFUSED,
        "Tool calls the case refused before running them, by code",
        tenant=tenant_label(s),
        code=bounded_code(code),
    )


def model_reply(s: CaseState, meta: ModelCallMeta) -> None:
    """The tokens a model reply (or a refused one) reported and their price in the operator's table, by
    the verified tenant, provider and model; a reply without usage, or without a price, adds nothing."""
    if meta.usage is None:
        return
    labels = {
        "tenant": tenant_label(s),
        "provider": bounded_name(meta.provider) if meta.provider else OTHER_LABEL,
        "model": bounded_name(meta.model),
    }
    tokens = "Model tokens the provider reported, by tenant, provider, model and direction"
    for direction, value in (("prompt", meta.usage.prompt_tokens), ("completion", meta.usage.completion_tokens)):
        if value:
            _count(WorkerMetric.MODEL_TOKENS, tokens, value, direction=direction, **labels)
    if meta.price is not None:
        cost = meta.price.cost_pico_usd(meta.usage.prompt_tokens, meta.usage.completion_tokens)
        if cost:
            _count(WorkerMetric.MODEL_COST_PICO_USD, "Model cost in pico-USD (operator prices)", cost, **labels)


def refund_paid(s: CaseState, amount_cents: int) -> None:
    tenant = tenant_label(s)
    _count(WorkerMetric.REFUNDS_PAID, "Refunds the commerce server paid (SIMULATED)", tenant=tenant)
    _count(WorkerMetric.REFUNDED_CENTS, "Cents refunded (SIMULATED)", amount_cents, tenant=tenant)

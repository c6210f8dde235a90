"""`starter.py eval cases`: a fixed set of end-to-end questions run through real workflows (SPEC §11).

With the rehearsal model this is a regression check of the plumbing and says so. With ``--live`` the
same questions go to the configured provider (real, paid requests); semantic judgement of the
answers is left to a human and reported as PENDING. No accuracy percentage is computed here.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from enum import StrEnum

from temporalio.client import Client

from case_client import ApplicantIssuer, CaseClient
from contracts.case import REHEARSAL_LABEL, CaseStatus, CaseView
from contracts.errors import ConfigurationError, TransientError
from contracts.knowledge import Language
from contracts.names import EventKind
from keystore import demo_identity


class EvalErrorCode(StrEnum):
    NOT_LIVE = "not_live"
    LIVE_PROVIDER = "live_provider"


@dataclass(frozen=True)
class EvalCase:
    name: str
    question: str
    expected_status: CaseStatus
    proposal_expected: bool


EVAL_CASES = [
    EvalCase(
        "refund inside the window",
        "Please refund QH-1001 and explain the amount and the policy",
        CaseStatus.WAITING_APPROVAL,
        True,
    ),
    EvalCase("refund outside the window", "Please refund QH-1003", CaseStatus.COMPLETED, False),
    EvalCase(
        "shipment and address change",
        "Where is my order QH-1005? Can I still change the delivery address?",
        CaseStatus.COMPLETED,
        False,
    ),
    EvalCase(
        "invoice total vs refundable balance",
        "The invoice for QH-1009 says 141 yuan. How much of it can still be refunded, and why?",
        CaseStatus.COMPLETED,
        False,
    ),
    EvalCase(
        "lamp warranty",
        "My reading lamp from order QH-1012 stopped working. Is it under warranty?",
        CaseStatus.COMPLETED,
        False,
    ),
    EvalCase("service not covered", "Do you offer lunar teleportation for my parcels?", CaseStatus.NEEDS_HUMAN, False),
    EvalCase("another customer's order", "Please refund QH-2001", CaseStatus.WAITING_CUSTOMER, False),
]


@dataclass(frozen=True)
class EvalRow:
    case: EvalCase
    view: CaseView
    tools: list[str]
    seconds: float

    @property
    def unexpected_proposal(self) -> bool:
        return self.view.proposal is not None and not self.case.proposal_expected

    @property
    def plumbing_ok(self) -> bool:
        return self.view.status is self.case.expected_status and not self.unexpected_proposal


async def run_case(
    client: Client, case: EvalCase, task_queue: str, wait_seconds: float = 300, *, issuer: ApplicantIssuer
) -> EvalRow:
    """Run one case as alice until it waits for a reviewer or ends (a short approval TTL); a case still
    running after ``wait_seconds`` is reported as it stands. ``issuer`` signs alice's applicant token
    (``starter.py eval cases``: the state dir's issuer key); without a valid one the worker reads nothing."""
    started = time.monotonic()
    handle = await CaseClient.for_client(client, task_queue=task_queue, issuer=issuer).start(
        demo_identity("alice"),
        case.question,
        language=Language.EN,
        ttl_seconds=60,
        case_id=f"eval-{uuid.uuid4().hex[:10]}",
    )
    try:
        view = await handle.settled(timeout=wait_seconds, poll_seconds=0.3)
    except TransientError:  # wait_timeout: the row shows where it stopped
        view = await handle.status()
    tools = [event.detail.split(" ")[0] for event in await handle.events() if event.kind == EventKind.TOOL_RAN]
    return EvalRow(case, view, tools, time.monotonic() - started)


def check_provider_matches(*, live: bool, rehearsal: bool) -> None:
    """Stop after the first case when the worker's model is not what the operator asked for."""
    if live and rehearsal:
        raise ConfigurationError(
            EvalErrorCode.NOT_LIVE,
            "--live was given but the worker answers with the rehearsal model; configure a provider "
            "for worker.py (see docs/models.md)",
        )
    if not live and not rehearsal:
        raise ConfigurationError(
            EvalErrorCode.LIVE_PROVIDER,
            "the worker uses a real provider, so these requests are paid: pass --live to go on",
        )


def eval_rows(rows: list[EvalRow], *, live: bool) -> list[list[str]]:
    header = [
        "case",
        "status",
        "route",
        "tools called",
        "citations",
        "unexpected proposal",
        "model requests",
        "tokens",
        "latency s",
        "plumbing" if not live else "semantic judgement",
    ]
    table = [header]
    for row in rows:
        table.append(
            [
                row.case.name,
                row.view.status.value,
                row.view.intent.value if row.view.intent else "-",
                ", ".join(row.tools) or "-",
                ", ".join(row.view.citations) or "-",
                "YES" if row.unexpected_proposal else "no",
                str(row.view.budgets.model_requests),
                row.view.tokens,
                f"{row.seconds:.1f}",
                ("ok" if row.plumbing_ok else f"expected {row.case.expected_status.value}") if not live else "PENDING",
            ]
        )
    return table


def is_rehearsal(rows: list[EvalRow]) -> bool:
    return any(row.view.model == REHEARSAL_LABEL for row in rows)


def eval_title(*, rehearsal: bool) -> str:
    """What the figures are: a plumbing check with the rehearsal model, else judgement left to a human."""
    if rehearsal:
        return (
            "case evaluation with the REHEARSAL model: a regression check of the plumbing, not of any model's quality"
        )
    return "case evaluation (live provider): semantic judgement PENDING"

"""`starter.py eval cases`: a fixed set of end-to-end questions run through real workflows (SPEC §11).

With the rehearsal model this is a regression check of the plumbing and says so. With ``--live`` the
same questions go to the configured provider (real, paid requests); semantic judgement of the
answers is left to a human and reported as PENDING. No accuracy percentage is computed here.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass

from temporalio.client import Client

from contracts.case import REHEARSAL_LABEL, CaseInput, CaseOptions, CaseStatus, CaseView
from contracts.identity import resolve_profile
from contracts.knowledge import Language
from contracts.names import WORKFLOW_NAME


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
    EvalCase("another customer's order", "Please refund QH-2001", CaseStatus.NEEDS_INPUT, False),
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


async def run_case(client: Client, case: EvalCase, task_queue: str, wait_seconds: float = 300) -> EvalRow:
    """Run one case as alice until it waits for a reviewer or ends (a short approval TTL)."""
    started = time.monotonic()
    case_input = CaseInput(
        case_id=f"eval-{uuid.uuid4().hex[:10]}",
        question=case.question,
        language=Language.EN,
        applicant=resolve_profile("alice"),
        options=CaseOptions(approval_ttl_seconds=60),
    )
    handle = await client.start_workflow(
        WORKFLOW_NAME, case_input, id=f"case-{case_input.case_id}", task_queue=task_queue, result_type=CaseView
    )
    while True:
        view = await handle.query("status", result_type=CaseView)
        if view.status is not CaseStatus.RUNNING and view.record_attempted:
            break
        if time.monotonic() - started > wait_seconds:
            break
        await asyncio.sleep(0.3)
    events = await handle.query("events")
    tools = [e["detail"].split(" ")[0] for e in events if e["kind"] == "tool_ran"]
    return EvalRow(case, view, tools, time.monotonic() - started)


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

"""Record workflow histories from real runs into tests/histories/ for the replay test.

    .venv/bin/python scripts/record_histories.py

Starts a throwaway Temporal dev server and an in-process worker (rehearsal model, fresh commerce
database), runs one case per outcome, and writes each finished history as JSON. Re-record after an
intended change of workflow logic that is not guarded by ``workflow.patched``, and say so in the commit.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

from temporalio.client import Client

from contracts.case import (
    WORKFLOW_NAME,
    CaseInput,
    CaseOptions,
    CaseStatus,
    CaseView,
    Decision,
    ReviewDecision,
)
from contracts.identity import resolve_profile
from contracts.knowledge import Language
from temporal_dev import rehearsal_stack

OUT = Path(__file__).resolve().parents[1] / "tests" / "histories"
CASES = [
    ("approved_refund", "Please refund QH-1001 and explain the amount and the policy", Decision.APPROVE, 900),
    ("rejected_refund", "Please refund QH-1002", Decision.REJECT, 900),
    ("expired_refund", "Please refund QH-1009", None, 2),
    ("answered_delivery", "Where is my order QH-1005? Can I still change the delivery address?", None, 900),
    ("needs_human_uncovered", "Do you offer lunar teleportation for my parcels?", None, 900),
    ("needs_input_foreign_order", "Please refund QH-2001", None, 900),
]


async def record(client: Client, task_queue: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, question, decision, ttl in CASES:
        case = CaseInput(
            case_id=f"rec-{uuid.uuid4().hex[:8]}",
            question=question,
            language=Language.EN,
            applicant=resolve_profile("alice"),
            options=CaseOptions(approval_ttl_seconds=ttl),
        )
        handle = await client.start_workflow(
            WORKFLOW_NAME, case, id=f"case-{case.case_id}", task_queue=task_queue, result_type=CaseView
        )
        if decision is not None:
            while (view := await handle.query("status", result_type=CaseView)).status is not (
                CaseStatus.WAITING_APPROVAL
            ) or not view.record_attempted:
                await asyncio.sleep(0.2)
            await handle.signal("review", ReviewDecision(reviewer="chen", digest=view.digest, decision=decision))
        result = await asyncio.wait_for(handle.result(), timeout=120)
        history = await handle.fetch_history()
        (OUT / f"{name}.json").write_text(history.to_json(), encoding="utf-8")
        print(f"{name}: {result.status.value} ({result.reason}), {len(history.events)} events")


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with rehearsal_stack(Path(tmp)) as (client, task_queue):
            await record(client, task_queue)


if __name__ == "__main__":
    asyncio.run(main())

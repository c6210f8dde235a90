"""Benchmark: how fast a flood of huge review signals may arrive before a waiting case is lost (prints figures).

    .venv/bin/python benchmarks/bench_review_flood.py [SIGNALS] [MEGABYTES]

For each pause between signals (none, then longer ones), starts a refund case on a throwaway dev server
with one in-process rehearsal worker, waits until it waits for a reviewer, then sends SIGNALS malformed
``review`` signals of MEGABYTES each, one after another. It prints the arrival rate and whether the case
survived (it continues as new when Temporal suggests it) or was terminated by the server's 50 MB history
limit. A burst that arrives faster than a workflow task can complete cannot be survived inside any
workflow: the server appends each signal to history first, and refuses to close a run while new events
keep arriving. docs/faults.md lists the server-side limits that protect a case from such a burst.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
import uuid
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from case_client import CaseHandle
from contracts.case import CaseStatus
from contracts.knowledge import Language
from contracts.names import REVIEW
from devstack.rehearsal_stack import RehearsalStack, rehearsal_stack
from keystore import demo_identity

PAUSES = (0.0, 0.05, 0.1, 0.2, 0.33)


async def waiting_case(stack: RehearsalStack) -> tuple[CaseHandle, str]:
    case = await stack.cases.start(
        demo_identity("alice"),
        "Please refund QH-1001 and explain the amount and the policy",
        language=Language.EN,
        case_id=f"flood-{uuid.uuid4().hex[:10]}",
    )
    view = await case.settled(timeout=30, poll_seconds=0.1)
    if view.status is not CaseStatus.WAITING_APPROVAL or not view.digest:
        raise RuntimeError("the benchmark case never waited for a reviewer")
    return case, view.digest


async def flood(stack: RehearsalStack, signals: int, size: int, pause: float) -> str:
    case, digest = await waiting_case(stack)
    handle, workflow_id = case.workflow, case.workflow.id
    first_run = (await handle.describe()).run_id
    payload = {"reviewer": "chen", "digest": digest, "decision": "approve", "note": "x" * size}
    # An attacker's client has no case codec: its payloads reach the history uncompressed.
    attacker = Client(
        stack.client.service_client, namespace=stack.client.namespace, data_converter=pydantic_data_converter
    )
    flooding = attacker.get_workflow_handle(workflow_id)
    started = time.perf_counter()
    sent = 0
    for _ in range(signals):
        try:
            await flooding.signal(REVIEW, payload)  # raw: a malformed review on purpose
        except Exception as error:  # the run was terminated mid-flood
            print(f"  signal {sent + 1} refused: {type(error).__name__}")
            break
        sent += 1
        if pause:
            await asyncio.sleep(pause)
    elapsed = time.perf_counter() - started
    await asyncio.sleep(3)
    description = await handle.describe()
    runs = 0
    async for _ in stack.client.list_workflows(f'WorkflowId="{workflow_id}"'):
        runs += 1
    outcome = "survived" if description.status and description.status.name == "RUNNING" else "TERMINATED"
    rate = sent * size / 1e6 / elapsed if elapsed else float("inf")
    changed = "" if description.run_id == first_run else ", continued as new"
    arrival = f"{sent} signals in {elapsed:5.2f}s ({rate:5.1f} MB/s)"
    return f"pause {pause:>4.2f}s: {arrival} -> {outcome} ({runs} runs{changed})"


async def main(signals: int, megabytes: float) -> None:
    size = int(megabytes * 1_000_000)
    print(f"{signals} malformed review signals of {megabytes} MB at a waiting case, one rehearsal worker")
    for pause in PAUSES:
        with tempfile.TemporaryDirectory() as tmp:
            async with rehearsal_stack(Path(tmp)) as stack:
                print(await flood(stack, signals, size, pause), flush=True)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    asyncio.run(main(int(arguments[0]) if arguments else 28, float(arguments[1]) if len(arguments) > 1 else 1.9))

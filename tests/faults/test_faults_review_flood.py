"""A flood of huge review signals at a waiting case: it continues as new, loses nothing, pays once.

28 signals of ~1.9 MB each (just under the dev server's 2 MB payload limit) within about ten seconds:
53 MB, more than the 50 MB history limit at which Temporal terminates a workflow. Each one is malformed (its
note is far over 500 characters), so each is recorded as a refusal of a few hundred bytes; the history
still grows by the raw payloads, and the case continues as new whenever Temporal suggests it, carrying
its whole state and the pending proposal. Afterwards the real reviewer approves and the refund is paid
exactly once.

The flood comes from a client without the case's payload codec, as an attacker's would: its notes reach
the history at full size (our own clients would compress a note of one repeated letter to a few KB).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.case import CaseStatus, CaseView
from tests.case_world import event_details
from tests.faults.fault_support import REFUND_QUESTION, approval

pytestmark = pytest.mark.slow

SIGNALS = 28
NOTE_BYTES = 1_900_000
PACE_SECONDS = 0.33
"""28 signals in about ten seconds, the pace of the flood this test reproduces. A burst that lands
faster than a workflow task can complete (all 28 at once: 53 MB in about a second) cannot be survived
inside any workflow: the server appends every signal to history before the worker sees it and refuses
to close a run while new events keep arriving. benchmarks/bench_review_flood.py measures that edge;
docs/faults.md lists the server-side limits and controls that protect a case from it."""


async def test_a_flood_of_huge_review_signals_is_survived_by_continuing_as_new(in_process_worker) -> None:
    world = in_process_worker
    handle = await world.start(REFUND_QUESTION)
    waiting = await world.waiting_for_approval(handle)
    first_run = (await handle.describe()).run_id

    attacker = Client(
        world.client.service_client, namespace=world.client.namespace, data_converter=pydantic_data_converter
    )
    flooding = attacker.get_workflow_handle(handle.id)
    flood = {"reviewer": "chen", "digest": waiting.digest, "decision": "approve", "note": "x" * NOTE_BYTES}
    started = time.monotonic()
    for _ in range(SIGNALS):
        await flooding.signal("review", flood)
        await asyncio.sleep(PACE_SECONDS)
    sent_in = time.monotonic() - started

    async def refused_all() -> list[str]:
        return [e for e in await event_details(handle, "review_refused") if e.startswith("malformed payload")]

    deadline = time.monotonic() + 120
    while len(await refused_all()) < SIGNALS:
        assert time.monotonic() < deadline, f"only {len(await refused_all())} of {SIGNALS} refusals recorded"
        await asyncio.sleep(0.5)

    description = await handle.describe()
    assert description.status is not None and description.status.name == "RUNNING"
    assert description.run_id != first_run  # it continued as new at least once
    continued = await event_details(handle, "continued_as_new")
    assert continued, "no continued_as_new event"
    view = await handle.query("status", result_type=CaseView)
    assert view.status is CaseStatus.WAITING_APPROVAL
    assert (view.proposal, view.digest) == (waiting.proposal, waiting.digest)  # the same pending proposal
    assert view.budgets == waiting.budgets and view.citations == waiting.citations
    assert all(len(e) <= 500 for e in await refused_all())  # refusals are bounded in state

    await handle.signal("review", approval("chen", waiting.case_id, waiting.digest))
    final = await world.result(handle)
    assert final.status is CaseStatus.COMPLETED and final.receipt is not None
    assert [(r.order_id, r.amount_cents) for r in world.refund_records()] == [("QH-1001", 12900)]
    print(f"{SIGNALS} signals of {NOTE_BYTES / 1e6:.1f} MB sent in {sent_in:.1f}s; continued as new {len(continued)}x")

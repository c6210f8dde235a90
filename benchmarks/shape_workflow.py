"""A no-op workflow of the same shape as a refund case up to ``waiting_approval`` (bench_performance ``shape``).

A refund case (rehearsal model, tests/histories/approved_refund-2026-12-issue13.json) runs, up to the
point where it waits for a reviewer with its case record written:

1. the applicant check, a local activity, in the first workflow task;
2. ``plan_case``, a regular activity;
3. three ``investigate_turn`` regular activities; after each of the first two, two read-only tools run
   together (``asyncio.gather``) as local activities in the next workflow task;
4. ``compose_answer`` and ``review_answer``, regular activities;
5. the status turns ``waiting_approval`` and ``write_case_record``, a regular activity, is scheduled;
   then it waits for a review (a signal) until the benchmark terminates it.

This workflow does the same steps in the same order and grouping, with no-op activities whose input and
result are strings of about the same size as that history's payloads (the input and result sizes below,
in bytes), and the same kind of status query, so that what it costs is what Temporal itself costs a case
of that shape. It does not mimic the case's search-attribute upserts, patch markers, memo, current
details or activity heartbeats: those are the case's own choices and count on the case's side.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import activity, workflow

START_BYTES = 655
"""The case's start input (its CaseInput JSON)."""
APPLICANT_CHECK = 645
"""Result of the applicant check (local)."""
PLAN = (144, 393)
TURNS = ((663, 475, (3141, 480)), (1818, 406, (1704, 2483)), (3514, 192, ()))
"""(input, result, the results of that turn's tools) of each investigate turn."""
COMPOSE = (2720, 652)
REVIEW = (2771, 150)
RECORD = (1818, 89)
WAITING = "waiting_approval"
SETTLED = "settled"
"""The status once the record is written (a case's ``settled``: waiting, its record written)."""
REGULAR_TIMEOUT = timedelta(seconds=60)
LOCAL_TIMEOUT = timedelta(seconds=30)


@activity.defn(name="shape_step")
async def shape_step(result_bytes: int, padding: str) -> str:
    """A no-op activity: a ``result_bytes`` long string back for an input ``padding`` long."""
    return "r" * result_bytes


def pad(size: int) -> str:
    return "p" * size


@workflow.defn(name="ShapeFloorWorkflow")
class ShapeFloorWorkflow:
    def __init__(self) -> None:
        self._status = "running"
        self._reviewed = False

    @workflow.run
    async def run(self, start: str) -> str:
        await self._local(APPLICANT_CHECK)
        await self._regular(PLAN)
        for sent, answered, tools in TURNS:
            await self._regular((sent, answered))
            if tools:
                await asyncio.gather(*(self._local(size) for size in tools))
        await self._regular(COMPOSE)
        await self._regular(REVIEW)
        self._status = WAITING
        await self._regular(RECORD)
        self._status = SETTLED
        await workflow.wait_condition(lambda: self._reviewed)
        return self._status

    async def _regular(self, sizes: tuple[int, int]) -> str:
        sent, answered = sizes
        return await workflow.execute_activity(
            shape_step, args=[answered, pad(sent)], start_to_close_timeout=REGULAR_TIMEOUT
        )

    async def _local(self, answered: int) -> str:
        return await workflow.execute_local_activity(
            shape_step, args=[answered, ""], start_to_close_timeout=LOCAL_TIMEOUT
        )

    @workflow.query(name="status")
    def status(self) -> str:
        return self._status

    @workflow.signal(name="review")
    def review(self) -> None:
        self._reviewed = True


def start_input() -> str:
    """The start input, the size of a case's."""
    return pad(START_BYTES)

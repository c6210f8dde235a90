"""A no-op workflow of the same shape as a two-turn conversation (benchmarks/bench_conversation.py's floor).

A conversation of the benchmark (rehearsal model; its history read from one run on a rehearsal stack,
release 0.11) runs:

turn 1, "I want a refund for my lamp", started with Update-with-Start and the ``reply`` update (a
timer: the reply wait):

1. ``verify_applicant``, a local activity;
2. ``plan_case``; two ``investigate_turn`` activities, after the first three read-only tools run together
   as local activities; ``compose_answer`` and ``review_answer`` (regular activities);
3. the reply ("Which order is this about?"), status ``waiting_customer``, ``write_case_record`` (regular);
   then it waits for a message until the tenant's idle limit (a timer).

turn 2, "It is order QH-1001", the ``message`` update:

1. the message's credential is verified by ``verify_customer_message``, a local activity, in the update;
2. ``plan_case``; the customer's ``reply`` update waits for the reply (a timer); three ``investigate_turn``
   activities, after each of the first two, two tools together as local activities; ``compose_answer``,
   ``review_answer``;
3. the reply, status ``waiting_approval``, ``write_case_record``; then it waits for a reviewer (a timer)
   until the benchmark terminates it.

Every step publishes the same progress items on a workflow stream (``temporalio.contrib.workflow_streams``,
topic ``progress``, items of about the same size) at the same points, and the benchmark reads them the
same way. Activities are one no-op whose input and result are strings of about the sizes in that history
(bytes below). It does not mimic the case's search-attribute and memo upserts, its current details, the
``message`` update's validator or its case events: those are the case's own choices and count on its side.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.contrib.workflow_streams import WorkflowStream

with workflow.unsafe.imports_passed_through():
    from shape_workflow import LOCAL_TIMEOUT, REGULAR_TIMEOUT, pad, shape_step

floor_step = shape_step
"""The no-op activity of the floors (benchmarks/shape_workflow.py's): a string of the asked size back."""

START_BYTES = 657
"""The case's start input (its CaseInput JSON)."""
TOPIC = "progress"
ITEM_BYTES = 170
"""About the size of one progress item (a ProgressItem's JSON; 150 to 270 bytes, a reply up to 580)."""

Step = tuple[int, int]
"""(input, result) bytes of a regular activity."""
Tools = tuple[int, ...]
"""The result bytes of the local activities (read-only tools) run together after an investigate turn."""

FIRST_VERIFY = 1232
"""Result of ``verify_applicant`` (local)."""
FIRST_PLAN: Step = (136, 382)
FIRST_TURNS: tuple[tuple[Step, Tools], ...] = (((609, 703), (3675, 3432, 3630)), ((3338, 205), ()))
FIRST_COMPOSE: Step = (2888, 264)
FIRST_REVIEW: Step = (2850, 164)
FIRST_RECORD: Step = (3094, 91)

MESSAGE_VERIFY = 412
"""Result of ``verify_customer_message`` (local), in the ``message`` update."""
SECOND_PLAN: Step = (163, 406)
SECOND_TURNS: tuple[tuple[Step, Tools], ...] = (
    ((654, 488), (3433, 770)),
    ((1857, 419), (1994, 2773)),
    ((3893, 205), ()),
)
SECOND_COMPOSE: Step = (3124, 665)
SECOND_REVIEW: Step = (3158, 164)
SECOND_RECORD: Step = (2453, 91)

WAITING_CUSTOMER = "waiting_customer"
WAITING_APPROVAL = "waiting_approval"
IDLE_LIMIT = timedelta(hours=24)
APPROVAL_WAIT = timedelta(seconds=900)


@workflow.defn(name="ConversationFloorWorkflow")
class ConversationFloorWorkflow:
    @workflow.init
    def __init__(self, start: str) -> None:
        self._stream = WorkflowStream()
        self._topic = self._stream.topic(TOPIC)
        self._status = "running"
        self._settled = False
        self._turn = 1
        self._inbox = 0
        self._replies: dict[int, str] = {}

    @workflow.run
    async def run(self, start: str) -> str:
        await self._local(FIRST_VERIFY)
        self._publish("message_received")
        await self._work(FIRST_PLAN, FIRST_TURNS, FIRST_COMPOSE, FIRST_REVIEW)
        await self._wait_for(WAITING_CUSTOMER, "waiting_for_customer", FIRST_RECORD)
        await workflow.wait_condition(lambda: self._inbox > 0, timeout=IDLE_LIMIT)
        self._turn, self._status, self._settled = 2, "running", False
        await self._work(SECOND_PLAN, SECOND_TURNS, SECOND_COMPOSE, SECOND_REVIEW)
        await self._wait_for(WAITING_APPROVAL, "waiting_for_reviewer", SECOND_RECORD)
        await workflow.wait_condition(lambda: False, timeout=APPROVAL_WAIT)
        return self._status

    async def _work(self, plan: Step, turns: tuple[tuple[Step, Tools], ...], compose: Step, review: Step) -> None:
        self._publish("planning")
        await self._regular(plan)
        for investigate, tools in turns:
            await self._regular(investigate)
            for _ in tools:
                self._publish("looking_up")
            if tools:
                await asyncio.gather(*(self._local(size) for size in tools))
        self._publish("drafting")
        await self._regular(compose)
        self._publish("reviewing")
        await self._regular(review)

    async def _wait_for(self, status: str, kind: str, record: Step) -> None:
        self._replies[self._turn] = pad(ITEM_BYTES)
        self._publish("reply")
        self._status = status
        self._publish(kind)
        await self._regular(record)
        self._settled = True

    def _publish(self, kind: str) -> None:
        self._topic.publish({"kind": kind, "turn": self._turn, "text": pad(ITEM_BYTES)})

    async def _regular(self, sizes: Step) -> str:
        sent, answered = sizes
        return await workflow.execute_activity(
            shape_step, args=[answered, pad(sent)], start_to_close_timeout=REGULAR_TIMEOUT
        )

    async def _local(self, answered: int) -> str:
        return await workflow.execute_local_activity(
            shape_step, args=[answered, ""], start_to_close_timeout=LOCAL_TIMEOUT
        )

    @workflow.update(name="message")
    async def message(self, message: dict[str, Any]) -> dict[str, Any]:
        await self._local(MESSAGE_VERIFY)
        self._inbox += 1
        self._publish("message_received")
        return {"turn": 1 + self._inbox, "message_id": message.get("message_id")}

    @workflow.update(name="reply")
    async def reply(self, wait: dict[str, Any]) -> dict[str, Any]:
        turn = int(wait["turn"])
        with contextlib.suppress(TimeoutError):  # the floor as it is, reply or not
            await workflow.wait_condition(
                lambda: turn in self._replies, timeout=timedelta(seconds=float(wait["wait_seconds"]))
            )
        return {
            "turn": turn,
            "status": self._status,
            "reply": self._replies.get(turn),
            "progress_offset": self._stream._on_offset(),
        }

    @workflow.query(name="status")
    def status(self) -> dict[str, Any]:
        return {"status": self._status, "settled": self._settled}


def start_input() -> str:
    """The start input, the size of a case's."""
    return pad(START_BYTES)

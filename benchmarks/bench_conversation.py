"""Benchmark: a case as a conversation (issue 47), beside a no-op workflow of its shape (prints figures).

    .venv/bin/python benchmarks/bench_conversation.py [--conversations N]

One throwaway dev server (``rehearsal_stack``: seeded SQLite commerce database, demo keys), the rehearsal
model. Two sides, one after the other, each on its own in-process worker on a fresh task queue of that
server: the case (the production worker, ``bench_worker``: real commerce MCP server over stdio) and its
floor (:class:`conversation_floor.ConversationFloorWorkflow`, the same steps doing nothing, on a worker
with only it and its no-op activity, the same sandboxed runner and client). Each side runs one warm-up
conversation, then N one after another, every one measured the same way:

turn 1  "I want a refund for my lamp" with Update-with-Start (``start_conversation``: the start and the
        ``reply`` update in one call): the time to its first reply; then the status query, polled every
        50 ms, until the case waits for the customer (``waiting_customer``) with its record written.
turn 2  the stream offset is read (``get_offset``); from just before the send, a reader follows the
        stream from that offset (``progress``), "It is order QH-1001" is sent (``send_message``, under an
        applicant token the stack's signer made for this case beforehand) and the ``reply`` update waits
        for its reply: the times to the acceptance, to the turn's first progress item, to the reply (the
        update and the ``reply`` item on the stream) and to ``waiting_for_reviewer`` on the stream; the
        turn ends when the case waits for a reviewer (``waiting_approval``, polled every 50 ms) with its
        record written and the reader has read ``waiting_for_reviewer``.

Each case must reach ``waiting_approval`` with a proposal of 12900 cents for QH-1001; the proposal only
waits (nothing is paid) and the case is terminated once measured, so every conversation proposes the
same order. CPU seconds (user + system, /proc) are read per process (:func:`perf_support.cpu_by_process`:
this process, i.e. the worker and the client; the dev server; the commerce MCP server) around each turn,
summed over the N conversations and divided by N. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_performance import REHEARSAL_SETTINGS, compile_bytecode  # noqa: E402
from bench_shape import _cpu_rows  # noqa: E402
from conversation_floor import TOPIC, ConversationFloorWorkflow, floor_step, start_input  # noqa: E402
from perf_support import bench_worker, cpu_by_process, machine_line, ms, percentile  # noqa: E402
from temporalio.client import Client, WithStartWorkflowOperation  # noqa: E402
from temporalio.common import WorkflowIDConflictPolicy  # noqa: E402
from temporalio.contrib.workflow_streams import WorkflowStreamClient  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from case_client import CaseClient  # noqa: E402
from case_client._conversation import (  # noqa: E402
    new_message_id,
    progress,
    progress_offset,
    send_message,
    start_conversation,
    wait_reply,
)
from case_client._rules import new_case  # noqa: E402
from contracts.case import TERMINAL_STATUSES, CaseStatus, CaseView  # noqa: E402
from contracts.conversation import CustomerMessage  # noqa: E402
from contracts.knowledge import Language  # noqa: E402
from devstack.rehearsal_stack import RehearsalStack, rehearsal_stack  # noqa: E402
from keystore import demo_identity  # noqa: E402
from workflows.sandbox import workflow_runner  # noqa: E402

FIRST = "I want a refund for my lamp"
SECOND = "It is order QH-1001"
ALICE = demo_identity("alice")
WAIT_SECONDS = 25.0
"""The ``reply`` update's wait (at most 30 s); a reply later than this is an error here."""
POLL = 0.05
TIMEOUT = 120.0
EXPECTED_PROPOSAL = "12900 cents for QH-1001"
WAITING_CUSTOMER, WAITING_APPROVAL = CaseStatus.WAITING_CUSTOMER.value, CaseStatus.WAITING_APPROVAL.value
REPLY, WAITING_FOR_REVIEWER = "reply", "waiting_for_reviewer"


class Side(Protocol):
    """One side measured: the case or its floor, driven by the same steps."""

    name: str

    async def start(self, case_id: str) -> tuple[Any, bool]:
        """Update-with-Start with the first message: (handle, whether the reply came within the wait)."""
        ...

    async def settled(self, handle: Any, status: str) -> None:
        """Until ``status`` with its record written (polled every :data:`POLL` s); an error otherwise."""
        ...

    async def offset(self, handle: Any) -> int: ...

    def message(self, case_id: str) -> Any:
        """The second message, its credential made beforehand (as a customer's sign-in does)."""
        ...

    async def send(self, handle: Any, message: Any) -> int:
        """Send the message: its turn."""
        ...

    async def reply(self, handle: Any, turn: int) -> tuple[str, bool]:
        """The ``reply`` update: (status, whether the reply came within the wait)."""
        ...

    def kinds(self, handle: Any, offset: int) -> AsyncIterator[str]:
        """The kinds of the progress items from ``offset`` on."""
        ...

    async def finish(self, handle: Any) -> None: ...


class CaseSide:
    name = "case"

    def __init__(self, stack: RehearsalStack, cases: CaseClient) -> None:
        self._stack, self._cases = stack, cases
        self.proposals: list[str] = []
        """Each measured case's proposal when it waited for a reviewer: "<cents> cents for <order>"."""

    async def start(self, case_id: str) -> tuple[Any, bool]:
        case = new_case(ALICE, FIRST, language=Language.EN, case_id=case_id)
        case = case.model_copy(update={"applicant_token": self._stack.signer.applicant_token(ALICE, case_id)})
        handle, reply = await start_conversation(
            self._stack.client, self._cases.task_queue, case, wait_seconds=WAIT_SECONDS
        )
        return handle, reply.reply is not None

    async def settled(self, handle: Any, status: str) -> None:
        def done(view: CaseView) -> bool:
            return (view.status.value == status and view.record_attempted) or view.status in TERMINAL_STATUSES

        case = self._cases.open(handle.id.removeprefix("case-"))
        view = await case.wait_for(done, timeout=TIMEOUT, poll_seconds=POLL)
        if view.status.value != status:
            raise RuntimeError(f"case {case.case_id} reached {view.status.value} ({view.reason}), not {status}")
        if status == WAITING_APPROVAL:
            proposal = view.proposal
            found = f"{proposal.amount_cents} cents for {proposal.order_id}" if proposal else "no proposal"
            if found != EXPECTED_PROPOSAL:
                raise RuntimeError(f"case {case.case_id} waits for a reviewer with {found}, not {EXPECTED_PROPOSAL}")
            self.proposals.append(found)

    async def offset(self, handle: Any) -> int:
        return await progress_offset(self._stack.client, handle.id)

    def message(self, case_id: str) -> Any:
        token = self._stack.signer.applicant_token(ALICE, case_id)
        return CustomerMessage(text=SECOND, token=token, message_id=new_message_id())

    async def send(self, handle: Any, message: Any) -> int:
        return (await send_message(handle, message)).turn

    async def reply(self, handle: Any, turn: int) -> tuple[str, bool]:
        answer = await wait_reply(handle, turn, wait_seconds=WAIT_SECONDS)
        return answer.status.value, answer.reply is not None

    async def kinds(self, handle: Any, offset: int) -> AsyncIterator[str]:
        async for item in progress(self._stack.client, handle.id, from_offset=offset):
            yield item.item.kind.value

    async def finish(self, handle: Any) -> None:
        await handle.terminate(reason="benchmark conversation, measured")


class FloorSide:
    name = "floor"

    def __init__(self, client: Client, task_queue: str, stack: RehearsalStack) -> None:
        self._client, self._task_queue, self._stack = client, task_queue, stack

    async def start(self, case_id: str) -> tuple[Any, bool]:
        operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            ConversationFloorWorkflow.run,
            start_input(),
            id=f"floor-{case_id}",
            task_queue=self._task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        reply = await self._client.execute_update_with_start_workflow(
            "reply", {"turn": 1, "wait_seconds": WAIT_SECONDS}, start_workflow_operation=operation, result_type=dict
        )
        return await operation.workflow_handle(), reply.get("reply") is not None

    async def settled(self, handle: Any, status: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while True:
            now: dict[str, Any] = await handle.query("status", result_type=dict)
            if now["status"] == status and now["settled"]:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{handle.id} is {now} after {TIMEOUT:.0f} s, not {status} with its record")
            await asyncio.sleep(POLL)

    async def offset(self, handle: Any) -> int:
        return await WorkflowStreamClient.create(self._client, handle.id).get_offset()

    def message(self, case_id: str) -> Any:
        token = self._stack.signer.applicant_token(ALICE, case_id)  # a payload of the same size; not checked
        return {"text": SECOND, "token": token, "message_id": new_message_id()}

    async def send(self, handle: Any, message: Any) -> int:
        return int((await handle.execute_update("message", message, result_type=dict))["turn"])

    async def reply(self, handle: Any, turn: int) -> tuple[str, bool]:
        answer = await handle.execute_update("reply", {"turn": turn, "wait_seconds": WAIT_SECONDS}, result_type=dict)
        return str(answer["status"]), answer.get("reply") is not None

    async def kinds(self, handle: Any, offset: int) -> AsyncIterator[str]:
        stream = WorkflowStreamClient.create(self._client, handle.id)
        async for item in stream.subscribe([TOPIC], offset, result_type=dict):
            yield str(item.data["kind"])

    async def finish(self, handle: Any) -> None:
        await handle.terminate(reason="benchmark floor, measured")


@dataclass
class Figures:
    first_reply: list[float] = field(default_factory=list)
    accepted: list[float] = field(default_factory=list)
    first_item: list[float] = field(default_factory=list)
    reply: list[float] = field(default_factory=list)
    stream_reply: list[float] = field(default_factory=list)
    reviewer: list[float] = field(default_factory=list)
    first_kinds: set[str] = field(default_factory=set)
    cpu_first: dict[str, float] = field(default_factory=dict)
    """CPU seconds by process over every measured turn 1 (divided by N when printed)."""
    cpu_second: dict[str, float] = field(default_factory=dict)

    def add_cpu(self, into: dict[str, float], before: dict[str, float], after: dict[str, float]) -> None:
        for name in after:
            into[name] = into.get(name, 0.0) + after[name] - before.get(name, 0.0)


async def _read(kinds: AsyncIterator[str], started: float, seen: list[tuple[str, float]]) -> None:
    """Note each item's kind and arrival (seconds after ``started``) until ``waiting_for_reviewer``."""
    async for kind in kinds:
        seen.append((kind, time.perf_counter() - started))
        if kind == WAITING_FOR_REVIEWER:
            return


def _first(seen: list[tuple[str, float]], kind: str, where: str) -> float:
    for name, seconds in seen:
        if name == kind:
            return seconds
    raise RuntimeError(f"{where}: no {kind} item on the stream ({[name for name, _ in seen]})")


async def converse(side: Side, figures: Figures | None) -> None:
    """One conversation of two turns on ``side``, measured into ``figures`` (None: a warm-up)."""
    case_id = f"conv-{uuid.uuid4().hex[:10]}"
    before, started = cpu_by_process(), time.perf_counter()
    handle, replied = await side.start(case_id)
    first_reply = time.perf_counter() - started
    if not replied:
        raise RuntimeError(f"{side.name} {case_id}: no first reply within {WAIT_SECONDS:.0f} s")
    await side.settled(handle, WAITING_CUSTOMER)
    after_first = cpu_by_process()
    offset, message = await side.offset(handle), side.message(case_id)
    seen: list[tuple[str, float]] = []
    before_second, started = cpu_by_process(), time.perf_counter()
    reader = asyncio.create_task(_read(side.kinds(handle, offset), started, seen))
    turn = await side.send(handle, message)
    accepted = time.perf_counter() - started
    status, replied = await side.reply(handle, turn)
    reply = time.perf_counter() - started
    if not replied or turn != 2:
        raise RuntimeError(f"{side.name} {case_id}: message {turn} had no reply within {WAIT_SECONDS:.0f} s ({status})")
    await asyncio.wait_for(asyncio.gather(side.settled(handle, WAITING_APPROVAL), reader), timeout=TIMEOUT)
    after_second = cpu_by_process()
    await side.finish(handle)
    if figures is None:
        return
    figures.first_reply.append(first_reply)
    figures.accepted.append(accepted)
    figures.reply.append(reply)
    figures.first_item.append(seen[0][1])
    figures.first_kinds.add(seen[0][0])
    figures.stream_reply.append(_first(seen, REPLY, f"{side.name} {case_id}"))
    figures.reviewer.append(_first(seen, WAITING_FOR_REVIEWER, f"{side.name} {case_id}"))
    figures.add_cpu(figures.cpu_first, before, after_first)
    figures.add_cpu(figures.cpu_second, before_second, after_second)


async def measure(side: Side, n: int) -> Figures:
    await converse(side, None)  # warm-up: commerce sessions, model client, sandbox, stream client
    figures = Figures()
    for _ in range(n):
        await converse(side, figures)
    return figures


@asynccontextmanager
async def floor_side(stack: RehearsalStack) -> AsyncIterator[FloorSide]:
    task_queue = f"conversation-floor-{uuid.uuid4().hex[:8]}"
    async with Worker(
        stack.client,
        task_queue=task_queue,
        workflows=[ConversationFloorWorkflow],
        activities=[floor_step],
        workflow_runner=workflow_runner(),
    ):
        yield FloorSide(stack.client, task_queue, stack)


def _row(label: str, case: list[float], floor: list[float]) -> str:
    c50, f50 = percentile(case, 0.5), percentile(floor, 0.5)
    return (
        f"   {label}: case p50 {ms(c50)}, p95 {ms(percentile(case, 0.95))}; floor p50 {ms(f50)}, "
        f"p95 {ms(percentile(floor, 0.95))}; case/floor p50 {c50 / f50:.2f}x"
    )


def report(case: Figures, floor: Figures, n: int, proposals: list[str]) -> None:
    def mean(cpu: dict[str, float]) -> dict[str, float]:
        return {name: seconds / n for name, seconds in cpu.items()}

    waited = sorted(set(proposals))
    print(
        f"1. latency over {n} conversations per side, one after another after 1 warm-up each "
        f"(case: rehearsal model, production worker; floor: benchmarks/conversation_floor.py)"
    )
    print(f"   cases reaching waiting_approval with a proposal: {len(proposals)}/{n} ({', '.join(waited) or 'none'})")
    first = "first message -> its first reply (Update-with-Start + reply update)"
    print(_row(first, case.first_reply, floor.first_reply))
    print("   second message, from just before send_message:")
    print(_row("  accepted (message update returned)", case.accepted, floor.accepted))
    kinds = "/".join(sorted(case.first_kinds | floor.first_kinds))
    print(_row(f"  first progress item of the turn ({kinds})", case.first_item, floor.first_item))
    print(_row("  reply (reply update returned)", case.reply, floor.reply))
    print(_row("  reply item on the stream", case.stream_reply, floor.stream_reply))
    print(_row("  waiting_for_reviewer item on the stream", case.reviewer, floor.reviewer))
    print("2. CPU per customer turn by process (user + system), mean over the measured conversations")
    print("   turn 1: Update-with-Start -> waiting_customer, record written (status polled every 50 ms)")
    print("\n".join(_cpu_rows(mean(case.cpu_first), mean(floor.cpu_first))))
    print(
        "   turn 2: send -> waiting_approval, record written (status polled every 50 ms), stream read to "
        "waiting_for_reviewer"
    )
    print("\n".join(_cpu_rows(mean(case.cpu_second), mean(floor.cpu_second))), flush=True)


async def main(args: argparse.Namespace) -> None:
    if args.conversations < 1:
        raise SystemExit("bench_conversation: --conversations must be at least 1")
    print(machine_line())
    print(
        f"one dev server, one in-process worker per side, on this machine; {args.conversations} conversations "
        "per side; figures from one run",
        flush=True,
    )
    compile_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        async with rehearsal_stack(Path(tmp)) as stack:
            async with floor_side(stack) as floor_driver:
                floor = await measure(floor_driver, args.conversations)
            async with bench_worker(stack, REHEARSAL_SETTINGS) as cases:
                case_driver = CaseSide(stack, cases)
                case = await measure(case_driver, args.conversations)
    proposals = case_driver.proposals[1:]  # the warm-up's first
    report(case, floor, args.conversations, proposals)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--conversations", type=int, default=20, help="conversations per side (default 20)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))

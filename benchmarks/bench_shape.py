"""bench_performance ``shape``: a refund case beside a no-op workflow of its shape, measured the same way.

Both run on the same dev server, one after the other, each on its own in-process worker with the same
worker options: the case on the production worker (``bench_worker``), the floor
(:class:`shape_workflow.ShapeFloorWorkflow`) on a worker with only it and its no-op activity (same
sandboxed runner, same client and data converter). For each: N sequential runs after one warm-up (start ->
status query shows waiting_approval, polled every 50 ms; each terminated once its record is written),
then M at once (polled every 0.5 s). CPU is read per process (:func:`perf_support.cpu_by_process`) around
each batch, terminations included. Figures are printed, never asserted.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from perf_support import cpu_by_process, ms, options_line, percentile
from shape_workflow import SETTLED, WAITING, ShapeFloorWorkflow, shape_step, start_input
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from workflows.sandbox import workflow_runner

TIMEOUT = 600.0
WORKER = "this process (worker + client)"


@dataclass(frozen=True)
class Subject:
    """What is measured: ``to_waiting(poll)`` starts one and returns (handle, seconds until it waits);
    ``finish(handles)`` waits for their records and terminates them."""

    name: str
    to_waiting: Callable[[float], Awaitable[tuple[Any, float]]]
    finish: Callable[[list[Any]], Awaitable[None]]


@dataclass
class Figures:
    latencies: list[float]
    cpu_sequential: dict[str, float]
    """CPU seconds per case by process, sequential batch."""
    throughput: float
    cpu_concurrent: dict[str, float]


def _used(before: dict[str, float], after: dict[str, float], cases: int) -> dict[str, float]:
    return {name: (after.get(name, 0.0) - before.get(name, 0.0)) / cases for name in after}


async def measure(subject: Subject, sequential: int, concurrent: int) -> Figures:
    await subject.finish([(await subject.to_waiting(0.05))[0]])  # warm-up
    latencies = []
    before = cpu_by_process()
    for _ in range(sequential):
        handle, seconds = await subject.to_waiting(0.05)
        latencies.append(seconds)
        await subject.finish([handle])
    cpu_sequential = _used(before, cpu_by_process(), sequential)
    before, started = cpu_by_process(), time.perf_counter()
    results = await asyncio.gather(*(subject.to_waiting(0.5) for _ in range(concurrent)))
    wall = time.perf_counter() - started
    await subject.finish([handle for handle, _ in results])
    cpu_concurrent = _used(before, cpu_by_process(), concurrent)
    return Figures(latencies, cpu_sequential, concurrent / wall, cpu_concurrent)


@asynccontextmanager
async def floor_subject(client: Client, options: dict[str, Any]) -> AsyncIterator[Subject]:
    """The no-op workflow of a refund case's shape on its own worker and task queue."""
    task_queue = f"shape-{uuid.uuid4().hex[:8]}"

    async def status(handle: WorkflowHandle[Any, Any]) -> str:
        return str(await handle.query(ShapeFloorWorkflow.status))

    async def to_waiting(poll: float) -> tuple[WorkflowHandle[Any, Any], float]:
        started = time.perf_counter()
        handle = await client.start_workflow(
            ShapeFloorWorkflow.run, start_input(), id=f"shape-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )
        while await status(handle) not in (WAITING, SETTLED):
            await asyncio.sleep(poll)
        return handle, time.perf_counter() - started

    async def settle(handle: WorkflowHandle[Any, Any]) -> None:
        deadline = time.monotonic() + TIMEOUT
        while await status(handle) != SETTLED:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{handle.id} has not written its record after {TIMEOUT:.0f} s")
            await asyncio.sleep(0.1)

    async def finish(handles: list[WorkflowHandle[Any, Any]]) -> None:
        await asyncio.gather(*(settle(handle) for handle in handles))
        await asyncio.gather(*(handle.terminate(reason="benchmark floor, measured") for handle in handles))

    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[ShapeFloorWorkflow],
        activities=[shape_step],
        workflow_runner=workflow_runner(),
        **options,
    ):
        yield Subject("floor", to_waiting, finish)


def _cpu_rows(case: dict[str, float], floor: dict[str, float]) -> list[str]:
    names = sorted(set(case) | set(floor), key=lambda name: -case.get(name, 0.0))
    rows = []
    for name in [*names, "total"]:
        mine = sum(case.values()) if name == "total" else case.get(name, 0.0)
        theirs = sum(floor.values()) if name == "total" else floor.get(name, 0.0)
        if mine < 0.0005 and theirs < 0.0005:
            continue
        ratio = f"{mine / theirs:.2f}x" if theirs >= 0.0005 else "-"
        rows.append(f"     {name}: case {ms(mine)}, floor {ms(theirs)}, case/floor {ratio}")
    return rows


def report(case: Figures, floor: Figures, sequential: int, concurrent: int, options: dict[str, Any]) -> None:
    case_p50, floor_p50 = percentile(case.latencies, 0.5), percentile(floor.latencies, 0.5)
    print(
        "h. a refund case to waiting_approval beside a no-op workflow of its shape (benchmarks/shape_workflow.py), "
        f"same server, one worker each; {sequential} sequential after 1 warm-up, then {concurrent} at once"
    )
    print(f"   {options_line(options)}")
    print(
        f"   sequential latency p50: case {ms(case_p50)}, floor {ms(floor_p50)}, "
        f"case/floor {case_p50 / floor_p50:.2f}x (status polled every 50 ms)"
    )
    print("   CPU per case by process, sequential (terminations included):")
    print("\n".join(_cpu_rows(case.cpu_sequential, floor.cpu_sequential)))
    print(
        f"   {concurrent} at once: throughput case {case.throughput:.2f}/s, floor {floor.throughput:.2f}/s, "
        f"case/floor {case.throughput / floor.throughput:.2f}x (status polled every 0.5 s)"
    )
    print(f"   CPU per case by process, {concurrent} at once:")
    print("\n".join(_cpu_rows(case.cpu_concurrent, floor.cpu_concurrent)), flush=True)


async def shape(
    client: Client,
    case_subject: Callable[[], AbstractAsyncContextManager[Subject]],
    sequential: int,
    concurrent: int,
    options: dict[str, Any],
) -> None:
    """Measure the floor, then the case (``case_subject`` gives it on its own worker), and print both."""
    async with floor_subject(client, options) as floor_side:
        floor = await measure(floor_side, sequential, concurrent)
    async with case_subject() as case_side:
        case = await measure(case_side, sequential, concurrent)
    report(case, floor, sequential, concurrent, options)

"""Benchmark: the performance figures, all in one run, with the machine they ran on (prints figures).

    .venv/bin/python benchmarks/bench_performance.py [--sequential N] [--concurrent N] [--slow-cases N]
        [--skip sequential,concurrent,slow,history,worst,replay,floor,shape] [--profile FILE.html|FILE.txt]
        [--max-concurrent-activities N] [--max-concurrent-workflow-tasks N] [--max-cached-workflows N]

One throwaway dev server (``rehearsal_stack``: seeded SQLite commerce database, demo keys); each part
runs its own in-process production worker (``build_worker``, real commerce MCP server over stdio) on a
fresh task queue of that server, with the worker options given here (printed). The parts are listed
at :func:`main`.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import logging
import re
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_shape import Subject, shape  # noqa: E402
from commerce_profile import profiled_commerce_servers, summary  # noqa: E402
from floor_workflow import FloorWorkflow, floor_noop  # noqa: E402
from perf_support import (  # noqa: E402
    HistorySize,
    ProfiledExecutor,
    bench_worker,
    cpu_by_process,
    cpu_line,
    history_size,
    machine_line,
    ms,
    options_line,
    percentile,
    replay_histories,
    write_profile,
)
from temporalio.api.enums.v1 import EventType  # noqa: E402
from temporalio.api.history.v1 import HistoryEvent  # noqa: E402
from temporalio.client import WorkflowHistory  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from activities.model.model_settings import load_model_settings  # noqa: E402
from case_client import CaseClient, CaseHandle  # noqa: E402
from contracts.case import CaseStatus, CaseView, Decision  # noqa: E402
from contracts.knowledge import Language  # noqa: E402
from contracts.tools import ToolName  # noqa: E402
from devstack.rehearsal_stack import RehearsalStack, rehearsal_stack  # noqa: E402
from keystore import demo_identity  # noqa: E402
from tests.adversarial.provider import (  # noqa: E402
    REHEARSAL,
    Reply,
    ScriptedProvider,
    call,
    http_error,
    json_reply,
    slow,
    tool_calls,
)
from tests.release_code import current_release  # noqa: E402
from workflows.sandbox import workflow_runner  # noqa: E402

REFUND = "Please refund QH-1001 and explain the amount and the policy"
DELIVERY = "Where is my order QH-1005? Can I still change the delivery address?"
PARTS = ("sequential", "concurrent", "slow", "history", "worst", "replay", "floor", "shape")
REFUND_STEPS = 12
"""Activities a refund case runs before it waits: applicant check, plan, 3 investigate turns, 4 tools,
compose, review, case record (part d's history)."""
TIMEOUT = 600.0
REHEARSAL_SETTINGS = load_model_settings({})


async def start(cases: CaseClient, question: str) -> CaseHandle:
    return await cases.start(
        demo_identity("alice"), question, language=Language.EN, case_id=f"perf-{uuid.uuid4().hex[:10]}"
    )


async def to_waiting(cases: CaseClient, poll: float) -> tuple[CaseHandle, float]:
    """Start a refund case; seconds until its status query shows waiting_approval."""
    started = time.perf_counter()
    case = await start(cases, REFUND)
    view = await case.wait_for(lambda v: v.status is not CaseStatus.RUNNING, timeout=TIMEOUT, poll_seconds=poll)
    elapsed = time.perf_counter() - started
    if view.status is not CaseStatus.WAITING_APPROVAL:
        raise RuntimeError(f"refund case {case.case_id} reached {view.status} ({view.reason}), not waiting_approval")
    return case, elapsed


async def to_completion(cases: CaseClient, question: str) -> float:
    started = time.perf_counter()
    view = await (await start(cases, question)).ended(timeout=TIMEOUT)
    if view.status is not CaseStatus.COMPLETED:
        raise RuntimeError(f"case {view.case_id} ended {view.status} ({view.reason})")
    return time.perf_counter() - started


async def terminate(cases: list[CaseHandle]) -> None:
    """Terminate measured cases once their case record is written (so no activity is cut off)."""
    await asyncio.gather(*(case.settled(timeout=TIMEOUT, poll_seconds=0.1) for case in cases))
    await asyncio.gather(*(case.workflow.terminate(reason="benchmark case, measured") for case in cases))


async def sequential(stack: RehearsalStack, n: int, options: dict[str, Any]) -> None:
    async with bench_worker(stack, REHEARSAL_SETTINGS, **options) as cases:
        await terminate([(await to_waiting(cases, 0.05))[0]])  # warm-up
        latencies = []
        cpu_before, started = cpu_by_process(), time.perf_counter()
        for _ in range(n):
            case, seconds = await to_waiting(cases, 0.05)
            latencies.append(seconds)
            await terminate([case])
        cpu_after, wall = cpu_by_process(), time.perf_counter() - started
    print(f"a. sequential refund cases to waiting_approval, rehearsal model, one worker, {n} cases after 1 warm-up")
    print(f"   {options_line(options)}")
    print(
        f"   p50 {ms(percentile(latencies, 0.5))}, p95 {ms(percentile(latencies, 0.95))}, "
        f"min {ms(min(latencies))}, max {ms(max(latencies))} (status polled every 50 ms)",
        flush=True,
    )
    print(f"   {cpu_line(cpu_before, cpu_after, n, wall).replace('the batch', 'the run (terminations included)')}")


async def concurrent(stack: RehearsalStack, n: int, options: dict[str, Any], profile: Path | None) -> None:
    executor = ProfiledExecutor(64) if profile else None
    worker_options = {**options, "workflow_task_executor": executor} if executor else options
    try:
        main_profiler = None
        if profile:
            from pyinstrument import Profiler

            main_profiler = Profiler(interval=0.001, async_mode="disabled")
        async with bench_worker(stack, REHEARSAL_SETTINGS, **worker_options) as cases:
            await terminate([(await to_waiting(cases, 0.1))[0]])  # warm-up
            if main_profiler:
                main_profiler.start()
            cpu_before = cpu_by_process()
            started = time.perf_counter()
            results = await asyncio.gather(*(to_waiting(cases, 0.5) for _ in range(n)))
            wall = time.perf_counter() - started
            cpu_after = cpu_by_process()
            sessions = [main_profiler.stop()] if main_profiler else []
            await terminate([case for case, _ in results])
        if executor is not None and profile is not None:
            write_profile(profile, sessions + executor.sessions())
    finally:
        if executor is not None:
            executor.shutdown()
    latencies = [seconds for _, seconds in results]
    print(f"b. {n} concurrent refund cases to waiting_approval, rehearsal model, one worker")
    print(f"   {options_line(options)}" + (" + a 64-thread profiled workflow executor" if profile else ""))
    print(
        f"   throughput {n / wall:.2f} cases/s ({n} cases in {wall:.2f} s); latency p50 "
        f"{percentile(latencies, 0.5):.2f} s, p95 {percentile(latencies, 0.95):.2f} s (status polled every 0.5 s)",
        flush=True,
    )
    print(f"   {cpu_line(cpu_before, cpu_after, n, wall)}", flush=True)
    if profile:
        print(f"   profile (event loop + workflow threads, whole batch) written to {profile}", flush=True)


async def floor(stack: RehearsalStack, steps: int, runs: int) -> None:
    """Temporal's own cost per step here: a workflow of ``steps`` sequential no-op activities."""
    task_queue = f"floor-{uuid.uuid4().hex[:8]}"
    seconds = []
    async with Worker(
        stack.client,
        task_queue=task_queue,
        workflows=[FloorWorkflow],
        activities=[floor_noop],
        workflow_runner=workflow_runner(),
    ):
        for run in range(runs + 1):
            started = time.perf_counter()
            await stack.client.execute_workflow(
                FloorWorkflow.run, steps, id=f"floor-{uuid.uuid4().hex[:10]}", task_queue=task_queue
            )
            if run:  # the first run warms up
                seconds.append(time.perf_counter() - started)
    p50 = percentile(seconds, 0.5)
    print(f"g. round-trip floor: a workflow of {steps} sequential no-op activities, same server, {runs} runs")
    print(
        f"   p50 {ms(p50)} ({ms(p50 / steps)} per step: one workflow task and one activity task, nothing in them); "
        f"a refund case reaches waiting_approval after {REFUND_STEPS} activities",
        flush=True,
    )


@asynccontextmanager
async def case_subject(stack: RehearsalStack, options: dict[str, Any]) -> AsyncIterator[Subject]:
    """Refund cases on their own production worker, for the ``shape`` part."""
    async with bench_worker(stack, REHEARSAL_SETTINGS, **options) as cases:

        async def waiting(poll: float) -> tuple[CaseHandle, float]:
            return await to_waiting(cases, poll)

        yield Subject("refund case", waiting, terminate)


async def slow_provider(stack: RehearsalStack, n: int, options: dict[str, Any]) -> None:
    with ScriptedProvider() as provider:
        provider.default_all(slow(1.0))
        async with bench_worker(stack, load_model_settings(provider.env()), **options) as cases:
            await to_completion(cases, DELIVERY)  # warm-up: commerce sessions, model client, sandbox
            warm_up = provider.count()
            alone = await to_completion(cases, DELIVERY)
            per_case = provider.count() - warm_up
            started = time.perf_counter()
            await asyncio.gather(*(to_completion(cases, DELIVERY) for _ in range(n)))
            wall = time.perf_counter() - started
            requests = provider.count() - per_case - warm_up
    print(f"c. {n} concurrent delivery cases to completion, loopback provider answering every request after 1.0 s")
    print(f"   {options_line(options)}")
    print(
        f"   after 1 warm-up case: one case alone {alone:.2f} s ({per_case} model requests); {n} at once {wall:.2f} s "
        f"({requests} requests, {requests / wall:.1f}/s); concurrency ratio {wall / alone:.2f} "
        f"(batch wall / one case alone; 1.0 = no queueing), {n / wall:.2f} cases/s",
        flush=True,
    )


async def approve(stack: RehearsalStack, case: CaseHandle, view: CaseView) -> CaseView:
    assert view.digest is not None, "a case waiting for approval has a digest"
    review = stack.signer.signed_review(
        demo_identity("chen"), case_id=case.case_id, digest=view.digest, decision=Decision.APPROVE.value
    )
    await case.review(review)
    return await case.ended(timeout=TIMEOUT)


async def unqueried_waiting_history(cases: CaseClient) -> HistorySize:
    """A refund case nobody queries, measured once its approval timer starts; then terminated, unpaid.

    A status query that arrives while a workflow task runs local activities makes the worker close that
    task early and record the rest in another (a few more events); this case shows the count without it.
    """
    case = await start(cases, REFUND)
    events: list[HistoryEvent] = []
    try:
        async with asyncio.timeout(TIMEOUT):  # a long poll of the history: no query, no extra workflow task
            async for event in case.workflow.fetch_history_events(wait_new_event=True):
                events.append(event)
                if event.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
                    break
    except TimeoutError:
        raise RuntimeError(f"the unqueried refund case started no approval timer in {TIMEOUT} s") from None
    if not events or events[-1].event_type != EventType.EVENT_TYPE_TIMER_STARTED:
        raise RuntimeError("the unqueried refund case ended without waiting for approval")
    await case.workflow.terminate("benchmark: measured at waiting_approval")
    return history_size(WorkflowHistory(case.workflow.id, events))


async def history(stack: RehearsalStack, options: dict[str, Any]) -> None:
    async with bench_worker(stack, REHEARSAL_SETTINGS, **options) as cases:
        unqueried = await unqueried_waiting_history(cases)
        case = await start(cases, REFUND)
        view = await case.settled(timeout=TIMEOUT, poll_seconds=0.1)  # waiting, its case record written
        if view.status is not CaseStatus.WAITING_APPROVAL:
            raise RuntimeError(f"refund case reached {view.status} ({view.reason})")
        waiting = history_size(await case.workflow.fetch_history())
        final = await approve(stack, case, view)
        if final.status is not CaseStatus.COMPLETED:
            raise RuntimeError(f"approved refund ended {final.status} ({final.reason})")
        completed = history_size(await case.workflow.fetch_history())
    print("d. history of one refund case (rehearsal model); bytes = len(History(events).SerializeToString())")
    print(f"   at waiting_approval, never queried: {unqueried.describe()}")
    print(f"   at waiting_approval, status queried every 0.1 s: {waiting.describe()}")
    print(f"   completed after a signed approval by chen: {completed.describe()}", flush=True)


def worst_case_provider(provider: ScriptedProvider) -> None:
    """Spend every budget: 24 tool calls in 6 turns and a 7th turn without calls (7/7 turns), both drafts
    sent back by the reviewer, and HTTP 500s that Temporal retries, each attempt charged (20/20 requests)."""
    turns = [0]

    def investigate(_: object) -> Reply:
        turns[0] += 1
        turn = turns[0]
        if turn > 6:
            return Reply(content="I have read enough.")
        first = [
            call(ToolName.GET_ORDER, {"order_id": "QH-1001"}, "t1-0"),
            call(ToolName.CALCULATE_REFUND, {"order_id": "QH-1001"}, "t1-1"),
        ]
        searches = [
            call(
                ToolName.SEARCH_KNOWLEDGE,
                {"query": f"refund policy window delivery receipt detail {turn} {k}"},
                f"t{turn}-{k}",
            )
            for k in range(4)
        ]
        return tool_calls(*(first + searches[2:] if turn == 1 else searches))

    revise = json_reply({"verdict": "revise", "problems": ["the answer does not explain the policy it applies"]})
    error = http_error(500)
    provider.script("plan", error, error)
    provider.script("investigate", error, investigate, error, investigate)
    provider.default("investigate", investigate)
    provider.script("compose", error, REHEARSAL, error)
    provider.script("review", error, revise, error)
    provider.default("review", revise)


async def worst(stack: RehearsalStack, options: dict[str, Any]) -> None:
    activity_log = logging.getLogger("temporalio.activity")  # each scripted HTTP 500 logs a traceback
    level = activity_log.level
    activity_log.setLevel(logging.ERROR)
    with ScriptedProvider() as provider:
        worst_case_provider(provider)
        async with bench_worker(stack, load_model_settings(provider.env()), **options) as cases:
            case = await start(cases, REFUND)
            view = await case.ended(timeout=TIMEOUT)
            size = history_size(await case.workflow.fetch_history())
    activity_log.setLevel(level)
    b = view.budgets
    print("e. worst case: a model that spends every budget (scripted loopback provider)")
    print(
        f"   ended {view.status.value}: {view.reason}; model requests {b.model_requests}/{b.max_model_requests}, "
        f"tool calls {b.tool_requests}/{b.max_tool_requests}, turns {b.turns}/{b.max_turns}, "
        f"{provider.count()} provider requests {provider.counts()}"
    )
    print(f"   history: {size.describe()}", flush=True)


async def replay() -> None:
    count, total, slowest, name, failures = await replay_histories()
    folder = f"tests/histories/{current_release().name}/"
    print(f"f. replay of the {count} committed histories in {folder} (production sandboxed runner)")
    if not count:
        print("   none recorded yet for the current release (scripts/record_histories.py)", flush=True)
        return
    print(
        f"   total {total:.2f} s, mean {ms(total / count)} per history, slowest {ms(slowest)} ({name}); "
        f"{failures} replay failures",
        flush=True,
    )


def compile_bytecode() -> None:
    """Compile the project's modules first, as the image's ``pip install`` and ``make test`` do: the
    workflow sandbox imports the workflow module afresh for every run, and with ``PYTHONDONTWRITEBYTECODE``
    set and no bytecode saved it would compile that module's source for every case, which no deployment
    does."""
    skipped = re.compile(r"(^|/)(\.venv|\.state|\.git|\.compat)(/|$)")
    compiled = compileall.compile_dir(ROOT, quiet=1, rx=skipped, workers=0)
    print(f"bytecode: the project's modules compiled first ({'ok' if compiled else 'with errors'})", flush=True)


async def main(args: argparse.Namespace) -> None:
    """Run every part not skipped, in this order, printing each part's figures.

    sequential  refund question (alice, QH-1001) to ``waiting_approval``, one case after another after
                one warm-up case: p50/p95 of start -> the status query first showing waiting_approval
                (polled every 50 ms); each case is terminated once measured and its case record written.
    concurrent  N refund cases started at once on one worker (after one warm-up case): cases reaching
                waiting_approval / wall time of the batch, and p50/p95 latency (status polled every
                0.5 s per case); then all terminated.
    slow        a loopback OpenAI-compatible provider (tests/adversarial/provider.py) answering every
                request as the rehearsal model after 1.0 s: one delivery case alone to completion, then
                N at once; concurrency ratio = batch wall time / the lone case's wall time.
    history     one refund case's history at waiting_approval (its record written) and after chen's
                signed approval (completed): events, protobuf bytes (primary) and JSON characters, the
                largest payload and its event, and which event types and activities carry the bytes.
    worst       a case that spends every budget: 24/24 tool calls over 7/7 turns, 20/20 model requests
                (transient HTTP 500s are retried and charged), both drafts sent back by the reviewer.
    floor       Temporal's own cost per step here (see :func:`floor`).
    replay      every history of the current release (tests/histories/<release>/, releases.json's
                release with commit null) replayed with the production sandboxed runner.
    shape       a refund case beside a no-op workflow of its shape, same server, measured the same way
                (``--sequential`` one after another, then ``--concurrent`` at once): CPU per case by
                process, latency and throughput, and their case/floor ratios (benchmarks/bench_shape.py).

    With ``BENCH_PROFILE_COMMERCE=DIR`` every commerce server runs under cProfile (benchmarks/commerce_profile.py).
    ``--profile`` runs the concurrent part under pyinstrument: the event-loop thread (activities, the
    SDK's Python side, the client) and each workflow-task thread (sandboxed workflow code), combined.
    """
    skip = {part.strip() for part in args.skip.split(",") if part.strip()}
    unknown = skip - set(PARTS)
    if unknown:
        raise SystemExit(f"unknown part(s) to skip: {', '.join(sorted(unknown))}; parts: {', '.join(PARTS)}")
    options = {
        name: value
        for name in ("max_concurrent_activities", "max_concurrent_workflow_tasks", "max_cached_workflows")
        if (value := getattr(args, name)) is not None
    }
    print(machine_line())
    print("one dev server and one in-process worker per part, on this machine; figures from one run", flush=True)
    compile_bytecode()
    with tempfile.TemporaryDirectory() as tmp, profiled_commerce_servers() as commerce_profiles:
        async with rehearsal_stack(Path(tmp)) as stack:
            if "sequential" not in skip:
                await sequential(stack, args.sequential, options)
            if "concurrent" not in skip:
                await concurrent(stack, args.concurrent, options, args.profile)
            if "shape" not in skip:  # before history: it pays QH-1001, then no QH-1001 case waits
                await shape(
                    stack.client, lambda: case_subject(stack, options), args.sequential, args.concurrent, options
                )
            if "slow" not in skip:
                await slow_provider(stack, args.slow_cases, options)
            if "history" not in skip:
                await history(stack, options)
            if "worst" not in skip:
                await worst(stack, options)
            if "floor" not in skip:
                await floor(stack, REFUND_STEPS, 10)
    if "replay" not in skip:
        await replay()
    if commerce_profiles is not None:
        (commerce_profiles / "summary.txt").write_text(summary(commerce_profiles), encoding="utf-8")
        print(f"commerce servers profiled (cProfile): {commerce_profiles}/summary.txt", flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--sequential", type=int, default=30, help="sequential refund cases (default 30)")
    parser.add_argument("--concurrent", type=int, default=50, help="concurrent refund cases (default 50)")
    parser.add_argument("--slow-cases", type=int, default=200, help="concurrent cases, slow provider (default 200)")
    parser.add_argument("--skip", default="", help=f"comma-separated parts to skip: {','.join(PARTS)}")
    parser.add_argument("--profile", type=Path, help="profile the concurrent part to FILE (.html, else text)")
    parser.add_argument("--max-concurrent-activities", type=int, help="worker option (default: temporalio's)")
    parser.add_argument("--max-concurrent-workflow-tasks", type=int, help="worker option (default: temporalio's)")
    parser.add_argument("--max-cached-workflows", type=int, help="worker option (default: temporalio's)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))

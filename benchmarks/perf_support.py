"""Helpers of benchmarks/bench_performance.py: the machine line, percentiles, history sizes, a worker per
part on the benchmark's dev server, replaying the committed histories, and a profiled workflow executor."""

from __future__ import annotations

import json
import math
import os
import platform
import threading
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History, HistoryEvent
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from activities.model.model_settings import ModelSettings
from case_client import CaseClient
from case_history.trail import local_activity, recorded_workflow_id
from case_worker import support_worker
from contracts.payload_codec import CASE_DATA_CONVERTER
from devstack.rehearsal_stack import RehearsalStack
from keystore import directory_location
from tests.payloads.history_payloads import decoded_history, payloads_in
from tests.release_code import current_release
from workflows.sandbox import workflow_runner
from workflows.support_case import SupportCaseWorkflow

WORKER_DEFAULTS = (
    "temporalio defaults for what is unset: 100 workflow-task slots, 100 activity slots, "
    "max_cached_workflows 1000, a 500-thread workflow executor"
)


def machine_line() -> str:
    return (
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}, Python "
        f"{platform.python_version()}, temporalio {version('temporalio')}, "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}"
    )


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (p50 of 30 values is the 15th smallest, p95 the 29th)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


# --- history sizes ---------------------------------------------------------------------------------


def _event_name(event: HistoryEvent, activities: dict[int, str]) -> str:
    """``TYPE #id`` and, for an activity's events, the activity's name."""
    name = f"{EventType.Name(event.event_type).removeprefix('EVENT_TYPE_')} #{event.event_id}"
    which = event.WhichOneof("attributes")
    attributes = getattr(event, which) if which else None
    scheduled = getattr(attributes, "scheduled_event_id", 0) or event.event_id
    return f"{name} ({activities[scheduled]})" if scheduled in activities else name


@dataclass(frozen=True)
class HistorySize:
    events: int
    protobuf_bytes: int
    uncompressed_bytes: int
    """The same history with every compressed payload replaced by its original (as without the codec)."""
    json_chars: int
    largest_payload: int
    largest_payload_event: str
    by_type: list[tuple[str, int, int]]
    """(event type, count, protobuf bytes) of the three types with the most bytes."""
    by_activity: list[tuple[str, int, int]]
    """(activity, calls, bytes of its inputs and results, or of a local one's marker) of the three with the most."""

    def describe(self) -> str:
        top = ", ".join(f"{kind} x{count} {size / 1024:.1f} KiB" for kind, count, size in self.by_type)
        calls = ", ".join(f"{name} x{count} {size / 1024:.1f} KiB" for name, count, size in self.by_activity)
        return (
            f"{self.events} events, {self.protobuf_bytes / 1024:.1f} KiB protobuf "
            f"({self.uncompressed_bytes / 1024:.1f} KiB with its payloads uncompressed; "
            f"{self.json_chars / 1024:.1f} KiB as fetch_history().to_json()); largest payload "
            f"{self.largest_payload / 1024:.1f} KiB in {self.largest_payload_event}\n"
            f"     most bytes by event type: {top}\n     activity input+result payloads: {calls}"
        )


def history_size(history: WorkflowHistory) -> HistorySize:
    events = list(history.events)
    activities = {
        e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
        for e in events
        if e.HasField("activity_task_scheduled_event_attributes")
    }
    local = {e.event_id: marked.activity_type for e in events if (marked := local_activity(e)) is not None}
    activities.update(local)  # a local activity's marker (result, no input) counts under its type
    largest, carrier = 0, "-"
    counts: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    calls: Counter[str] = Counter(activities.values())
    call_bytes: Counter[str] = Counter()
    for event in events:
        kind = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
        counts[kind] += 1
        sizes[kind] += event.ByteSize()
        if event.HasField("activity_task_scheduled_event_attributes"):
            call_bytes[activities[event.event_id]] += event.activity_task_scheduled_event_attributes.input.ByteSize()
        if event.HasField("activity_task_completed_event_attributes"):
            attributes = event.activity_task_completed_event_attributes
            call_bytes[activities.get(attributes.scheduled_event_id, "?")] += attributes.result.ByteSize()
        if event.event_id in local:
            details = event.marker_recorded_event_attributes.details.values()
            call_bytes[local[event.event_id]] += sum(payloads.ByteSize() for payloads in details)
        for payload in payloads_in(event):
            if payload.ByteSize() > largest:
                largest, carrier = payload.ByteSize(), _event_name(event, activities)
    return HistorySize(
        events=len(events),
        protobuf_bytes=len(History(events=events).SerializeToString()),
        uncompressed_bytes=len(History(events=decoded_history(history).events).SerializeToString()),
        json_chars=len(history.to_json()),
        largest_payload=largest,
        largest_payload_event=carrier,
        by_type=[(kind, counts[kind], size) for kind, size in sizes.most_common(3)],
        by_activity=[(name, calls[name], size) for name, size in call_bytes.most_common(3)],
    )


# --- workers and replay ----------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            continue
    return found


def _label(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")
    except OSError:
        return "gone"
    if "commerce_server" in argv:
        return "commerce MCP server (stdio)"
    if argv and Path(argv[0]).name == "temporal" and "start-dev" in argv:
        return "Temporal dev server"
    return Path(argv[0]).name if argv else "?"


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def cpu_by_process() -> dict[str, float]:
    """CPU seconds (user + system) used so far by this process (worker and client) and by every process
    it started, summed by what they are (the dev server, the commerce servers); Linux /proc only."""
    totals: dict[str, float] = {"this process (worker + client)": _cpu_seconds(os.getpid())}
    stack = _children(os.getpid())
    while stack:
        pid = stack.pop()
        label = _label(pid)
        totals[label] = totals.get(label, 0.0) + _cpu_seconds(pid)
        stack += _children(pid)
    return totals


def cpu_line(before: dict[str, float], after: dict[str, float], cases: int, wall: float) -> str:
    """Where the CPU went between two :func:`cpu_by_process` readings, per case and in all."""
    used = {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after}
    parts = [
        f"{name} {seconds:.2f} s ({1000 * seconds / cases:.0f} ms/case)"
        for name, seconds in sorted(used.items(), key=lambda item: -item[1])
        if seconds > 0.005
    ]
    busy = sum(used.values()) / (wall * (os.cpu_count() or 1))
    return f"CPU during the batch: {'; '.join(parts)}; {100 * busy:.0f}% of {os.cpu_count()} cores over {wall:.2f} s"


def options_line(options: dict[str, Any]) -> str:
    shown = {k: v for k, v in options.items() if k != "workflow_task_executor"}
    given = ", ".join(f"{k}={v}" for k, v in shown.items()) or "none given"
    return f"worker options: {given} ({WORKER_DEFAULTS})"


@asynccontextmanager
async def bench_worker(stack: RehearsalStack, settings: ModelSettings, **options: Any) -> AsyncIterator[CaseClient]:
    """One in-process production worker (build_worker) on a fresh task queue of the stack's server, with the
    stack's keys, commerce database and state dir; yields the case client for that queue."""
    task_queue = f"bench-{uuid.uuid4().hex[:8]}"
    async with support_worker(
        stack.client,
        stack.state_dir,
        task_queue=task_queue,
        model_settings=settings,
        directory=directory_location(stack.state_dir, {}),
        **options,
    ):
        yield CaseClient.for_client(stack.client, task_queue=task_queue, issuer=stack.signer.applicant_token)


async def replay_histories() -> tuple[int, float, float, str, int]:
    """Replay the current release's committed histories (tests/histories' manifest: the release whose
    commit is null; older releases replay against their own code, tests/workflows/test_replay.py) with the
    production sandboxed runner: (count, total s, max s, slowest history, failures). Reading and parsing
    the JSON is not timed."""
    replayer = Replayer(
        workflows=[SupportCaseWorkflow], data_converter=CASE_DATA_CONVERTER, workflow_runner=workflow_runner()
    )
    paths = current_release().histories()
    documents = [(p.stem, json.loads(p.read_text(encoding="utf-8"))) for p in paths]
    histories = [WorkflowHistory.from_json(recorded_workflow_id(doc, stem), doc) for stem, doc in documents]
    total, slowest, slowest_name, failures = 0.0, 0.0, "-", 0
    for history in histories:
        started = time.perf_counter()
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        elapsed = time.perf_counter() - started
        total += elapsed
        failures += result.replay_failure is not None
        if elapsed > slowest:
            slowest, slowest_name = elapsed, history.workflow_id
    return len(histories), total, slowest, slowest_name, failures


# --- profiling -------------------------------------------------------------------------------------


class ProfiledExecutor(ThreadPoolExecutor):
    """The workflow-task executor with a pyinstrument profiler on each of its threads (pyinstrument profiles
    one thread per profiler). All threads start at once; :meth:`sessions` stops each on its own thread."""

    def __init__(self, threads: int) -> None:
        from pyinstrument import Profiler

        self._local = threading.local()
        self._lock = threading.Lock()
        self._profilers: list[Profiler] = []
        super().__init__(max_workers=threads, thread_name_prefix="workflow", initializer=self._begin)
        self._on_every_thread(lambda: None)

    def _begin(self) -> None:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001, async_mode="disabled")
        profiler.start()
        self._local.profiler = profiler
        with self._lock:
            self._profilers.append(profiler)

    def _on_every_thread(self, action: Any) -> list[Any]:
        barrier = threading.Barrier(self._max_workers, timeout=30)

        def run() -> Any:
            barrier.wait()  # holds this thread, so each of the tasks runs on a different one
            return action()

        return [future.result() for future in [self.submit(run) for _ in range(self._max_workers)]]

    def sessions(self) -> list[Any]:
        """Each thread's session, only while it ran Temporal's workflow code (not while idle in the pool),
        all under one root "workflow threads"."""
        sessions = []
        for session in self._on_every_thread(lambda: self._local.profiler.stop()):
            session.frame_records = [
                (["workflow threads\x00<thread>\x000", *stack[1:]], seconds)
                for stack, seconds in session.frame_records
                if any("temporalio" in frame for frame in stack)
            ]
            session.duration = sum(seconds for _, seconds in session.frame_records)
            session.sample_count = len(session.frame_records)
            session.cpu_time = 0.0  # each thread's profiler read the process's CPU time: count it once
            if session.sample_count:
                sessions.append(session)
        return sessions


def write_profile(path: Path, sessions: list[Any]) -> None:
    """Combine the sessions (event-loop thread and workflow threads) and write HTML (``.html``) or text."""
    from pyinstrument.renderers import ConsoleRenderer, HTMLRenderer
    from pyinstrument.session import Session

    combined = sessions[0]
    for session in sessions[1:]:
        combined = Session.combine(combined, session)
    if path.suffix == ".html":
        path.write_text(HTMLRenderer().render(combined), encoding="utf-8")
    else:
        path.write_text(ConsoleRenderer(unicode=True, color=False, short_mode=False).render(combined), encoding="utf-8")

"""Helpers for the fault tests: real worker processes, their process trees, the case and its history.

A :class:`WorkerProcess` is ``python worker.py`` (or the test-only ``paused_worker.py``) in its own
process group, polling its own task queue on the given Temporal server with its own state dir. The
commerce MCP servers it launches over stdio run in process groups of their own (the MCP SDK starts
them with a new session), so they are found through ``/proc/<pid>/task/*/children`` and remembered,
and every cleanup kills them by pid as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHandle

from case_client import TemporalTarget
from case_client import connect as connect_to
from case_history.trail import decode_payload, local_activity
from commerce_server.db import make_engine
from commerce_server.seed import seed_fixture
from contracts.case import TERMINAL_STATUSES, CaseStatus, CaseView, Decision
from contracts.credentials import SignedReview
from contracts.errors import TransientError
from tests.case_world import CaseWorld
from tests.credentials_support import install_signing_keys, signed_review

PROJECT_ROOT = Path(__file__).resolve().parents[2]
WORKER_SCRIPT = PROJECT_ROOT / "worker.py"
PAUSED_WORKER_SCRIPT = Path(__file__).with_name("paused_worker.py")
READY_LINE = "worker: polling task queue"
REFUND_QUESTION = "Please refund QH-1001 and explain the amount and the policy"

# Variables that would point the worker elsewhere than the test wants (a real provider, another
# database, queue or state dir); the workers under test always use the rehearsal model.
_FOREIGN_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SUPPORT_MODEL",
    "DEEPSEEK_API_KEY",
    "DEEPSEEK_MODEL",
    "COMMERCE_DATABASE_URL",
    "SUPPORT_TASK_QUEUE",
    "SUPPORT_STATE_DIR",
    "TEMPORAL_NAMESPACE",
)


def approval(reviewer: str, case_id: str, digest: str, decision: Decision = Decision.APPROVE) -> SignedReview:
    """``reviewer``'s own signed decision on the proposal ``digest`` of case ``case_id`` (the view's
    ``case_id``, without the ``case-`` prefix of the workflow id)."""
    return signed_review(reviewer, case_id, digest, decision)


async def wait_until(predicate: Callable[[], Any], what: str, timeout: float = 60.0, interval: float = 0.1) -> Any:
    """Poll ``predicate`` (plain or async) until it returns something truthy; fail the test with ``what``
    on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(interval)


async def connect(address: str) -> Client:
    """A client with the pydantic data converter, retried while a fresh dev server warms up."""
    for _ in range(100):
        try:
            return await connect_to(TemporalTarget(address=address))
        except TransientError:
            await asyncio.sleep(0.2)
    raise RuntimeError(f"Temporal dev server at {address} never accepted a client")


# --- processes ----------------------------------------------------------------------------------


def children_of(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                found += [int(x) for x in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return found


def descendants_of(pid: int) -> list[int]:
    result: list[int] = []
    stack = children_of(pid)
    while stack:
        child = stack.pop()
        result.append(child)
        stack += children_of(child)
    return result


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] != "Z"


def bytes_read(pid: int) -> int:
    """``rchar`` of ``pid``: every byte it has read so far (pipes included)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError(f"no rchar for {pid}")


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (every process here starts its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


@dataclass
class WorkerProcess:
    process: subprocess.Popen
    log_path: Path
    task_queue: str
    seen: set[int] = field(default_factory=set)

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def exited(self) -> bool:
        return self.process.poll() is not None

    async def ready(self, timeout: float = 60.0) -> WorkerProcess:
        def check() -> bool:
            if self.exited():
                raise AssertionError(f"worker exited with {self.process.returncode}:\n{self.log()[-3000:]}")
            return READY_LINE in self.log()

        await wait_until(check, f"worker {self.pid} to poll {self.task_queue}")
        return self

    def commerce_servers(self, profile: str = "alice") -> list[int]:
        """Live ``python -m commerce_server --profile <profile>`` processes started by this worker."""
        found = []
        for pid in descendants_of(self.pid):
            self.seen.add(pid)
            args = cmdline(pid)
            if "commerce_server" in args and profile in args and alive(pid):
                found.append(pid)
        return found

    def sigkill(self) -> None:
        """SIGKILL the worker's process group (the fault); its commerce servers are remembered."""
        self.commerce_servers()
        kill_group(self.pid)
        self.process.wait(timeout=30)

    def cleanup(self) -> None:
        with contextlib.suppress(Exception):
            self.commerce_servers()
        kill_group(self.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)
        for pid in self.seen:
            kill_group(pid)


def worker_env(address: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_ENV}
    # SUPPORT_LOG_LEVEL=INFO: the fault tests read the per-activity log lines (execute_refund case=...)
    # SUPPORT_SET_CURRENT_VERSION=1: the stack routes new cases to the build it runs (docs/upgrades.md)
    env.update(
        {
            "TEMPORAL_ADDRESS": address,
            "PYTHONUNBUFFERED": "1",
            "SUPPORT_LOG_LEVEL": "INFO",
            "SUPPORT_SET_CURRENT_VERSION": "1",
            **extra,
        }
    )
    return env


def spawn_worker(
    address: str,
    state_dir: Path,
    task_queue: str,
    *,
    name: str,
    script: Path = WORKER_SCRIPT,
    env: dict[str, str] | None = None,
    cwd: Path = PROJECT_ROOT,
) -> WorkerProcess:
    """Start ``script`` (worker.py or the paused launcher) in a new process group; output to a log.

    ``cwd`` is this checkout unless a test runs another tree's worker (an earlier version of the
    project, ``tests/deploy_upgrade``): then it is that tree, as is the script's folder."""
    log_path = state_dir.parent / f"{name}.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, str(script), "--state-dir", str(state_dir), "--task-queue", task_queue],
            cwd=cwd,
            env=worker_env(address, **(env or {})),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return WorkerProcess(process, log_path, task_queue)


# --- the case, the commerce database and the history ---------------------------------------------


class FaultWorld(CaseWorld):
    """A :class:`CaseWorld` whose worker may be a separate process (or several, one after another)."""

    @classmethod
    def create(cls, client: Client, root: Path) -> FaultWorld:
        """A seeded commerce database under ``root/state`` and a fresh task queue; no worker yet. The
        state dir holds the test issuer and reviewer keys, so ``starter.py`` run on it signs as the tests do."""
        state_dir = root / "state"
        state_dir.mkdir(parents=True, exist_ok=True)
        install_signing_keys(state_dir)
        engine = make_engine(f"sqlite:///{state_dir / 'commerce.db'}")
        seed_fixture(engine)
        return cls(client, state_dir, f"support-faults-{uuid.uuid4().hex[:8]}", engine)

    async def view(self, handle: WorkflowHandle) -> CaseView:
        return await self.cases.open(handle.id).status()

    async def waiting_for_approval(self, handle: WorkflowHandle) -> CaseView:
        view = await self.settled(handle, timeout=90)
        assert view.status is CaseStatus.WAITING_APPROVAL, (view.status, view.reason)
        assert view.proposal is not None and view.digest is not None
        return view

    async def result(self, handle: WorkflowHandle, timeout: float = 120) -> CaseView:
        view = await self.cases.open(handle.id).ended(timeout=timeout)
        assert view.status in TERMINAL_STATUSES
        return view


@dataclass
class ActivityRun:
    """One scheduled activity and its final attempt, read from the workflow history."""

    name: str
    tool: str | None
    arguments: dict[str, str] | None
    attempt: int | None
    last_failure: str
    outcome: str | None
    started_at: datetime | None = None
    """When the final attempt started (server time)."""
    worker: str = ""
    """The identity of the worker that ran the final attempt (of a local activity: the worker that
    completed the workflow task recording its marker)."""
    local: bool = False
    """A local activity (one ``MarkerRecorded`` event): its attempts ran inside a workflow task."""


async def activity_runs(handle: WorkflowHandle) -> list[ActivityRun]:
    """Every activity the workflow ran, regular or local, with the attempt that finished it.

    Temporal records the retries of one scheduled activity server-side: the history holds one
    ``ActivityTaskScheduled``, then (when it finished) one ``ActivityTaskStarted`` carrying the final
    attempt number and the previous attempt's failure, then the completion. A local activity is one
    ``MarkerRecorded`` event with its final attempt and result (never its input): a tool's arguments
    are those of the model's proposed call with the observation's call id.
    """
    runs: dict[int, ActivityRun] = {}
    proposed: dict[str, dict[str, str]] = {}
    last_task_worker = ""
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_task_completed_event_attributes"):
            last_task_worker = event.workflow_task_completed_event_attributes.identity
        elif (local := local_activity(event)) is not None:
            observation = _plain(local.result)
            is_tool = local.activity_type == "run_investigation_tool"
            tool = observation.get("name") if is_tool else None
            runs[event.event_id] = ActivityRun(
                local.activity_type,
                tool,
                proposed.get(observation.get("call_id", "")) if tool else None,
                local.attempt,
                local.failure.message if local.failure is not None else "",
                local.outcome,
                event.event_time.ToDatetime(tzinfo=UTC),
                last_task_worker,
                local=True,
            )
        elif event.HasField("activity_task_scheduled_event_attributes"):
            attrs = event.activity_task_scheduled_event_attributes
            payload: dict[str, Any] = {}
            if attrs.input.payloads:
                with contextlib.suppress(ValueError):
                    payload = json.loads(attrs.input.payloads[0].data)
            tool = payload.get("name") if attrs.activity_type.name == "run_investigation_tool" else None
            runs[event.event_id] = ActivityRun(
                attrs.activity_type.name, tool, payload.get("arguments") if tool else None, None, "", None
            )
        elif event.HasField("activity_task_started_event_attributes"):
            started = event.activity_task_started_event_attributes
            run = runs[started.scheduled_event_id]
            run.attempt = started.attempt
            run.last_failure = started.last_failure.message if started.HasField("last_failure") else ""
            run.started_at = event.event_time.ToDatetime(tzinfo=UTC)
            run.worker = started.identity
        # ``attributes`` is a oneof: at most one of these is set on an event.
        elif event.HasField("activity_task_completed_event_attributes"):
            completed = event.activity_task_completed_event_attributes
            runs[completed.scheduled_event_id].outcome = "completed"
            if runs[completed.scheduled_event_id].name == "investigate_turn" and completed.result.payloads:
                for call in _plain(completed.result.payloads[0]).get("calls") or []:
                    arguments = call.get("arguments") or {}
                    proposed[call.get("call_id", "")] = {key: str(value) for key, value in arguments.items()}
        elif event.HasField("activity_task_failed_event_attributes"):
            runs[event.activity_task_failed_event_attributes.scheduled_event_id].outcome = "failed"
        elif event.HasField("activity_task_timed_out_event_attributes"):
            runs[event.activity_task_timed_out_event_attributes.scheduled_event_id].outcome = "timed_out"
        elif event.HasField("activity_task_canceled_event_attributes"):
            runs[event.activity_task_canceled_event_attributes.scheduled_event_id].outcome = "canceled"
    return list(runs.values())


def _plain(payload: Payload | None) -> dict[str, Any]:
    """A JSON object payload as a dict (through the history reader's decoding), else empty."""
    decoded = decode_payload(payload, dict[str, Any]).value if payload is not None else None
    return decoded if isinstance(decoded, dict) else {}


def scheduled_counts(runs: list[ActivityRun]) -> Counter[str]:
    return Counter(run.tool or run.name for run in runs)

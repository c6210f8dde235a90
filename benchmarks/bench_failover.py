"""Benchmark: seconds from a worker's SIGKILL to the case's next event on another worker (prints figures).

    .venv/bin/python benchmarks/bench_failover.py [ROUNDS]

Activities heartbeat with an 8 s heartbeat timeout and retry after 1 s; the timeout runs from the last
heartbeat before the kill, so the figure stays at or under about 9 s (4.5-8.4 s seen on 2 cores).
Without heartbeats it would be the start-to-close timeout (31-33 s for settlement, ~61 s for a model
call). What one round does: :func:`one_round`.
"""

from __future__ import annotations

import asyncio
import os
import platform
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from temporalio.api.enums.v1 import EventType  # noqa: E402

from contracts.names import ActivityName  # noqa: E402
from devstack.servers import start_dev_server  # noqa: E402
from tests.credentials_support import use_test_keys  # noqa: E402
from tests.faults.fault_support import (  # noqa: E402
    PAUSED_WORKER_SCRIPT,
    REFUND_QUESTION,
    ActivityRun,
    FaultWorld,
    activity_runs,
    approval,
    connect,
    spawn_worker,
    wait_until,
)

PAUSES = {"model call (compose)": {"FAULT_PAUSE_IN_MODEL": "compose"}, "settlement": {"FAULT_PAUSE_BEFORE_SETTLE": "1"}}
ACTIVITY = {"model call (compose)": ActivityName.COMPOSE_ANSWER, "settlement": ActivityName.EXECUTE_REFUND}


async def first_event_after(handle, moment: datetime) -> tuple[float, str]:
    """Seconds from ``moment`` to the first history event recorded after it, and that event's type."""
    async for event in handle.fetch_history_events():
        at = event.event_time.ToDatetime(tzinfo=UTC)
        if at > moment:
            return (at - moment).total_seconds(), EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
    raise AssertionError("no event after the kill")


async def finished_run(handle, activity: str, timeout: float = 120) -> ActivityRun:
    """The run of ``activity`` once the history shows it finished (its final attempt recorded)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        runs = [r for r in await activity_runs(handle) if r.name == activity and r.outcome is not None]
        if runs:
            return runs[0]
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{activity} did not finish within {timeout:.0f}s of the kill")
        await asyncio.sleep(0.2)


async def one_round(address: str, root: Path, where: str) -> tuple[float, str]:
    """One kill and what followed it: (seconds from the kill to the next event, that event).

    A throwaway case on the test suite's local stack (its demo keys sign the applicant token and the
    approval, as in tests/credentials_support.py): a dev server, the fault tests' ``paused_worker.py``
    launcher (the real worker with one pause) holding a model request or a settlement, and a second
    plain ``worker.py`` polling the same task queue. It SIGKILLs the first worker and reads, from the
    workflow history, the first event recorded after the kill and its time: the killed attempt's retry
    starting on the second worker (``ActivityTaskStarted``, attempt 2, the second worker's identity).
    """
    client = await connect(address)
    world = FaultWorld.create(client, root)
    marker = root / "paused.json"
    env = {**PAUSES[where], "FAULT_MARKER": str(marker)}
    paused = spawn_worker(
        address, world.state_dir, world.task_queue, name="paused", script=PAUSED_WORKER_SCRIPT, env=env
    )
    second = None
    try:
        await paused.ready()
        handle = await world.start(REFUND_QUESTION)
        if where == "settlement":
            view = await world.waiting_for_approval(handle)
            assert view.digest is not None, "a case waiting for approval has a digest"
            await world.cases.open(handle.id).signal_review(approval("chen", view.case_id, view.digest))
        await wait_until(marker.exists, f"the first worker to pause in the {where}", timeout=90)
        second = await spawn_worker(address, world.state_dir, world.task_queue, name="second").ready()
        killed_at = datetime.now(UTC)
        paused.sigkill()
        # read the history, not the case's status query: a query can wait on the killed worker's sticky queue
        run = await finished_run(handle, ACTIVITY[where])
        assert run.attempt == 2 and run.started_at is not None, "the killed attempt was retried once"
        assert run.worker != "" and str(second.pid) in run.worker, (run.worker, second.pid)
        seconds, kind = await first_event_after(handle, killed_at)
        assert kind == "ACTIVITY_TASK_STARTED", f"the next event after the kill was {kind}"
        return seconds, kind
    finally:
        paused.cleanup()
        if second is not None:
            second.cleanup()
        world.engine.dispose()


async def main(rounds: int) -> None:
    use_test_keys()  # demo keys, named in the environment before any worker or commerce server is spawned
    with tempfile.TemporaryDirectory() as tmp:
        server = start_dev_server(Path(tmp) / "temporal")
        try:
            print(
                f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}, Python "
                f"{platform.python_version()}"
            )
            print(f"worker SIGKILL -> the case's next event, on a second worker, {rounds} kills each")
            for where in PAUSES:
                rounds_seen = [
                    await one_round(server.address, Path(tmp) / f"{where[:5]}-{i}", where) for i in range(rounds)
                ]
                figures = [seconds for seconds, _ in rounds_seen]
                print(
                    f"  killed in the {where}: median {statistics.median(figures):.1f}s, max {max(figures):.1f}s "
                    f"({', '.join(f'{f:.1f}' for f in figures)}); next event: {rounds_seen[0][1]}, attempt 2",
                    flush=True,
                )
        finally:
            server.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))

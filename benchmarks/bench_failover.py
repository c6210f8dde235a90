"""Benchmark: seconds from a worker's SIGKILL to its activity restarting on another worker (prints figures).

    .venv/bin/python benchmarks/bench_failover.py [ROUNDS]

Each round starts a throwaway case on the test suite's local stack (its demo keys sign the applicant
token and the approval, as in tests/credentials_support.py): a dev server, the fault tests'
``paused_worker.py`` launcher (the real worker with one pause) holding a model request or a settlement,
and a second plain ``worker.py`` polling the same task queue. It SIGKILLs the first worker and reads the
retry's start time from the workflow history. Activities heartbeat with an 8 s heartbeat timeout and
retry after 1 s, so the figure should stay near 9-10 s; before heartbeats it was the start-to-close
timeout (31-33 s for settlement, ~61 s for a model call).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from temporal_dev import start_dev_server  # noqa: E402
from tests.credentials_support import use_test_keys  # noqa: E402
from tests.faults.fault_support import (  # noqa: E402
    PAUSED_WORKER_SCRIPT,
    REFUND_QUESTION,
    FaultWorld,
    activity_runs,
    approval,
    connect,
    spawn_worker,
    wait_until,
)

PAUSES = {"model call (compose)": {"FAULT_PAUSE_IN_MODEL": "compose"}, "settlement": {"FAULT_PAUSE_BEFORE_SETTLE": "1"}}
ACTIVITY = {"model call (compose)": "compose_answer", "settlement": "execute_refund"}


async def one_round(address: str, root: Path, where: str) -> float:
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
        if where == "settlement":
            await world.result(handle)
        else:
            await world.waiting_for_approval(handle)
        [run] = [r for r in await activity_runs(handle) if r.name == ACTIVITY[where]]
        assert run.attempt == 2 and run.started_at is not None
        return (run.started_at - killed_at).total_seconds()
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
            print(f"worker SIGKILL -> activity restarted on a second worker, {rounds} rounds each")
            for where in PAUSES:
                figures = [
                    await one_round(server.address, Path(tmp) / f"{where[:5]}-{i}", where) for i in range(rounds)
                ]
                print(
                    f"  {where}: median {statistics.median(figures):.1f}s, max {max(figures):.1f}s "
                    f"({', '.join(f'{f:.1f}' for f in figures)})",
                    flush=True,
                )
        finally:
            server.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))

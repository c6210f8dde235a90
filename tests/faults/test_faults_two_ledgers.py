"""Two workers on one task queue with separate commerce databases (ledgers) never pay an order twice.

A proposal binds the ledger it was quoted on: a settlement that reaches the other worker's ledger is
refused (ledger_mismatch) and nothing is paid anywhere. worker.py also refuses to join a task queue
whose live workers pay on another ledger.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from fault_support import PROJECT_ROOT, REFUND_QUESTION, FaultWorld, approval, worker_env
from sqlmodel import Session, select

from activities.model_settings import load_model_settings
from activities.worker_setup import build_worker
from commerce_server.db import OrderRow, RefundRow, make_engine, read_ledger_id
from commerce_server.seed import seed_fixture
from contracts.case import CaseStatus

pytestmark = pytest.mark.slow


def _ledger(tmp_path: Path, name: str) -> tuple[Path, object]:
    state_dir = tmp_path / name
    state_dir.mkdir()
    engine = make_engine(f"sqlite:///{state_dir / 'commerce.db'}")
    seed_fixture(engine)
    return state_dir, engine


async def test_a_proposal_quoted_on_one_ledger_is_refused_on_another(fault_world: FaultWorld, tmp_path: Path) -> None:
    ledger_a = read_ledger_id(fault_world.engine)
    worker_a, cleanup_a = build_worker(
        fault_world.client,
        fault_world.state_dir,
        task_queue=fault_world.task_queue,
        model_settings=load_model_settings({}),
    )
    async with worker_a:
        handle = await fault_world.start(REFUND_QUESTION)
        waiting = await fault_world.waiting_for_approval(handle)
    await cleanup_a()
    assert waiting.proposal.ledger_id == ledger_a

    # The second worker polls the same task queue but keeps its own SQLite ledger.
    state_b, engine_b = _ledger(tmp_path, "worker-b")
    assert read_ledger_id(engine_b) != ledger_a
    worker_b, cleanup_b = build_worker(
        fault_world.client, state_b, task_queue=fault_world.task_queue, model_settings=load_model_settings({})
    )
    async with worker_b:
        await handle.signal("review", approval("chen", waiting.digest))
        final = await fault_world.result(handle)
    await cleanup_b()

    assert final.status is CaseStatus.NEEDS_HUMAN and final.reason == "settlement_refused:ledger_mismatch"
    assert final.receipt is None
    for engine in (fault_world.engine, engine_b):
        with Session(engine) as session:
            assert session.exec(select(RefundRow)).all() == []
            assert session.exec(select(OrderRow).where(OrderRow.order_id == "QH-1001")).one().refunded_cents == 0
    engine_b.dispose()


async def test_a_worker_with_another_ledger_refuses_to_join_the_task_queue(temporal_server, tmp_path: Path) -> None:
    queue = f"ledgers-{uuid.uuid4().hex[:8]}"
    state_a, engine_a = _ledger(tmp_path, "a")
    state_b, engine_b = _ledger(tmp_path, "b")
    env = worker_env(temporal_server.address, SUPPORT_TASK_QUEUE=queue)
    first = subprocess.Popen(
        [sys.executable, str(PROJECT_ROOT / "worker.py"), "--state-dir", str(state_a)],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert first.stdout is not None
        for _ in range(200):
            line = await asyncio.to_thread(first.stdout.readline)
            if "polling task queue" in line or not line:
                break
        assert "polling task queue" in line, line
        command = [sys.executable, str(PROJECT_ROOT / "worker.py"), "--state-dir"]
        second = await asyncio.to_thread(
            subprocess.run,
            [*command, str(state_b)],
            cwd=PROJECT_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        first.terminate()
        first.wait(timeout=30)
    assert second.returncode == 2, second.stdout + second.stderr
    [line] = second.stderr.strip().splitlines()
    assert line.startswith("worker: configuration error: another_ledger:")
    assert read_ledger_id(engine_a) in line and read_ledger_id(engine_b) in line
    engine_a.dispose()
    engine_b.dispose()

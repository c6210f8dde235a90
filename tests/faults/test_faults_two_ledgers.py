"""Two workers on one task queue with separate commerce databases (ledgers) never pay an order twice.

A proposal binds the ledger it was quoted on: a settlement that reaches the other worker's ledger is
refused (ledger_mismatch) and nothing is paid anywhere. worker.py also refuses to join a task queue
whose live workers pay on another ledger.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from activities.model.model_settings import load_model_settings
from case_worker import build_worker
from commerce_server.db import OrderRow, RefundRow, make_engine, read_ledger_id
from commerce_server.seed import seed_fixture
from contracts.case import CaseStatus
from tests.faults.fault_support import REFUND_QUESTION, FaultWorld, approval, wait_until

pytestmark = pytest.mark.slow


def _ledger(tmp_path: Path, name: str) -> tuple[Path, Engine]:
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
    assert waiting.proposal is not None and waiting.proposal.ledger_id == ledger_a
    assert waiting.digest is not None

    # The second worker polls the same task queue but keeps its own SQLite ledger.
    state_b, engine_b = _ledger(tmp_path, "worker-b")
    assert read_ledger_id(engine_b) != ledger_a
    worker_b, cleanup_b = build_worker(
        fault_world.client, state_b, task_queue=fault_world.task_queue, model_settings=load_model_settings({})
    )
    async with worker_b:
        await handle.signal("review", approval("chen", waiting.case_id, waiting.digest))
        final = await fault_world.result(handle)
    await cleanup_b()

    assert final.status is CaseStatus.NEEDS_HUMAN and final.reason == "settlement_refused:ledger_mismatch"
    assert final.receipt is None
    for engine in (fault_world.engine, engine_b):
        with Session(engine) as session:
            assert session.exec(select(RefundRow)).all() == []
            assert session.exec(select(OrderRow).where(OrderRow.order_id == "QH-1001")).one().refunded_cents == 0
    engine_b.dispose()


async def test_a_worker_with_another_ledger_refuses_to_join_the_task_queue(
    temporal_client, temporal_server, workers, tmp_path: Path
) -> None:
    world_a = FaultWorld.create(temporal_client, tmp_path / "a")
    world_b = dataclasses.replace(FaultWorld.create(temporal_client, tmp_path / "b"), task_queue=world_a.task_queue)
    await workers(temporal_server.address, world_a, "worker-a").ready()

    second = workers(temporal_server.address, world_b, "worker-b")
    await wait_until(second.exited, "the worker with the other ledger to exit")

    assert second.process.returncode == 2, second.log()
    refusals = [line for line in second.log().splitlines() if "configuration error" in line]
    assert len(refusals) == 1 and refusals[0].startswith("worker: configuration error: another_ledger:")
    assert read_ledger_id(world_a.engine) in refusals[0] and read_ledger_id(world_b.engine) in refusals[0]
    assert "polling task queue" not in second.log()
    world_b.engine.dispose()

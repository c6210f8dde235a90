"""τ²-bench retail on a fixed subset of its tasks (docs/evaluation.md). τ²-bench is installed into its own
environment (``.tau2/venv``, or ``TAU2_VENV``) on first use; the suite runs on one worker (tests/parallel.py).

Faithfulness: the gold calls, sent to our retail server over MCP stdio (each write proposed, confirmed by
the customer, executed), leave a database that τ²'s own hash finds equal to τ²'s own environment after
the same calls, up to the two listed differences. Mutations: policy-breaking variants of the gold writes
are each refused with nothing written."""

from __future__ import annotations

import asyncio
import shutil
from collections import Counter
from pathlib import Path

import pytest

from contracts.retail import RetailWrite
from tau2_eval.environment import Tau2, ensure_installed, venv_path
from tau2_eval.faithfulness import Verdict, check_tasks
from tau2_eval.mutations import MutationKind, domain_digest, mutate_tasks
from tau2_eval.world import build_world, prepare, retail_session

pytestmark = pytest.mark.slow

SUBSET = ("0", "3", "16", "18", "20", "22", "40", "41", "50", "105")
"""Fixed: exchanges (18: for the same variant), item changes, cancellations with a return, order and
default address changes, a payment change, a transfer, and a gold write τ²'s own tool refuses (105)."""
EXPECTED = {
    "3": Verdict.EQUAL_IN_CENTS,
    "41": Verdict.EQUAL_IN_CENTS,
    "20": Verdict.EQUAL_WITH_OWN_PRICES,
}
"""The listed differences (docs/evaluation.md): τ²'s item change keeps float residue in the price
difference it records, and prices every changed line by the last new variant. Every other task: equal."""


@pytest.fixture(scope="module")
def tau2() -> Tau2:
    return Tau2(ensure_installed(venv_path()))


def test_gold_calls_leave_the_database_tau2_leaves(tau2: Tau2, tmp_path: Path) -> None:
    runs = asyncio.run(check_tasks(tau2, prepare(tau2, list(SUBSET), tmp_path), tmp_path, progress=lambda _line: None))
    by_task = {run.task_id: run for run in runs}
    assert list(by_task) == list(SUBSET)
    for task_id, run in by_task.items():
        expected = EXPECTED.get(task_id, Verdict.EQUAL)
        assert run.verdict is expected, f"task {task_id}: {run.verdict.value}, refused here {run.refused}"
        assert len(run.refused) == len(run.tau2_failed), f"task {task_id}: {run.refused} vs τ² {run.tau2_failed}"
    assert sum(run.executed for run in runs) >= 12, "the subset's writes were executed, not only read"
    assert by_task["105"].refused == ["exchange_delivered_order_items: action_not_eligible"]
    assert by_task["105"].tau2_failed, "τ²'s own exchange tool refuses it too (too little on the gift card)"
    assert by_task["50"].executed == 0 and by_task["50"].calls == 1


def test_every_policy_breaking_variant_is_refused_with_nothing_written(tau2: Tau2, tmp_path: Path) -> None:
    outcomes = asyncio.run(mutate_tasks(prepare(tau2, list(SUBSET), tmp_path), tmp_path, progress=lambda _l: None))
    not_held = [outcome for outcome in outcomes if not outcome.held]
    assert not not_held, not_held
    sent = Counter(outcome.kind for outcome in outcomes)
    assert set(sent) == set(MutationKind), f"every kind of variant was tried: {sent}"
    codes = {outcome.kind: outcome.code for outcome in outcomes}
    assert codes[MutationKind.OTHER_CUSTOMERS_ORDER] == "order_not_accessible"
    assert codes[MutationKind.CHANGED_AFTER_CONFIRMATION] == "confirmation_invalid"
    assert codes[MutationKind.NO_CONFIRMATION] == "confirmation_required"


def test_the_nothing_written_check_sees_a_write(tau2: Tau2, tmp_path: Path) -> None:
    """The digest the mutations compare is not blind: a confirmed gold write changes it."""
    world = build_world(tmp_path, Path(tau2.paths()["db"]))
    database = tmp_path / "task.db"
    shutil.copyfile(world.template, database)
    before = domain_digest(database)

    async def cancel() -> None:
        async with retail_session(world, database, "yusuf_rossi_9620", "tau2-digest") as session:
            order = next(
                o for o in world.data.users["yusuf_rossi_9620"].orders if world.data.orders[o].status == "pending"
            )
            arguments = {"order_id": order, "reason": "no longer needed"}
            _, executed = await session.confirmed(RetailWrite.CANCEL_PENDING_ORDER, arguments)
            assert executed is not None and not executed.is_error

    asyncio.run(cancel())
    assert domain_digest(database) != before

"""Faithfulness on a fixed subset of τ²-bench's retail tasks: their gold calls, sent to our retail server
over MCP stdio (each write proposed, confirmed by the customer, executed), leave a database that τ²'s own
hash finds equal to τ²'s own environment after the same calls, up to the one difference we keep (money
in exact cents where τ²'s item change leaves float residue). τ²-bench is installed into its own
environment (``.tau2/venv``, or ``TAU2_VENV``) on first use; docs/evaluation.md."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tau2_eval.environment import Tau2, ensure_installed, venv_path
from tau2_eval.faithfulness import Verdict, check_tasks

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


def test_gold_calls_leave_the_database_tau2_leaves(tmp_path: Path) -> None:
    tau2 = Tau2(ensure_installed(venv_path()))
    runs = asyncio.run(check_tasks(tau2, list(SUBSET), tmp_path, progress=lambda _line: None))
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

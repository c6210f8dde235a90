"""Faithfulness: τ²-bench's gold calls of each task, sent to our retail server over MCP stdio (each write
proposed, confirmed by the customer with a signed confirmation over its digest, then executed), leave a
database that, exported to τ²'s format, τ²'s own hash finds equal to its own environment after the
same calls. A difference is reported per task; where our rule is deliberately stricter than τ²'s tool
the refused call is named (docs/evaluation.md lists them).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from commerce_server.db import make_engine
from contracts.retail import RetailTool
from retail_server.records import export_database
from tau2_eval.environment import Tau2
from tau2_eval.world import Prepared, RetailSession, World, customer_of, refusal_code, retail_session


class Verdict(StrEnum):
    """How our database after a task's gold calls compares with τ²'s own, by τ²'s hash."""

    EQUAL = "equal"
    EQUAL_IN_CENTS = "equal in cents"
    """Equal once τ²'s float residue (0.04999999999999716 for 0.05) is rounded: our money is exact cents."""
    EQUAL_WITH_OWN_PRICES = "equal with each line's own price"
    """Equal once every line τ²'s item change changed takes its own variant's price and options."""
    DIFFERENT = "different"


@dataclass
class TaskRun:
    """One task's gold calls on our server, and the two hashes."""

    task_id: str
    customer: str
    calls: int = 0
    executed: int = 0
    refused: list[str] = field(default_factory=list)
    """Gold calls our server refused: ``name: code``."""
    tau2_failed: list[str] = field(default_factory=list)
    """Gold calls τ²'s own tools refused (its evaluator logs them and goes on)."""
    ours: str = ""
    gold: str = ""
    gold_in_cents: str = ""
    """τ²'s hash of its own database after the gold calls with every amount rounded to cents."""
    gold_own_prices: str = ""
    """The same, with every line τ²'s item change changed priced by its own variant (τ² prices them all
    by the last one)."""

    @property
    def verdict(self) -> Verdict:
        if self.ours == self.gold:
            return Verdict.EQUAL
        if self.ours == self.gold_in_cents:
            return Verdict.EQUAL_IN_CENTS
        if self.ours == self.gold_own_prices:
            return Verdict.EQUAL_WITH_OWN_PRICES
        return Verdict.DIFFERENT


async def run_task(world: World, task: dict[str, Any], gold: dict[str, Any], work_dir: Path) -> TaskRun:
    """Send ``task``'s gold calls to a fresh copy of the database, then export it for τ²'s hash."""
    task_id = str(task["id"])
    customer = customer_of(task_id, gold)
    run = TaskRun(
        task_id=task_id,
        customer=customer,
        gold=gold["hash"],
        gold_in_cents=gold["hash_in_cents"],
        gold_own_prices=gold["hash_own_prices"],
    )
    run.tau2_failed = [f"{failure['action_id']}: {failure['error']}" for failure in gold["failed"]]
    database = work_dir / f"task-{task_id}.db"
    shutil.copyfile(world.template, database)
    async with retail_session(world, database, customer, f"tau2-retail-{task_id}") as session:
        for action in (task.get("evaluation_criteria") or {}).get("actions") or []:
            run.calls += 1
            await _gold_call(session, run, action)
    exported = work_dir / f"task-{task_id}.json"
    engine = make_engine(f"sqlite:///{database}")
    exported.write_text(export_database(engine).model_dump_json(), encoding="utf-8")
    engine.dispose()
    return run


async def _gold_call(session: RetailSession, run: TaskRun, action: dict[str, Any]) -> None:
    name = action["name"]
    arguments = action.get("arguments") or {}
    if RetailTool(name).write is None:
        result = await session.call(name, arguments)
        if result.is_error:
            run.refused.append(f"{name}: {refusal_code(result)}")
        return
    proposed, executed = await session.confirmed(name, arguments)
    if executed is None:
        run.refused.append(f"{name}: {refusal_code(proposed)}")
    elif executed.is_error:
        run.refused.append(f"execute {name}: {refusal_code(executed)}")
    else:
        run.executed += 1


async def check_tasks(
    tau2: Tau2, prepared: Prepared, work_dir: Path, progress: Callable[[str], None] = print
) -> list[TaskRun]:
    """Every prepared task sent to our server and hashed by τ² (``work_dir``: throwaway)."""
    runs = []
    for count, task in enumerate(prepared.tasks, start=1):
        runs.append(await run_task(prepared.world, task, prepared.gold[str(task["id"])], work_dir))
        if count % 10 == 0 or count == len(prepared.tasks):
            progress(f"tau2 faithfulness: {count} of {len(prepared.tasks)} tasks sent to the retail server")
    ours = tau2.hashes([work_dir / f"task-{run.task_id}.json" for run in runs])
    for run in runs:
        run.ours = ours[str(work_dir / f"task-{run.task_id}.json")]
    return runs

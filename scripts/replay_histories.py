"""Replay recorded workflow histories against the workflow code of one tree (a release's code).

    cd TREE && PYTHONPATH=TREE python /path/to/scripts/replay_histories.py --tree TREE --json FILE_OR_DIR...

``SupportCaseWorkflow``, ``CASE_DATA_CONVERTER`` and ``workflow_runner`` are imported from the tree the
script runs in (its cwd and ``PYTHONPATH``), not from the checkout the script lives in, so one runner
replays every release's histories against that release's code (tests/histories/releases.json). The
venv's editable install maps the project's packages to a checkout of its own: when any module of the
tree's packages was imported from somewhere else than ``--tree``, the script refuses (exit 2) instead
of replaying against the wrong code.

Exit 0 when every history replayed, 1 when any failed, 2 when nothing could be replayed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

REFUSED = 2
FAILED = 1
NEEDED = ("workflows.support_case", "contracts.payload_codec", "workflows.sandbox")
"""The modules of the three names a release's code must have."""


def recorded_workflow_id(document: Any, fallback: str) -> str:
    """The workflow id the history's start event names, else ``fallback``: a continued run checks that
    its carried state is its own workflow id's. (case_history.trail has the same; this script may run
    against a release's tree that lacks it, so it imports nothing of the project but the three names.)"""
    try:
        workflow_id = document["events"][0]["workflowExecutionStartedEventAttributes"].get("workflowId")
    except (KeyError, IndexError, TypeError, AttributeError):
        return fallback
    return workflow_id if isinstance(workflow_id, str) and workflow_id else fallback


@dataclass(frozen=True)
class Result:
    """One history's replay: ``error`` is None when it replayed without a failure."""

    file: str
    ok: bool
    seconds: float
    error: str | None = None


@dataclass(frozen=True)
class Code:
    """The three names a release's code must have, and the files they came from."""

    workflow: type
    data_converter: Any
    workflow_runner: Any
    modules: dict[str, str]


def history_files(paths: list[Path]) -> list[Path]:
    """The ``*.json`` files named, and those directly in each folder named, sorted within each folder."""
    found: list[Path] = []
    for path in paths:
        found += sorted(path.glob("*.json")) if path.is_dir() else [path]
    return found


def foreign_modules(tree: Path, modules: dict[str, ModuleType], needed: set[str]) -> dict[str, str]:
    """The ``needed`` modules, and those of the tree's own top-level packages, loaded from outside ``tree``."""
    own = {p.name for p in tree.iterdir() if (p / "__init__.py").is_file()} | {p.stem for p in tree.glob("*.py")}
    foreign = {}
    for name, module in modules.items():
        file = getattr(module, "__file__", None)
        if name not in needed and (file is None or name.split(".", 1)[0] not in own):
            continue
        if file is None or not Path(file).resolve().is_relative_to(tree):
            foreign[name] = str(file)
    return foreign


def load_code(tree: Path) -> Code | str:
    """The tree's workflow, data converter and runner, or why they cannot be trusted to be the tree's."""
    try:
        from contracts.payload_codec import CASE_DATA_CONVERTER
        from workflows.sandbox import workflow_runner
        from workflows.support_case import SupportCaseWorkflow
    except ImportError as error:
        return f"the code in {tree} lacks a name the replay needs: {error}"
    needed = {
        name: sys.modules[name] for name in ("workflows.support_case", "contracts.payload_codec", "workflows.sandbox")
    }
    foreign = foreign_modules(tree, dict(sys.modules), set(needed))
    if foreign:
        first = min(foreign, key=lambda name: (name not in needed, name))
        return (
            f"{first} was imported from {foreign[first]}, not from --tree {tree} ({len(foreign)} module(s) from "
            "elsewhere): run with cwd and PYTHONPATH set to the tree"
        )
    files = {name: str(Path(str(module.__file__)).resolve()) for name, module in needed.items()}
    return Code(SupportCaseWorkflow, CASE_DATA_CONVERTER, workflow_runner(), files)


async def replay(code: Code, files: list[Path]) -> list[Result]:
    """Replay each file with one replayer; a file that cannot be read or parsed is a failure of its own."""
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer

    replayer = Replayer(
        workflows=[code.workflow], data_converter=code.data_converter, workflow_runner=code.workflow_runner
    )
    results = []
    for path in files:
        started = time.perf_counter()
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            history = WorkflowHistory.from_json(recorded_workflow_id(document, f"replay-{path.stem}"), document)
            outcome = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            failure = outcome.replay_failure
            error = None if failure is None else f"{type(failure).__name__}: {failure}"
        except Exception as caught:
            error = f"{type(caught).__name__}: {caught}"
        results.append(Result(str(path), error is None, round(time.perf_counter() - started, 3), error))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="history files, or folders of *.json histories")
    parser.add_argument("--tree", type=Path, default=Path.cwd(), help="the tree whose code replays (default: cwd)")
    parser.add_argument("--json", action="store_true", help="print per-file results as one JSON object")
    args = parser.parse_args(argv)
    tree = args.tree.resolve()
    code = load_code(tree)
    if isinstance(code, str):
        print(f"replay_histories: refused: {code}", file=sys.stderr)
        return REFUSED
    files = history_files(args.paths)
    if not files:
        print(f"replay_histories: no *.json history in {' '.join(map(str, args.paths))}", file=sys.stderr)
        return REFUSED
    results = asyncio.run(replay(code, files))
    failed = [result for result in results if not result.ok]
    if args.json:
        report = {"tree": str(tree), "modules": code.modules, "replayed": len(results) - len(failed)}
        print(json.dumps({**report, "failed": len(failed), "results": [asdict(r) for r in results]}, indent=1))
    else:
        for result in results:
            verdict = "ok  " if result.ok else "FAIL"
            print(f"{verdict} {result.file} ({result.seconds:.2f} s){'' if result.ok else f': {result.error}'}")
        print(f"{len(results) - len(failed)} replayed, {len(failed)} failed, against {tree}")
    return FAILED if failed else 0


def run() -> None:
    """Run :func:`main` and end the process with its exit status.

    The process ends with ``os._exit`` after flushing, as worker.py and the CLI do: the replayer's native
    runtime threads can crash the interpreter while it finalizes (a CI run saw exit -11 after a report
    saying every history replayed), which would turn a verdict into a signal.
    """
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()

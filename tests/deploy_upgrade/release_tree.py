"""An earlier release of this repository as a tree of its own, for the deploy tests.

:func:`extract_tree` writes a commit's files (``git archive``) into a temporary folder with two small
scripts beside them: the launcher, which runs that tree's ``worker.py`` after printing where its
modules came from, and the replayer, which replays a history JSON file with that tree's workflow code
(and says where that came from). Both put the tree first on ``sys.path``, so the old code never
borrows a module of this checkout (the venv may have it installed). Without git or without the
needed history every helper fails the test with what is missing; none skips.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.faults.fault_support import PROJECT_ROOT, WORKER_SCRIPT, WorkerProcess, worker_env

LAUNCHER_NAME = "_deploy_launcher.py"
LAUNCHER_MARK = "deploy-launcher: "
LAUNCHER = f'''"""Run this tree's worker.py after saying which modules it imported (tests/deploy_upgrade)."""
import json
import sys
from pathlib import Path

TREE = str(Path(__file__).resolve().parent)
if sys.path[0] != TREE:
    sys.path.insert(0, TREE)
import worker
import workflows.patches
import workflows.support_case

modules = (worker, workflows.patches, workflows.support_case)
ids = sorted(v for k, v in vars(workflows.patches).items() if k.isupper() and isinstance(v, str))
report = {{"tree": TREE, "modules": {{m.__name__: m.__file__ for m in modules}}, "patch_ids": ids}}
print({LAUNCHER_MARK!r} + json.dumps(report), flush=True)
worker.run()
'''

REPLAYER_NAME = "_deploy_replay.py"
REPLAYER_MARK = "deploy-replay: "
REPLAYER = f'''"""Replay one history JSON file with this tree's workflow code (tests/deploy_upgrade).

    python {REPLAYER_NAME} HISTORY_JSON WORKFLOW_ID
"""
import asyncio
import json
import sys
from pathlib import Path

TREE = Path(__file__).resolve().parent
if sys.path[0] != str(TREE):
    sys.path.insert(0, str(TREE))
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

import contracts.payload_codec
import workflows.sandbox
import workflows.support_case

modules = (contracts.payload_codec, workflows.sandbox, workflows.support_case)
foreign = [m.__file__ for m in modules if not Path(m.__file__).resolve().is_relative_to(TREE)]
if foreign:
    sys.exit(f"imported from outside {{TREE}}: {{foreign}}")
history = WorkflowHistory.from_json(sys.argv[2], Path(sys.argv[1]).read_text(encoding="utf-8"))
replayer = Replayer(
    workflows=[workflows.support_case.SupportCaseWorkflow],
    data_converter=contracts.payload_codec.CASE_DATA_CONVERTER,
    workflow_runner=workflows.sandbox.workflow_runner(),
)
result = asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=True))
report = {{"tree": str(TREE), "modules": {{m.__name__: m.__file__ for m in modules}}, "events": len(history.events)}}
print({REPLAYER_MARK!r} + json.dumps(report | {{"failure": str(result.replay_failure or "")}}), flush=True)
'''


def git(*args: str, needed: str) -> bytes:
    """``git args`` in this checkout; the test fails with ``needed`` (what history it wants) if it cannot."""
    found = shutil.which("git")
    if found is None:
        pytest.fail(
            f"git is not installed: the deploy test runs {needed} from this repository's history",
            pytrace=False,
        )
    done = subprocess.run([found, "-C", str(PROJECT_ROOT), *args], capture_output=True, timeout=60)
    if done.returncode != 0:
        pytest.fail(
            f"`git {' '.join(args)}` failed in {PROJECT_ROOT}: {done.stderr.decode(errors='replace').strip()}\n"
            f"The deploy test needs {needed} in this repository's git history (an exported tree or a shallow "
            "clone lacks it: `git fetch --unshallow --tags`).",
            pytrace=False,
        )
    return done.stdout


def resolve(ref: str, *, needed: str) -> str:
    """The full commit id ``ref`` names in this repository."""
    return git("rev-parse", "--verify", f"{ref}^{{commit}}", needed=needed).decode().strip()


def extract_tree(commit: str, target: Path) -> Path:
    """``commit``'s files in ``target`` (new), with the launcher and the replayer written beside them."""
    target.mkdir(parents=True)
    archived = git("archive", "--format=tar", commit, needed=f"commit {commit}")
    with tarfile.open(fileobj=io.BytesIO(archived), mode="r:") as archive:
        archive.extractall(target, filter="data")
    (target / LAUNCHER_NAME).write_text(LAUNCHER, encoding="utf-8")
    (target / REPLAYER_NAME).write_text(REPLAYER, encoding="utf-8")
    return target


def launcher_report(worker: WorkerProcess) -> dict[str, Any]:
    """What the launcher printed: the tree, the files its modules came from, the tree's patch ids."""
    lines = [line for line in worker.log().splitlines() if line.startswith(LAUNCHER_MARK)]
    assert len(lines) == 1, worker.log()[-3000:]
    report: dict[str, Any] = json.loads(lines[0].removeprefix(LAUNCHER_MARK))
    return report


def spawn_release_worker(
    address: str, state_dir: Path, task_queue: str, *, name: str, build_id: str, tree: Path | None = None
) -> WorkerProcess:
    """``worker.py --set-current`` of ``tree`` (through its launcher, the tree as cwd) or, without one,
    of this checkout, as its own process group logging to ``<name>.log`` beside ``state_dir``.

    ``build_id`` goes to ``SUPPORT_BUILD_ID`` ("" lets the worker name its build itself). Only the
    flag makes the build current: the environment's ``SUPPORT_SET_CURRENT_VERSION`` is cleared."""
    script, cwd = (tree / LAUNCHER_NAME, tree) if tree is not None else (WORKER_SCRIPT, PROJECT_ROOT)
    env = worker_env(address, SUPPORT_BUILD_ID=build_id, SUPPORT_SET_CURRENT_VERSION="")
    log_path = state_dir.parent / f"{name}.log"
    command = [sys.executable, str(script), "--state-dir", str(state_dir), "--task-queue", task_queue, "--set-current"]
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return WorkerProcess(process, log_path, task_queue)


def replay_in_tree(tree: Path, history_json: Path, workflow_id: str) -> dict[str, Any]:
    """Replay ``history_json`` with ``tree``'s code in a process of its own; its report (it must pass)."""
    done = subprocess.run(
        [sys.executable, str(tree / REPLAYER_NAME), str(history_json), workflow_id],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=180,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"replay in {tree} exited {done.returncode}:\n{output[-3000:]}"
    lines = [line for line in done.stdout.splitlines() if line.startswith(REPLAYER_MARK)]
    assert len(lines) == 1, output[-3000:]
    report: dict[str, Any] = json.loads(lines[0].removeprefix(REPLAYER_MARK))
    return report

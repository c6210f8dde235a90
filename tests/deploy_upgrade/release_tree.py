"""An earlier release of this repository as a tree of its own, for the release deploy test.

:func:`release_tree` extracts a release's code (as tests/histories/releases.json names it, through
:mod:`tests.release_code`) with a launcher beside it that runs that tree's ``worker.py`` after
printing where its modules came from; the launcher puts the tree first on ``sys.path``, so the old
code never borrows a module of this checkout (the venv's editable install maps the project's
packages here). :func:`replay_in_tree` replays a history with that tree's code through
scripts/replay_histories.py. Without git or without the needed history every helper fails the test
with what is missing; none skips.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from keystore import directory_location
from tests.faults.fault_support import PROJECT_ROOT, WORKER_SCRIPT, WorkerProcess, worker_env
from tests.release_code import extract, releases, replay_in, resolve

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
import workflows.support_case

modules = (worker, workflows.support_case)
report = {{"tree": TREE, "modules": {{m.__name__: m.__file__ for m in modules}}}}
print({LAUNCHER_MARK!r} + json.dumps(report), flush=True)
worker.run()
'''


def release_tree(name: str, target: Path) -> tuple[str, Path]:
    """The manifest's release ``name``: its commit (checked, with its tag) and its files in ``target``
    (new), with the launcher written beside them."""
    commit = resolve(releases()[name])
    tree = extract(commit, target)
    (tree / LAUNCHER_NAME).write_text(LAUNCHER, encoding="utf-8")
    return commit, tree


def launcher_report(worker: WorkerProcess) -> dict[str, Any]:
    """What the launcher printed: the tree and the files its modules came from."""
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
    if tree is not None:
        # Releases before 0.3 read a public key set (SUPPORT_PUBLIC_KEYS, COMMERCE_PUBLIC_KEYS); the
        # directory is a JSON Web Key Set too, so they are pointed at it for their drain (docs/upgrades.md).
        directory = directory_location(state_dir, env)
        env |= {"SUPPORT_PUBLIC_KEYS": directory, "COMMERCE_PUBLIC_KEYS": directory}
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


def replay_in_tree(tree: Path, history_json: Path) -> dict[str, Any]:
    """Replay ``history_json`` with ``tree``'s code in a process of its own (scripts/replay_histories.py,
    which refuses modules imported from elsewhere); its one result, which must have replayed."""
    done = replay_in(tree, history_json, timeout=180)
    assert done.returncode == 0, f"replay in {tree} exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}"
    report: dict[str, Any] = json.loads(done.stdout)
    [result] = report["results"]
    assert result["ok"], result
    return result

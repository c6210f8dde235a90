"""The project builds as a wheel without setuptools warnings, and the wheel holds every module and
every data file (fixtures, policy documents, skills) the installed service reads."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PACKAGED = {
    *("contracts", "commerce_server", "knowledge", "activities", "workflows", "case_client", "rehearsal"),
    *("keystore", "cli", "codec_server", "case_history", "devstack", "reviewer_console", "commerce_contract"),
    "customer_channel",
}


def _tracked() -> list[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [path for path in listed.splitlines() if (ROOT / path).is_file()]


def test_the_wheel_builds_without_warnings_and_holds_every_module_and_data_file(tmp_path: Path) -> None:
    source = tmp_path / "source"
    for path in _tracked():  # a clean checkout: no build/ or egg-info of the working tree
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, source / path)
    command = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(tmp_path / "wheel"), str(source)]
    built = subprocess.run(command, capture_output=True, text=True, timeout=600)
    output = built.stdout + built.stderr
    assert built.returncode == 0, output[-3000:]
    for warning in ("would be ignored", "BuildBackendWarning", "SetuptoolsDeprecationWarning", "SetuptoolsWarning"):
        assert warning not in output, warning
    [wheel] = (tmp_path / "wheel").glob("*.whl")
    inside = set(zipfile.ZipFile(wheel).namelist())
    wanted = [path for path in _tracked() if path.split("/", 1)[0] in PACKAGED]
    assert len(wanted) > 100
    assert [path for path in wanted if path not in inside] == []
    for module in ("starter.py", "worker.py", "case_worker.py", "case_eval.py", "case_tracing.py"):
        assert module in inside
    assert not [path for path in inside if path.startswith(("tests/", "benchmarks/", "scripts/"))]

"""The worker's metrics endpoint bound beyond loopback (``SUPPORT_METRICS_HOST=0.0.0.0``) is said in one
line on stderr at start, as the codec server and the reviewer console say theirs; on loopback, nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from activities.runtime.metrics_runtime import beyond_loopback
from contracts.metrics import MetricsEndpoint
from devstack.servers import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_the_warning_names_the_endpoint_and_the_setting() -> None:
    assert beyond_loopback(MetricsEndpoint("127.0.0.1", 9464)) is None
    assert beyond_loopback(MetricsEndpoint("::1", 9464)) is None
    line = beyond_loopback(MetricsEndpoint("0.0.0.0", 9464))
    assert line is not None and "\n" not in line
    assert line.startswith("worker: warning: listening on http://0.0.0.0:9464/metrics, not only on loopback: ")
    assert "tenants" in line and "SUPPORT_METRICS_HOST" in line
    assert "[::]:9464" in (beyond_loopback(MetricsEndpoint("::", 9464)) or "")


@pytest.mark.slow
@pytest.mark.parametrize(("host", "warns"), [("0.0.0.0", True), ("127.0.0.1", False)])
def test_the_worker_says_it_at_start(host: str, warns: bool, tmp_path: Path) -> None:
    """A real ``worker.py`` (no Temporal server: it binds the endpoint, says where, then exits 5)."""
    port = free_port()
    env = {**os.environ, "SUPPORT_METRICS_PORT": str(port), "SUPPORT_METRICS_HOST": host}
    env["TEMPORAL_ADDRESS"] = "127.0.0.1:1"
    result = subprocess.run(
        [sys.executable, str(ROOT / "worker.py"), "--state-dir", str(tmp_path / "state")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert f"worker: metrics on http://{host}:{port}/metrics" in result.stdout, result.stdout + result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    if warns:
        assert len(warnings) == 1, result.stderr
        [line] = warnings
        assert line.startswith(f"worker: warning: listening on http://{host}:{port}/metrics, not only on loopback: ")
        assert "SUPPORT_METRICS_HOST" in line
    else:
        assert warnings == [], result.stderr

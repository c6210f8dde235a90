"""`make dev-server`'s script (temporal_dev.py run as a program) and a signal that comes while it starts.

The dev server and the codec server run in sessions of their own, so that a terminal's Ctrl-C reaches
only the script, which stops them. A SIGTERM that arrives before both answer must not kill the script
and leave them running: it stops both once they are up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from temporal_dev import free_port
from tests.faults.fault_support import alive, cmdline, descendants_of

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_a_sigterm_during_start_up_stops_both_servers(tmp_path: Path) -> None:
    port, ui_port, codec_port = free_port(), free_port(), free_port()
    command = [sys.executable, "temporal_dev.py", "--port", str(port), "--ui-port", str(ui_port)]
    command += ["--codec-port", str(codec_port), "--state-dir", str(tmp_path / "state")]
    script = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    started: set[int] = set()
    try:
        _signal_during_start_up(script, started, port, codec_port)
    finally:  # whatever a failed run left behind
        for pid in started:
            if alive(pid) and any("codec_server" in part or "temporal" in part for part in cmdline(pid)):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _signal_during_start_up(script: subprocess.Popen, started: set[int], port: int, codec_port: int) -> None:
    deadline = time.monotonic() + 60
    while not started:  # the codec server has been spawned; the dev server is not up yet
        assert script.poll() is None and time.monotonic() < deadline, script.communicate()[0]
        started.update(descendants_of(script.pid))
        time.sleep(0.02)
    assert not _listening(port)
    script.send_signal(signal.SIGTERM)
    while script.poll() is None:  # the dev server may be spawned after the signal
        assert time.monotonic() < deadline + 120, "the script did not stop"
        started.update(descendants_of(script.pid))
        time.sleep(0.05)
    output = script.communicate()[0]
    assert script.returncode == 0, output
    assert "Temporal dev server on" in output  # it finished starting, then stopped
    assert len(started) >= 2, started  # the codec server and the dev server (with its children)
    assert not [pid for pid in started if alive(pid)]
    assert not _listening(port) and not _listening(codec_port)

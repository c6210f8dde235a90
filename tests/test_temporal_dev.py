"""`make dev-server`'s script (``python -m devstack``) and a signal that comes while it starts.

The dev server and the codec server run in sessions of their own, so that a terminal's Ctrl-C reaches
only the script, which stops them. A SIGTERM that arrives before both answer must not kill the script
and leave them running: it stops both once they are up.

Every test here moves every port the script opens (TEMPORAL_PORT, TEMPORAL_UI_PORT, CODEC_PORT and
CONSOLE_PORT) to a free one: none depends on a default port (7233, 8233, 8089, 8090) being free.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.servers import free_port, start_dev_server
from tests.faults.fault_support import alive, cmdline, descendants_of

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_a_sigterm_during_start_up_stops_both_servers(tmp_path: Path) -> None:
    port, ui_port, codec_port, console_port = free_port(), free_port(), free_port(), free_port()
    command = [sys.executable, "-m", "devstack", "--port", str(port), "--ui-port", str(ui_port)]
    command += ["--codec-port", str(codec_port), "--console-port", str(console_port)]
    command += ["--chat-port", str(free_port()), "--state-dir", str(tmp_path / "state")]
    script = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    started: set[int] = set()
    try:
        _signal_during_start_up(script, started, port, codec_port, console_port)
    finally:  # whatever a failed run left behind
        servers = ("codec_server", "reviewer_console", "temporal")
        for pid in started:
            if alive(pid) and any(name in part for name in servers for part in cmdline(pid)):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _signal_during_start_up(
    script: subprocess.Popen, started: set[int], port: int, codec_port: int, console_port: int
) -> None:
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
    assert not _listening(port) and not _listening(codec_port) and not _listening(console_port)


def _processes_naming(text: str) -> list[int]:
    """Pids of the processes whose command line names ``text`` (a test's own state dir)."""
    pids = [int(proc.name) for proc in Path("/proc").iterdir() if proc.name.isdigit()]
    return [pid for pid in pids if any(text in part for part in cmdline(pid))]


@contextlib.contextmanager
def _held_port() -> Iterator[int]:
    """A port some other program listens on (a plain socket: not a Temporal server)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_a_port_another_temporal_server_answers_on_is_refused_with_the_bind_error(tmp_path: Path) -> None:
    other = start_dev_server(tmp_path / "other")  # someone else's dev server, already up
    try:
        port = int(other.address.rsplit(":", 1)[1])
        command = [sys.executable, "-m", "devstack", "--port", str(port), "--ui-port", str(free_port())]
        command += ["--codec-port", "0", "--console-port", str(free_port()), "--chat-port", str(free_port())]
        command += ["--state-dir", str(tmp_path / "mine")]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        other.stop()
    assert done.returncode == 2, done
    assert "Temporal dev server on" not in done.stdout  # no success line for a server it did not start
    [line] = done.stderr.splitlines()
    assert "address already in use" in line  # the dev server's own bind error, not only its log
    assert f"port {port} (TEMPORAL_PORT) is taken: a Temporal server" in line
    assert "set TEMPORAL_PORT to a free port" in line
    assert _processes_naming(str(tmp_path / "mine")) == []


def test_a_taken_codec_port_is_refused_in_one_line_and_nothing_is_left_running(tmp_path: Path) -> None:
    port = free_port()
    with _held_port() as codec_port:
        command = [sys.executable, "-m", "devstack", "--port", str(port), "--ui-port", str(free_port())]
        command += ["--codec-port", str(codec_port), "--console-port", str(free_port())]
        command += ["--chat-port", str(free_port()), "--state-dir", str(tmp_path / "state")]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done
    [line] = done.stderr.splitlines()
    assert f"port {codec_port} (CODEC_PORT) is taken: a program that is not a Temporal server listens" in line
    assert "CODEC_PORT=0 runs without the codec server" in line
    assert not _listening(port)  # the dev server was never started
    assert _processes_naming(str(tmp_path)) == []  # and no server of this run is left behind


def test_the_demo_refuses_a_taken_port_before_it_starts_anything(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TEMPORAL_ADDRESS"}
    with _held_port() as port:
        env.update(TEMPORAL_PORT=str(port), TEMPORAL_UI_PORT=str(free_port()), CODEC_PORT=str(free_port()))
        env.update(CONSOLE_PORT=str(free_port()), CHAT_PORT=str(free_port()))
        env.update(STATE_DIR=str(tmp_path / "demo"))
        demo = ["bash", "scripts/demo.sh"]
        done = subprocess.run(demo, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done
    assert f"demo: port {port} (TEMPORAL_PORT) is taken" in done.stderr
    assert "demo: nothing was started" in done.stderr
    assert not (tmp_path / "demo").exists()  # not even its state dir


def test_the_demo_runs_on_the_ports_it_is_given(tmp_path: Path) -> None:
    port, ui_port, codec_port, console_port = free_port(), free_port(), free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_ADDRESS", "SUPPORT_", "COMMERCE_"))}
    env.update(TEMPORAL_PORT=str(port), TEMPORAL_UI_PORT=str(ui_port), CODEC_PORT=str(codec_port))
    chat_port = free_port()
    env.update(CONSOLE_PORT=str(console_port), CHAT_PORT=str(chat_port))
    env.update(STATE_DIR=str(tmp_path / "demo"))
    done = subprocess.run(["bash", "scripts/demo.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"Temporal dev server on 127.0.0.1:{port}" in done.stdout
    assert f"codec server http://127.0.0.1:{codec_port}" in done.stdout
    assert f"reviewer console http://localhost:{console_port}" in done.stdout
    assert f"web chat http://localhost:{chat_port} (demo sign-in)" in done.stdout
    # the case is a conversation: it asked alice for the order, her answer led to the proposal
    asked = done.stdout[done.stdout.index("== 5. alice writes") : done.stdout.index("== 6. alice answers")]
    assert "waiting_customer" in asked and "QH-1001" in asked
    assert "waiting_approval" in done.stdout[done.stdout.index("== 6. alice answers") :]
    assert "chain verified" in done.stdout
    assert not _listening(port) and not _listening(codec_port) and not _listening(ui_port)
    assert not _listening(console_port) and not _listening(chat_port)

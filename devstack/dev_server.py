"""``make dev-server``: a local Temporal dev server in the foreground, with the case search attributes
registered and its SQLite file in the state dir, and beside it the codec server (``python -m
codec_server``) that the Web UI decodes the compressed payloads with (docs/payloads.md) and the
reviewer console (``python -m reviewer_console``, where reviewers approve with a passkey) and the
customer channel with its web chat (``python -m customer_channel --demo-sign-in``), until Ctrl-C (or
SIGTERM) stops them all.

    python -m devstack [--port 7233] [--ui-port 8233] [--state-dir .state] [--codec-port 8089]
                       [--console-port 8090] [--chat-port 8092]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from contracts.directory import ISSUER_KID
from contracts.errors import ConfigurationError
from devstack.ports import port_problems
from devstack.servers import (
    LocalServer,
    start_codec_server,
    start_customer_channel,
    start_dev_server,
    start_reviewer_console,
    ui_origins,
)
from keystore import directory_location, private_key_path


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
    parser.add_argument(
        "--console-port",
        type=int,
        default=int(os.environ.get("CONSOLE_PORT") or 8090),
        help="port of the reviewer console (http://localhost:PORT); 0: none",
    )
    parser.add_argument(
        "--chat-port",
        type=int,
        default=int(os.environ.get("CHAT_PORT") or 8092),
        help="port of the customer channel and its web chat, with the demo sign-in (http://localhost:PORT); 0: none",
    )
    args = parser.parse_args(argv)
    # Before anything starts: the servers run in sessions of their own, so a signal that killed this
    # process during start-up would leave them running. One that arrives then stops both once they answer.
    asked_to_stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda _signum, _frame: asked_to_stop.set())
    codec: LocalServer | None = None
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
    console: LocalServer | None = None
    console_log = args.state_dir / "reviewer-console.log"
    directory = directory_location(args.state_dir)
    if not directory.startswith("https://") and not Path(directory).is_file():
        for name, port in (("reviewer console", args.console_port), ("web chat", args.chat_port)):
            if port:
                print(f"dev-server: no {name}: {directory} does not exist (starter.py init writes it)", flush=True)
        args.console_port = args.chat_port = 0
    issuer_key = private_key_path(args.state_dir, ISSUER_KID)  # the web chat's demo sign-in signs with it
    if args.chat_port and not issuer_key.is_file():
        print(f"dev-server: no web chat: {issuer_key} does not exist (starter.py init writes it)", flush=True)
        args.chat_port = 0
    try:
        if args.console_port:
            console = start_reviewer_console(
                console_log, args.state_dir, temporal_address=server.address, port=args.console_port
            )
    except ConfigurationError as error:
        for running in (server, codec):
            if running:
                running.stop()
        _refuse(error, {"CONSOLE_PORT": args.console_port}, console_log, "CONSOLE_PORT=0 runs without the console")
        return 2
    chat: LocalServer | None = None
    chat_log = args.state_dir / "customer-channel.log"
    try:
        if args.chat_port:
            chat = start_customer_channel(
                chat_log, args.state_dir, temporal_address=server.address, port=args.chat_port
            )
    except ConfigurationError as error:
        for running in (console, server, codec):
            if running:
                running.stop()
        _refuse(error, {"CHAT_PORT": args.chat_port}, chat_log, "CHAT_PORT=0 runs without the web chat")
        return 2
    decoding = f", codec server {codec.endpoint} (the UI shows compressed payloads decoded)" if codec else ""
    decoding += f", reviewer console {console.endpoint}" if console else ""
    decoding += f", web chat {chat.endpoint} (demo sign-in)" if chat else ""
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
    for running in (chat, console, server, codec):
        if running:
            running.stop()
    return 0 if asked_to_stop.is_set() else 1


def _refuse(error: ConfigurationError, ports: dict[str, int], log: Path, hint: str = "") -> None:
    """One line on stderr: the server's own error, then each of ``ports`` that another program holds."""
    parts = [error.message, *port_problems(ports), *([hint] if hint else [])]
    print(f"dev-server: {'; '.join(parts)} (log: {log})", file=sys.stderr, flush=True)

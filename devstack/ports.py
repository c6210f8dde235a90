"""Whose is a local port: what `make dev-server` and `make demo` say when one of theirs is taken.

A port that answers before the dev server is started belongs to someone else (another `make
dev-server`, a dev server started by hand, any other program). :func:`port_problems` names each such
port, what answers there (a Temporal server and its version, or the listening process where this
system shows it), and the variable that moves it, in one line each.

    python -m devstack.ports [--port 7233] [--ui-port 8233] [--codec-port 8089] [--console-port 8090]
                             [--chat-port 8092]

prints those lines and exits 2 when a port is taken, 0 when all are free (``scripts/demo.sh`` runs it
before it starts anything). The defaults come from TEMPORAL_PORT, TEMPORAL_UI_PORT, CODEC_PORT,
CONSOLE_PORT and CHAT_PORT.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path

HOST = "127.0.0.1"
PORT_VARIABLES = ("TEMPORAL_PORT", "TEMPORAL_UI_PORT", "CODEC_PORT", "CONSOLE_PORT", "CHAT_PORT")
"""The variables that move the dev server's gRPC port, its Web UI, the codec server, the reviewer console
and the customer channel (the web chat)."""
DEFAULT_PORTS = {
    "TEMPORAL_PORT": 7233,
    "TEMPORAL_UI_PORT": 8233,
    "CODEC_PORT": 8089,
    "CONSOLE_PORT": 8090,
    "CHAT_PORT": 8092,
}
LINE_LIMIT = 300
"""A line quoted from a server's log is cut to this many characters."""
COMMAND_LIMIT = 120
"""So is the command line of the process that holds a port."""


def answers(port: int, host: str = HOST) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


def temporal_version(port: int, host: str = HOST, timeout: float = 3.0) -> str | None:
    """The version of the Temporal server answering on ``host:port``; None when what answers is not one."""
    from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
    from temporalio.client import Client

    async def ask() -> str:
        client = await Client.connect(f"{host}:{port}")
        info = await client.workflow_service.get_system_info(GetSystemInfoRequest(), timeout=None)
        return info.server_version or "of unknown version"

    try:
        return asyncio.run(asyncio.wait_for(ask(), timeout))
    except Exception:  # not a Temporal frontend, or none that answers in time: the caller says so
        return None


def listening_process(port: int) -> str | None:
    """``pid N: command line`` of the process listening on TCP ``port``, where /proc shows it (Linux, a
    process this user may inspect); None elsewhere."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])  # state 0A: LISTEN
    wanted = {f"socket:[{inode}]" for inode in inodes}
    if not wanted:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in wanted for fd in (proc / "fd").iterdir()):
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                command = " ".join(" ".join(part.decode(errors="replace").split()) for part in argv if part)
                return f"pid {proc.name}: {command[:COMMAND_LIMIT]}"
        except OSError:
            continue
    return None


def describe_listener(port: int, host: str = HOST) -> str:
    """What answers on ``host:port``, in words: ``a Temporal server 1.32.0 answers on 127.0.0.1:7233
    (pid 4242: temporal server start-dev ...)``."""
    version = temporal_version(port, host)
    what = f"a Temporal server {version} answers" if version else "a program that is not a Temporal server listens"
    process = listening_process(port)
    return f"{what} on {host}:{port}" + (f" ({process})" if process else "")


def port_problems(ports: Mapping[str, int], host: str = HOST) -> list[str]:
    """One line per port of ``ports`` (``{variable: port}``; 0 means not used) that is already taken."""
    return [
        f"port {port} ({variable}) is taken: {describe_listener(port, host)}; stop it or set {variable} to a free port"
        for variable, port in ports.items()
        if port and answers(port, host)
    ]


def last_line(text: str) -> str:
    """The last non-empty line of a server's output, the ``Error:`` prefix of the Temporal CLI dropped."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "it printed nothing"
    return lines[-1].removeprefix("Error:").strip()[:LINE_LIMIT]


def configured_ports(environ: Mapping[str, str] = os.environ) -> dict[str, int]:
    """``{variable: port}`` from the environment, with the defaults `make dev-server` uses."""
    found: dict[str, int] = {}
    for variable in PORT_VARIABLES:
        text = environ.get(variable) or str(DEFAULT_PORTS[variable])
        if not text.isdigit() or not 0 <= int(text) < 65536:
            raise ValueError(f"{variable}={text!r} is not a port (0-65535)")
        found[variable] = int(text)
    return found


def main(argv: list[str] | None = None) -> int:
    import argparse

    try:
        ports = configured_ports()
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(description="Say which of the dev server's ports are taken, and by what.")
    parser.add_argument("--port", type=int, default=ports["TEMPORAL_PORT"])
    parser.add_argument("--ui-port", type=int, default=ports["TEMPORAL_UI_PORT"])
    parser.add_argument("--codec-port", type=int, default=ports["CODEC_PORT"], help="0: not used")
    parser.add_argument("--console-port", type=int, default=ports["CONSOLE_PORT"], help="0: not used")
    parser.add_argument("--chat-port", type=int, default=ports["CHAT_PORT"], help="0: not used")
    args = parser.parse_args(argv)
    problems = port_problems(
        {
            "TEMPORAL_PORT": args.port,
            "TEMPORAL_UI_PORT": args.ui_port,
            "CODEC_PORT": args.codec_port,
            "CONSOLE_PORT": args.console_port,
            "CHAT_PORT": args.chat_port,
        }
    )
    for problem in problems:
        print(problem, file=sys.stderr)
    return 2 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

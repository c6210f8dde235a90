"""``python -m codec_server [--host 127.0.0.1] [--port 8089] [--cors-origin URL ...]``.

Serves :func:`codec_server.build_app` until Ctrl-C or SIGTERM. A bad argument, or an address that
cannot be bound, is one line on stderr and exit 2 (no traceback). The server decodes whatever is posted
to it: keep it on localhost, or behind the same access control as the Web UI (docs/payloads.md); bound
to any other address it says so in one line on stderr.
"""

from __future__ import annotations

import argparse
import socket
import sys
from typing import NoReturn
from urllib.parse import urlsplit

import uvicorn

from codec_server.app import DEV_UI_ORIGINS, build_app
from contracts.listening import beyond_loopback_warning, is_loopback_address

DEFAULT_PORT = 8089
PROG = "codec-server"


class UsageError(Exception):
    """A bad command-line argument, said in one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = _Parser(
        prog=PROG,
        description="Temporal remote codec server for the support cases: decodes the compressed payloads "
        "(binary/zlib) for the Web UI and the Temporal CLI.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument(
        "--cors-origin",
        dest="cors_origins",
        action="append",
        type=_origin,
        metavar="URL",
        help="a Web UI origin allowed to call it from the browser (repeatable; default: "
        + " and ".join(DEV_UI_ORIGINS)
        + ")",
    )
    args = parser.parse_args(argv)
    args.cors_origins = tuple(args.cors_origins or DEV_UI_ORIGINS)
    return args


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (1-65535)")
    return int(text)


def _origin(text: str) -> str:
    """An exact browser origin: ``http(s)://host[:port]``, no path, no wildcard (credentials are allowed)."""
    problem = f"{text!r} is not an origin such as http://localhost:8233"
    if "*" in text:
        raise argparse.ArgumentTypeError(f"{problem} (no wildcards: the UI may send credentials)")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise argparse.ArgumentTypeError(problem) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query or parts.fragment:
        raise argparse.ArgumentTypeError(problem)
    if parts.username is not None or parts.password is not None:
        raise argparse.ArgumentTypeError(problem)
    # As a browser sends it: lower case, no default port (an Origin header is compared as text).
    scheme, host = parts.scheme.lower(), parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host
    default = {"http": 80, "https": 443}[scheme]
    return f"{scheme}://{host}" if port in (None, default) else f"{scheme}://{host}:{port}"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (IPv6 when ``host`` is one)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise UsageError(f"--host {host!r} does not resolve ({error.strerror})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as error:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port} ({error.strerror}); is another server there?") from None
    sock.listen(128)
    return sock


def is_loopback(sock: socket.socket) -> bool:
    """Whether ``sock`` listens on a loopback address only (``0.0.0.0`` and ``::`` are every address)."""
    return is_loopback_address(str(sock.getsockname()[0]))


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        sock = bind(args.host, args.port)
    except UsageError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    shown = f"[{args.host}]" if ":" in args.host else args.host
    if not is_loopback(sock):
        exposed = "whoever reaches it can decode the case data in payloads"
        advice = "keep it on 127.0.0.1 or behind the Web UI's access control"
        print(beyond_loopback_warning(PROG, shown, exposed, advice), file=sys.stderr, flush=True)
    print(
        f"{PROG}: Temporal codec server on http://{shown}:{args.port} (POST /decode, /encode); "
        f"CORS for {', '.join(args.cors_origins)}; Ctrl-C stops it",
        flush=True,
    )
    config = uvicorn.Config(build_app(args.cors_origins), log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())

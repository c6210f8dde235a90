"""Command line: ``python -m commerce_server``.

    python -m commerce_server --profile alice --state-dir .state          # stdio (default)
    python -m commerce_server --http --host 127.0.0.1 --port 8765         # Streamable HTTP
    python -m commerce_server import FILE --state-dir .state              # load one tenant's data

A refund is paid only on reviewers' signed approvals, checked with the server's own copy of the support
directory (``COMMERCE_DIRECTORY``, default ``<state dir>/keys/directory.json``: read at start, where a
bad one refuses to start, and again whenever it changes); receipts are signed with
``COMMERCE_SIGNING_KEY`` (default ``<state dir>/keys/commerce.pem``), read on the first refund.
``starter.py init`` writes the demo directory and keys.
``COMMERCE_METRICS_PORT`` serves the server's counters on ``/metrics`` (commerce_server/metrics.py).

stdout belongs to the stdio transport, so every log line goes to stderr, in the format
``SUPPORT_LOG_FORMAT`` names (plain, or JSON lines: contracts/logs.py) at ``--log-level`` (else
``SUPPORT_LOG_LEVEL``, else WARNING over stdio and INFO over HTTP); uvicorn's lines too. A paid refund
is logged whatever the level (:mod:`commerce_server.refunds`). Bad arguments and bad configuration
print one line on stderr and exit non-zero.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn, cast

import anyio
import uvicorn
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from case_tracing import flush_process_tracing, process_tracing
from commerce_server.db import database_url, make_engine
from commerce_server.import_command import run_import
from commerce_server.keys import CommerceKeys
from commerce_server.metrics import database_answers, serve_metrics
from commerce_server.refunds import PAID_LOGGER
from commerce_server.seed import seed_fixture
from commerce_server.server import LogLevel, build_http_server, build_stdio_server
from commerce_server.tokens import token_secret_from_env
from contracts import logs
from contracts.errors import SupportError
from knowledge.check import require_valid_knowledge

PROG = "commerce_server"


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def _port(value: str) -> int:
    port = int(value)
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 1-65535, not {port}")
    return port


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = _OneLineParser(
        prog=PROG,
        description="The fictional commerce MCP server.",
        epilog=f"{PROG} import FILE loads one tenant's products and orders (see {PROG} import --help).",
    )
    parser.add_argument("--profile", help="stdio only: the directory's person to act for (alice, bob, ...)")
    parser.add_argument("--state-dir", default=".state", help="where the default SQLite database lives")
    parser.add_argument("--database-url", help="SQLAlchemy URL; overrides COMMERCE_DATABASE_URL and the SQLite default")
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP only: the address to listen on")
    parser.add_argument("--port", type=_port, default=8765, help="HTTP only: the port to listen on")
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=logs.LOG_LEVELS,
        help=f"default {logs.LOG_LEVEL_ENV}, else WARNING (stdio), INFO (HTTP)",
    )
    args = parser.parse_args(argv)
    if args.http and args.profile:
        parser.error("--profile is for stdio; over HTTP each request's token names the customer")
    if not args.http and not args.profile:
        parser.error("--profile is required for stdio (or pass --http)")
    return args


def log_level_name(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> LogLevel:
    """``--log-level``, else ``SUPPORT_LOG_LEVEL``, else WARNING over stdio (its lines join the
    worker's) and INFO over HTTP; a bad ``SUPPORT_LOG_LEVEL`` is a configuration error."""
    if args.log_level:
        return cast(LogLevel, args.log_level)
    level = logs.log_level(environ, default="INFO" if args.http else "WARNING")
    return cast(LogLevel, logging.getLevelName(level))


def open_database(args: argparse.Namespace) -> Engine:
    """Open the database named by the arguments or environment and insert missing fixture rows."""
    url = args.database_url or database_url(args.state_dir)
    if url.startswith("sqlite") and not args.database_url:
        Path(args.state_dir).mkdir(parents=True, exist_ok=True)
    engine = make_engine(url)
    seed_fixture(engine)
    return engine


def serve_http(engine: Engine, secret: str, keys: CommerceKeys, args: argparse.Namespace, level: LogLevel) -> None:
    """Stateless Streamable HTTP with JSON responses: any replica can answer any request. uvicorn is
    run here rather than by the SDK's ``run_streamable_http_async``, with ``log_config=None``, so that
    its lines go through this process's one log format instead of uvicorn's own."""
    server = build_http_server(
        engine, secret=secret, public_url=f"http://{args.host}:{args.port}", log_level=level, keys=keys
    )
    app = server.streamable_http_app(stateless_http=True, json_response=True, host=args.host)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_config=None, log_level=level.lower())
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(uvicorn.Server(config).serve)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["import"]:
        return run_import(argv[1:])
    args = parse_args(argv)
    try:
        level = log_level_name(args)
        logs.configure_logging(logs.Service.COMMERCE, level=getattr(logging, level), records=[PAID_LOGGER])
        process_tracing("qinghe-commerce")  # off unless the OTEL variables turn it on (docs/tracing.md)
        keys = CommerceKeys.from_environment(args.state_dir)
        directory = keys.directory()  # a bad directory refuses the start, in one line
        require_valid_knowledge()  # so does a bad SUPPORT_KNOWLEDGE_DIR (the quote reads it)
        identity = None if args.http else directory.identity(args.profile)
        secret = token_secret_from_env() if args.http else ""
        engine = open_database(args)
        tenants = [entry.tenant for entry in directory.tenants]  # counted from 0 (commerce_server/metrics.py)
        serving = serve_metrics(health=database_answers(engine), tenants=tenants)  # COMMERCE_METRICS_PORT: --http
    except SupportError as error:
        print(f"{PROG}: {error.message}", file=sys.stderr)
        return 2
    except SQLAlchemyError as error:
        print(f"{PROG}: cannot open the commerce database ({type(error).__name__})", file=sys.stderr)
        return 1

    if serving is not None:
        print(f"{PROG}: {serving}", file=sys.stderr, flush=True)
    # The receipt key is read on the first refund (a server that only answers reads needs none).
    try:
        if identity is None:
            serve_http(engine, secret, keys, args, level)
        else:
            build_stdio_server(engine, identity, log_level=level, keys=keys).run("stdio")
    finally:
        flush_process_tracing()
    return 0


if __name__ == "__main__":
    sys.exit(main())

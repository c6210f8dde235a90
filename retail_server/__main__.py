"""Command line: ``python -m retail_server``.

    python -m retail_server load --tau2-db PATH --state-dir S     # τ²-bench's db.json into retail.db
    python -m retail_server enroll --state-dir S                  # its customers into the directory
    python -m retail_server --customer ID --case CASE --state-dir S   # serve one customer's case (stdio)
    python -m retail_server --http --port 8766 --state-dir S          # Streamable HTTP: tokens name both

The database is ``RETAIL_DATABASE_URL``, else ``<state dir>/retail.db``; the directory and the receipt
key are the commerce server's (``COMMERCE_DIRECTORY``, ``COMMERCE_SIGNING_KEY``, else the files
``starter.py init`` writes under the state dir). Over HTTP each request's bearer token (minted with
``COMMERCE_TOKEN_SECRET``, as for the commerce server) names the customer and the case, and must grant
``orders:read`` for a read, ``actions:write`` for a proposal or an execution. stdout belongs to the stdio
transport: logs go to stderr. Bad arguments and bad configuration print one line on stderr and exit
non-zero.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from pathlib import Path
from typing import NoReturn

import anyio
import uvicorn
from pydantic import ValidationError
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from commerce_server.db import make_engine
from commerce_server.keys import CommerceKeys
from commerce_server.tokens import token_secret_from_env
from contracts.errors import SupportError
from contracts.retail import RETAIL_TENANT
from keystore import directory_location
from keystore.directory_edit import DirectoryEditError
from keystore.directory_file import write_directory
from retail_server.db import create_retail_schema, retail_database_url
from retail_server.directory import enrol_retail
from retail_server.records import LoadError, customer_names, export_database, load_database
from retail_server.server import bound, build_retail_http_server, build_retail_server
from retail_server.tau2_format import RetailDatabase

PROG = "retail_server"


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog=PROG, description="The retail tenant's commerce MCP server (τ²-bench retail).")
    parser.add_argument("--state-dir", default=".state", help="where retail.db and the directory live")
    commands = parser.add_subparsers(dest="command")
    load = commands.add_parser("load", help="load τ²-bench's retail db.json into an empty database")
    load.add_argument("--tau2-db", required=True, type=Path, help="the domain's db.json")
    commands.add_parser("enroll", help="add the retail tenant and the database's customers to the directory")
    export = commands.add_parser("export", help="write the database in τ²-bench's format (for its hash)")
    export.add_argument("--out", required=True, type=Path)
    parser.add_argument("--customer", help="serve over stdio: the signed-in customer (a user id of the domain)")
    parser.add_argument("--case", help="serve over stdio: the case the proposals belong to")
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP: each request's token names both")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP only: the address to listen on")
    parser.add_argument("--port", type=int, default=8766, help="HTTP only: the port to listen on")
    return parser


def _engine(state_dir: str) -> Engine:
    url = retail_database_url(state_dir)
    if url.startswith("sqlite"):
        Path(state_dir).mkdir(parents=True, exist_ok=True)
    engine = make_engine(url)
    create_retail_schema(engine)
    return engine


def _load(args: argparse.Namespace) -> int:
    try:
        data = RetailDatabase.model_validate_json(args.tau2_db.read_bytes())
    except OSError as error:
        print(f"{PROG}: cannot read {args.tau2_db} ({error.strerror})", file=sys.stderr)
        return 2
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        print(
            f"{PROG}: {args.tau2_db} is not τ²-bench's retail database: {first['loc']}: {first['msg']}", file=sys.stderr
        )
        return 2
    load_database(_engine(args.state_dir), data)
    print(f"loaded {len(data.products)} products, {len(data.users)} customers, {len(data.orders)} orders")
    return 0


def _enroll(args: argparse.Namespace) -> int:
    keys = CommerceKeys.from_environment(args.state_dir)
    location = directory_location(Path(args.state_dir))
    if "://" in location:
        print(f"{PROG}: the directory is served at a URL; enrol the retail tenant where it is edited", file=sys.stderr)
        return 2
    customers = customer_names(_engine(args.state_dir))
    write_directory(Path(location), enrol_retail(keys.directory(), customers))
    print(f"enrolled tenant {RETAIL_TENANT} with {len(customers)} customers in {location}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    keys = CommerceKeys.from_environment(args.state_dir)
    directory = keys.directory()  # a bad directory refuses the start, in one line
    if args.http:
        secret = token_secret_from_env()
        server = build_retail_http_server(
            _engine(args.state_dir), secret=secret, public_url=f"http://{args.host}:{args.port}", keys=keys
        )
        app = server.streamable_http_app(stateless_http=True, json_response=True, host=args.host)
        config = uvicorn.Config(app, host=args.host, port=args.port, log_config=None, log_level="warning")
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(uvicorn.Server(config).serve)
        return 0
    identity = directory.identity(args.customer)
    if identity.tenant != RETAIL_TENANT:
        print(f"{PROG}: {args.customer} is not a customer of tenant {RETAIL_TENANT}", file=sys.stderr)
        return 2
    build_retail_server(_engine(args.state_dir), bound(identity, args.case), keys=keys).run("stdio")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if args.command is None and not args.http and not (args.customer and args.case):
        parser.error("serving over stdio needs --customer and --case (or --http, or a command: load, enroll, export)")
    if args.http and (args.customer or args.case):
        parser.error("--customer and --case are for stdio; over HTTP each request's token names both")
    if not 1 <= args.port <= 65535:
        parser.error(f"--port must be 1-65535, not {args.port}")
    try:
        if args.command == "load":
            return _load(args)
        if args.command == "enroll":
            return _enroll(args)
        if args.command == "export":
            args.out.write_text(export_database(_engine(args.state_dir)).model_dump_json(), encoding="utf-8")
            return 0
        return _serve(args)
    except (SupportError, LoadError, DirectoryEditError) as error:
        print(f"{PROG}: {getattr(error, 'message', str(error))}", file=sys.stderr)
        return 2
    except SQLAlchemyError as error:
        print(f"{PROG}: the retail database refused the request ({type(error).__name__})", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""``python -m commerce_server import FILE``: load one tenant's data file into the commerce database.

    python -m commerce_server import docs/examples/east-orders.json --state-dir .state

The file is validated before the database is opened; the import is one transaction. Success prints
one line on stdout (what was added, what was already there) and exits 0; a bad file or a conflict
prints ``commerce_server: <problem>`` on stderr and exits 2, a database failure exits 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from sqlalchemy.exc import SQLAlchemyError

from commerce_server.db import database_url, make_engine
from commerce_server.importer import import_tenant_data, load_import_file
from contracts.errors import SupportError

PROG = "commerce_server"


class _ImportParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: {message} (see import --help)\n")


def parse_import_args(argv: list[str]) -> argparse.Namespace:
    parser = _ImportParser(prog=f"{PROG} import", description="Load one tenant's products and orders from a JSON file.")
    parser.add_argument("file", help="the import file (format: docs/adopting.md)")
    parser.add_argument("--state-dir", default=".state", help="where the default SQLite database lives")
    parser.add_argument("--database-url", help="SQLAlchemy URL; overrides COMMERCE_DATABASE_URL and the SQLite default")
    return parser.parse_args(argv)


def run_import(argv: list[str]) -> int:
    """The ``import`` subcommand; returns the exit status."""
    args = parse_import_args(argv)
    try:
        data = load_import_file(args.file)
    except SupportError as error:
        print(f"{PROG}: {error.message}", file=sys.stderr)
        return 2
    url = args.database_url or database_url(args.state_dir)
    if url.startswith("sqlite") and not args.database_url:
        Path(args.state_dir).mkdir(parents=True, exist_ok=True)
    engine = make_engine(url)
    try:
        report = import_tenant_data(engine, data)
    except SupportError as error:
        print(f"{PROG}: {error.message}", file=sys.stderr)
        return 2
    except SQLAlchemyError as error:
        print(
            f"{PROG}: the commerce database refused the import ({type(error).__name__}); nothing was written",
            file=sys.stderr,
        )
        return 1
    finally:
        engine.dispose()
    print(report.sentence())
    return 0

"""Command line: ``python -m commerce_contract``.

    python -m commerce_contract --stdio "python -m commerce_server --profile alice --state-dir .state"
    COMMERCE_TOKEN_SECRET=... python -m commerce_contract --url http://127.0.0.1:8765/mcp --state-dir .state

Exit status: 0 when no check failed (a check the fixture gives nothing to run with is ``SKIP``, named
in the summary), 1 when any failed (or the server could not be reached), 2 for bad arguments, a bad
fixture or key material the kit cannot use (one line on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import NoReturn

from commerce_contract.context import Run
from commerce_contract.fixture import Fixture, KitKeys, load_fixture
from commerce_contract.retail_profile import RETAIL_CHECKS, RetailRun, load_retail_fixture
from commerce_contract.runner import all_checks, check_names, exit_status, run_checks, summary
from commerce_contract.target import Target, http_target, stdio_target
from commerce_server.tokens import TOKEN_SECRET_ENV, token_secret_from_env
from contracts.credentials import ISSUER_KID
from contracts.errors import SupportError
from contracts.identity import Identity
from keystore import load_private_key, private_key_path

PROG = "commerce_contract"
DESCRIPTION = (
    "The commerce contract's conformance kit (docs/commerce-contract.md): checks a commerce MCP server's "
    "tools, error classes, identity scoping, quote exactness, idempotent refunds, approval verification (the "
    "applicant token, the reviewer's tenant, the tenant's approval policy and closed cases included) and signed "
    "receipts. WARNING: it PAYS (simulated) one refund of the fixture's refundable order on the target server per "
    "run, on fresh case ids; run it against a test ledger."
)


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = _OneLineParser(prog=PROG, description=DESCRIPTION, epilog=f"checks, in order: {', '.join(check_names())}")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--stdio", metavar="CMD", help="start the server with CMD (acting for the fixture customer)")
    target.add_argument("--url", help=f"a Streamable HTTP server; bearer tokens are minted with ${TOKEN_SECRET_ENV}")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(".state"),
        help="holds keys/: the directory the server trusts, issuer.pem and the reviewers' keys (starter.py init)",
    )
    parser.add_argument("--directory", help="the server's directory (file or https URL); default <state dir>/keys/")
    parser.add_argument("--fixture", type=Path, help="JSON naming the customer and orders; default the demo data")
    parser.add_argument(
        "--profile",
        choices=("commerce", "retail"),
        default="commerce",
        help="commerce: our contract's tools (default); retail: τ²-bench's retail tools (docs/evaluation.md)",
    )
    args = parser.parse_args(argv)
    if args.stdio is not None and not args.stdio.strip():
        parser.error("--stdio needs a command")
    return args


def prepare(args: argparse.Namespace) -> tuple[Fixture, KitKeys, Identity]:
    """The fixture, the keys and the customer; a :class:`SupportError` names what cannot be used."""
    fixture = load_fixture(args.fixture)
    keys = KitKeys.load(args.state_dir, args.directory)
    customer = keys.customer(fixture.customer)
    keys.reviewers(customer.tenant, 1)
    keys.other_customer(customer, fixture.other_customer)
    keys.foreign_reviewer(customer.tenant, fixture.foreign_reviewer)
    load_private_key(private_key_path(args.state_dir, ISSUER_KID))
    return fixture, keys, customer


async def conform(
    target: AbstractAsyncContextManager[Target], fixture: Fixture, keys: KitKeys, customer: Identity
) -> int:
    async with target as opened:
        print(f"conformance: checking {opened.description} as {customer.subject} (this PAYS one simulated refund)")
        results = await run_checks(
            Run(opened, fixture, keys, customer), all_checks(), lambda result: print(result.line(), flush=True)
        )
        print(summary(results, opened.description))
    return exit_status(results)


async def conform_retail(target: AbstractAsyncContextManager[Target], args: argparse.Namespace) -> int:
    """The retail profile over ``target``, for the fixture's customer."""
    fixture = load_retail_fixture(args.fixture)
    keys = KitKeys.load(args.state_dir, args.directory)
    customer = keys.customer(fixture.customer)
    async with target as opened:
        print(f"conformance: checking {opened.description} as {customer.subject} (retail; this CANCELS one order)")
        run = RetailRun(opened, fixture, keys, customer)
        results = await run_checks(run, RETAIL_CHECKS, lambda result: print(result.line(), flush=True))
        print(summary(results, opened.description))
    return exit_status(results)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.profile == "retail":
        if args.url:
            print(f"{PROG}: the retail profile runs over stdio (--stdio)", file=sys.stderr)
            return 2
        try:
            return asyncio.run(conform_retail(stdio_target(args.stdio), args))
        except SupportError as error:
            print(f"{PROG}: {error.message}", file=sys.stderr)
            return 2
        except Exception as error:  # the server never started or was lost outside any check
            cause = _sole(error)
            print(f"{PROG}: cannot talk to the server ({type(cause).__name__}: {cause})", file=sys.stderr)
            return 1
    try:
        fixture, keys, customer = prepare(args)
        secret = token_secret_from_env() if args.url else ""
    except SupportError as error:
        print(f"{PROG}: {error.message}", file=sys.stderr)
        return 2
    target = stdio_target(args.stdio) if args.stdio else http_target(args.url, secret, customer)
    try:
        return asyncio.run(conform(target, fixture, keys, customer))
    except Exception as error:  # the server never started or was lost outside any check
        cause = _sole(error)
        print(f"{PROG}: cannot talk to the server ({type(cause).__name__}: {cause})", file=sys.stderr)
        return 1


def _sole(error: BaseException) -> BaseException:
    """The one error inside the SDK's task groups' nested exception groups."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


if __name__ == "__main__":
    sys.exit(main())

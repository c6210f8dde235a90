"""Run the support-case worker (everything it handles is fictional).

    python worker.py [--state-dir DIR]

Environment: ``TEMPORAL_ADDRESS`` (default localhost:7233), ``TEMPORAL_NAMESPACE`` (default
"default"), ``SUPPORT_STATE_DIR`` (default .state), ``COMMERCE_DATABASE_URL`` (default: SQLite in the
state dir) and the model provider variables (see activities/model_settings.py; none set means the
rehearsal model). A configuration error prints one line and exits 2; an unreachable Temporal server
prints one line and exits 1. SIGINT or SIGTERM stops the worker and closes its commerce sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.model_settings import load_model_settings
from activities.startup_checks import ensure_search_attributes, refuse_another_ledger, worker_identity
from activities.worker_setup import build_worker, commerce_gateway
from contracts.case import REHEARSAL_LABEL
from contracts.errors import SupportError
from contracts.names import TASK_QUEUE

GRACEFUL_SHUTDOWN = timedelta(seconds=10)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run the support-case worker.")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(os.environ.get("SUPPORT_STATE_DIR") or ".state"),
        help="where the commerce database, preferences and case records live (env SUPPORT_STATE_DIR)",
    )
    parser.add_argument(
        "--task-queue",
        default=os.environ.get("SUPPORT_TASK_QUEUE") or TASK_QUEUE,
        help=f"task queue to poll (env SUPPORT_TASK_QUEUE; default {TASK_QUEUE})",
    )
    return parser.parse_args(argv)


async def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    address = os.environ.get("TEMPORAL_ADDRESS") or "localhost:7233"
    namespace = os.environ.get("TEMPORAL_NAMESPACE") or "default"
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for chatty in ("httpx", "httpx2"):  # one INFO line per HTTP request (model, commerce) drowns the rest
        logging.getLogger(chatty).setLevel(logging.WARNING)

    try:
        settings = load_model_settings()
    except SupportError as error:
        print(f"worker: configuration error: {error}", file=sys.stderr)
        return 2
    label = (
        " (REHEARSAL: a deterministic rule-based stand-in, not a language model)"
        if (settings.provider == REHEARSAL_LABEL)
        else ""
    )
    print(f"worker: model {settings.describe()}{label}", flush=True)

    try:
        client = await Client.connect(address, namespace=namespace, data_converter=pydantic_data_converter)
    except Exception as error:
        print(
            f"worker: cannot connect to Temporal at {address} (namespace {namespace}): {error}",
            file=sys.stderr,
        )
        return 1

    try:
        added = await ensure_search_attributes(client)
    except SupportError as error:
        print(f"worker: configuration error: {error}", file=sys.stderr)
        return 2
    if added:
        print(f"worker: registered search attributes {', '.join(added)} on namespace {namespace!r}", flush=True)

    try:
        commerce = commerce_gateway(args.state_dir, os.environ.get("COMMERCE_DATABASE_URL") or None)
        checked = await commerce.check()
        print(f"worker: {checked.description}", flush=True)
        await refuse_another_ledger(client, args.task_queue, checked.ledger_id)
        worker, cleanup = build_worker(
            client,
            args.state_dir,
            model_settings=settings,
            commerce=commerce,
            task_queue=args.task_queue,
            graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
            identity=worker_identity(checked.ledger_id),
        )
    except SupportError as error:
        print(f"worker: configuration error: {error}", file=sys.stderr)
        return 2

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    print(
        f"worker: polling task queue {args.task_queue!r} on {address} namespace {namespace!r}; "
        f"state dir {args.state_dir}",
        flush=True,
    )
    try:
        async with worker:
            await stop.wait()
    except Exception as error:
        print(f"worker: stopped after a fatal worker error: {error}", file=sys.stderr)
        return 1
    finally:
        await cleanup()
    print("worker: stopped", flush=True)
    return 0


def run(argv: list[str] | None = None) -> None:
    """Entry point: run :func:`main` and end the process with its exit status.

    The process ends with ``os._exit`` after flushing: the Temporal client's native runtime threads can
    otherwise crash the interpreter while it finalizes (an abort instead of the status), which turned a
    one-line refusal into a core dump.
    """
    code = asyncio.run(main(argv))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()

"""The support-case worker: the composition root that builds every part and runs them.

    python worker.py [--state-dir DIR] [--task-queue NAME] [--set-current]

Everything the worker handles is fictional. This module is the process: it checks everything before
the worker polls, runs it until SIGINT or SIGTERM, and turns every refusal into one line and an exit
status. The worker's parts are built and wired in :mod:`case_worker` (``support_worker``), which the dev
stack and the tests use too. The environment it reads is listed at :func:`main`.
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
from temporalio.runtime import Runtime, TelemetryConfig

from activities.model.model_prices import ModelPrices
from activities.model.model_settings import load_model_settings
from activities.runtime.known_series import known_labels
from activities.runtime.metrics_runtime import beyond_loopback, metrics_endpoint, metrics_runtime
from activities.runtime.startup_checks import (
    check_directory,
    ensure_search_attributes,
    refuse_another_ledger,
    worker_identity,
)
from case_client import TemporalTarget, connect, live_poller_identities
from case_client._busy_server import asks_to_try_again
from case_client.deployment import Release, current_build_id, make_current, release
from case_tracing import flush_process_tracing, process_tracing
from case_worker import commerce_gateway, support_worker
from cli.exit_codes import ExitCode, exit_code_for_error
from contracts import logs
from contracts.case import REHEARSAL_LABEL
from contracts.errors import SupportError
from contracts.names import TASK_QUEUE
from keystore import DIRECTORY_ENV, directory_location
from keystore.outside_issuer import OutsideIssuer
from knowledge.check import require_valid_knowledge

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
    parser.add_argument(
        "--set-current",
        action="store_true",
        default=os.environ.get(SET_CURRENT_ENV, "").strip().lower() in ("1", "true", "yes"),
        help="make this build the deployment's current version once it polls, so new cases start on it "
        f"(env {SET_CURRENT_ENV}=1; without it only a deployment with no current version gets this one)",
    )
    return parser.parse_args(argv)


SET_CURRENT_ENV = "SUPPORT_SET_CURRENT_VERSION"


async def route_new_cases(client: Client, ours: Release, *, set_current: bool) -> str:
    """Make ``ours`` current where asked (or where the deployment has no current version yet, as on a
    fresh dev server); return the line that says which version new cases start on.

    Several workers of one build may start at once (a rollout of replicas, a restart under load): the
    server may then ask them to try again later, and each waits and asks again for up to about a minute
    (:data:`case_client._busy_server.START_BACKOFF`) before it gives up with :class:`TransientError`
    (exit 5); the one that makes the build current first says "made", the others "is"."""
    current = await current_build_id(client, ours.version.deployment_name)
    name, build = ours.version.deployment_name, ours.build_id
    if current == build:
        return f"worker: build {build!r} is the current version: new cases start on it"
    if set_current or current is None:
        if not await make_current(client, ours.version):  # another worker of this build was first
            return f"worker: build {build!r} is the current version: new cases start on it"
        was = f" (was {current!r})" if current else ""
        return f"worker: build {build!r} made the current version{was}: new cases start on it"
    return (
        f"worker: build {build!r} registered, not current: new cases start on {current!r}; cases pinned to "
        f"this build run here. To route new cases here: temporal worker deployment set-current-version "
        f"--deployment-name {name} --build-id {build} (or restart with --set-current)"
    )


def refused(error: SupportError) -> int:
    """Print ``error`` as the worker's one line on stderr; return its exit status (2, or 5: try again)."""
    code = exit_code_for_error(error)
    kind = "unavailable" if code is ExitCode.UNAVAILABLE else "configuration error"
    print(f"worker: {kind}: {error}", file=sys.stderr)
    return int(code)


def stopped_by(error: Exception) -> int:
    """Print the one line of a worker stopped by ``error`` (not a :class:`SupportError`); return its exit
    status: 5 (try again) when it is the server asking to try again later (a start-up RPC, or the SDK
    worker's registration or polling), else 1 (a bug)."""
    said = " ".join(str(error).split())  # one line, whatever the error's text holds
    if asks_to_try_again(error):
        print(f"worker: unavailable: the Temporal server asked to try again later: {said}", file=sys.stderr)
        return int(ExitCode.UNAVAILABLE)
    print(f"worker: stopped after a fatal worker error: {said}", file=sys.stderr)
    return int(ExitCode.UNEXPECTED)


async def main(argv: list[str] | None = None) -> int:
    """Check everything, then run the worker until SIGINT or SIGTERM; return the exit status.

    Environment: ``TEMPORAL_ADDRESS`` (default localhost:7233), ``TEMPORAL_NAMESPACE`` (default
    "default"), ``SUPPORT_STATE_DIR`` (default .state), ``SUPPORT_TASK_QUEUE``, ``COMMERCE_DATABASE_URL``
    (default: SQLite in the state dir), ``SUPPORT_DIRECTORY`` (the support directory: tenants, people,
    their public keys and approval policy; default: the state dir's keys/directory.json),
    ``SUPPORT_APPLICANT_*`` (an outside issuer of applicant tokens, keystore/outside_issuer.py), the model
    provider variables (see activities/model/model_settings.py; none set means the rehearsal model),
    ``SUPPORT_BUILD_ID`` (the build id of this worker's deployment version; default: the package
    version and git commit), ``SUPPORT_SET_CURRENT_VERSION`` (1: make this build current, as
    ``--set-current``),
    ``SUPPORT_LOG_LEVEL`` (the level of the per-activity log lines, default WARNING; the worker's own
    start lines are always printed), ``SUPPORT_LOG_FORMAT`` (``plain``, the default, or ``json``: one
    JSON object per line, for the worker's log lines and its stdio commerce servers'; contracts/logs.py)
    and ``SUPPORT_KNOWLEDGE_DIR`` (a merchant's own documents, skills and refund rules,
    docs/knowledge.md; default: the packaged knowledge; one with any problem refuses);
    ``SUPPORT_MODEL_PRICES`` (the operator's price table, docs/usage.md; default: nothing priced).
    Every check runs before the worker polls: a configuration error
    (a bad setting, an unknown namespace, a directory that is missing, unreachable, plain http or
    invalid) prints one line and exits 2; an unreachable Temporal server, or one that still asks to try
    again later after about a minute of asking again (several workers starting at once), prints one
    line and exits 5 (try again). SIGINT or SIGTERM stops the worker and closes its commerce sessions.
    Tracing is off unless the standard OpenTelemetry variables turn it on (``OTEL_TRACES_EXPORTER``,
    ``OTEL_EXPORTER_OTLP_ENDPOINT``; see case_tracing.py and docs/tracing.md); a bad tracing setting,
    a malformed endpoint among them, is a configuration error too. Metrics are off unless
    ``SUPPORT_METRICS_PORT`` is set (``SUPPORT_METRICS_HOST``, default 127.0.0.1; see
    activities/runtime/metrics_runtime.py and docs/operations.md): a bad port, or one that cannot be bound, is a
    configuration error.
    """
    args = parse_args(argv)
    try:
        level = logs.log_level(default="WARNING")  # one INFO line per activity and HTTP request drowns the rest
        logs.log_format()  # a bad SUPPORT_LOG_FORMAT refuses the start, before anything is logged
        ours = release()
        settings = load_model_settings()
        metrics = metrics_endpoint()
        directory = directory_location(args.state_dir)
        listed = check_directory(directory, from_env=bool(os.environ.get(DIRECTORY_ENV)))
        OutsideIssuer.from_environment()
        ModelPrices.from_environment()  # a bad SUPPORT_MODEL_PRICES table refuses the start
        require_valid_knowledge()
    except SupportError as error:
        return refused(error)
    logs.configure_logging(logs.Service.WORKER, level=level)
    # one INFO line per HTTP request (model, commerce) drowns the rest even at INFO
    logging.getLogger("httpx2").setLevel(max(level, logging.WARNING))
    if metrics is None:  # the SDK's Rust core logs through the same handler (the metrics runtime: its own)
        Runtime.set_default(Runtime(telemetry=TelemetryConfig(logging=logs.core_logging())), error_if_already_set=False)
    label = (
        " (REHEARSAL: a deterministic rule-based stand-in, not a language model)"
        if (settings.provider == REHEARSAL_LABEL)
        else ""
    )
    print(f"worker: model {settings.describe()}{label}", flush=True)
    print(f"worker: {ours.describe()}", flush=True)

    try:
        process_tracing("qinghe-support-worker")
        target = TemporalTarget.from_env()
        address, namespace = target.address, target.namespace
        models = [(str(s.provider), s.model) for s in (settings, settings.reviewer) if s is not None]
        known = known_labels(ours.build_id, namespace, args.task_queue, listed, models)  # counters at 0
        runtime = metrics_runtime(metrics, known) if metrics is not None else None
        if metrics is not None:
            print(f"worker: metrics on {metrics.url}", flush=True)
            if (exposed := beyond_loopback(metrics)) is not None:
                print(exposed, file=sys.stderr, flush=True)
        client = await connect(target, runtime=runtime)
        added = await ensure_search_attributes(client)
    except SupportError as error:
        return refused(error)
    if added:
        print(f"worker: registered search attributes {', '.join(added)} on namespace {namespace!r}", flush=True)

    try:
        commerce = commerce_gateway(args.state_dir, os.environ.get("COMMERCE_DATABASE_URL") or None)
        checked = await commerce.check()
        print(f"worker: {checked.description}", flush=True)
        refuse_another_ledger(await live_poller_identities(client, args.task_queue), args.task_queue, checked.ledger_id)
    except SupportError as error:
        return refused(error)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        async with support_worker(
            client,
            args.state_dir,
            model_settings=settings,
            commerce=commerce,
            directory=directory,
            task_queue=args.task_queue,
            deployment=ours.version,
            graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
            identity=worker_identity(checked.ledger_id),
        ):
            print(await route_new_cases(client, ours, set_current=args.set_current), flush=True)
            print(
                f"worker: polling task queue {args.task_queue!r} on {address} namespace {namespace!r}; "
                f"state dir {args.state_dir}",
                flush=True,
            )
            await stop.wait()
    except SupportError as error:
        return refused(error)
    except Exception as error:
        return stopped_by(error)
    print("worker: stopped", flush=True)
    return 0


def run(argv: list[str] | None = None) -> None:
    """Entry point: run :func:`main` and end the process with its exit status.

    The process ends with ``os._exit`` after flushing (buffered spans too): the Temporal client's native
    runtime threads can otherwise crash the interpreter while it finalizes (an abort instead of the
    status), which turned a one-line refusal into a core dump.
    """
    code = asyncio.run(main(argv))
    flush_process_tracing()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()

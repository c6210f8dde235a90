"""Connecting to Temporal, finding a worker, reading a case and waiting for it (no printing here)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from contracts.case import TERMINAL_STATUSES, CaseStatus, CaseView
from contracts.errors import AuthorizationError, BusinessError, TransientError
from contracts.identity import Identity, Role
from contracts.names import TASK_QUEUE

CASE_NOT_ACCESSIBLE = "No such case is available to this profile."
QUERY_TIMEOUT = timedelta(seconds=5)
"""A worker answers a status query in milliseconds; five seconds without an answer means trouble."""
RPC_TIMEOUT = timedelta(seconds=5)
POLLER_FRESH_SECONDS = 90.0
"""A live worker re-polls its task queue at least once a minute (a long poll lasts up to ~70 s); a
poller seen longer ago than this is gone (Temporal lists dead pollers for a few minutes)."""
WORKER_GRACE_SECONDS = 3.0


@dataclass(frozen=True)
class TemporalTarget:
    """Where cases live: server address, namespace and the task queue workers poll."""

    address: str = "localhost:7233"
    namespace: str = "default"
    task_queue: str = TASK_QUEUE

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> TemporalTarget:
        """``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE`` and ``SUPPORT_TASK_QUEUE``, else the defaults."""
        return cls(
            address=environ.get("TEMPORAL_ADDRESS") or cls.address,
            namespace=environ.get("TEMPORAL_NAMESPACE") or cls.namespace,
            task_queue=environ.get("SUPPORT_TASK_QUEUE") or cls.task_queue,
        )


async def connect(target: TemporalTarget) -> Client:
    """A client with the pydantic data converter; an unreachable server is ``temporal_unavailable``."""
    try:
        return await Client.connect(target.address, namespace=target.namespace, data_converter=pydantic_data_converter)
    except RuntimeError as error:
        raise TransientError(
            "temporal_unavailable",
            f"cannot reach Temporal at {target.address} ({error}); start a server (make dev-server) "
            "or set TEMPORAL_ADDRESS",
        ) from None


def workflow_id(case_id: str) -> str:
    return case_id if case_id.startswith("case-") else f"case-{case_id}"


def case_id_for(request_key: str | None, identity: Identity) -> str:
    """A new random case id, or one derived from the applicant and request key (same key, same case).

    The applicant is part of the derivation, so one customer's key can never name another's case.
    """
    if request_key is None:
        return uuid.uuid4().hex[:12]
    scoped = f"{identity.tenant}:{identity.subject}:{request_key}"
    return "k" + hashlib.sha256(scoped.encode("utf-8")).hexdigest()[:15]


def may_see(view: CaseView, identity: Identity) -> bool:
    """The applicant sees their case; reviewers see the cases of their own tenant."""
    return view.applicant == identity.subject or (identity.role is Role.REVIEWER and identity.tenant == view.tenant)


async def live_poller_identities(client: Client, task_queue: str) -> list[str]:
    """Identities of the workers that polled ``task_queue`` (workflow or activity tasks) within
    :data:`POLLER_FRESH_SECONDS`."""
    identities: list[str] = []
    for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        request = DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=task_queue), task_queue_type=kind
        )
        try:
            response = await client.workflow_service.describe_task_queue(request, timeout=RPC_TIMEOUT)
        except RPCError as error:
            raise TransientError(
                "temporal_unavailable", f"cannot describe task queue {task_queue!r}: {error}"
            ) from None
        now = time.time()
        identities += [
            p.identity for p in response.pollers if now - p.last_access_time.ToSeconds() <= POLLER_FRESH_SECONDS
        ]
    return sorted(set(identities))


async def live_pollers(client: Client, task_queue: str) -> int:
    """How many distinct workers poll ``task_queue`` now."""
    return len(await live_poller_identities(client, task_queue))


async def require_worker(
    client: Client, task_queue: str, *, start_hint: str, grace_seconds: float = WORKER_GRACE_SECONDS
) -> None:
    """Raise ``worker_unavailable`` (one line, with how to start one) when no worker polls ``task_queue``.

    A worker that started a moment ago may not have polled yet, so an empty queue is asked again for
    up to ``grace_seconds`` before the answer stands.
    """
    deadline = _now() + grace_seconds
    while await live_pollers(client, task_queue) == 0:
        if _now() >= deadline:
            raise TransientError(
                "worker_unavailable",
                f"no worker polls task queue {task_queue!r} on {client.service_client.config.target_host} "
                f"(namespace {client.namespace}); start one: {start_hint}",
            )
        await asyncio.sleep(0.5)


def case_handle(client: Client, case_id: str) -> WorkflowHandle:
    """The handle of a case's latest run (it follows continue-as-new)."""
    return client.get_workflow_handle(workflow_id(case_id), result_type=CaseView)


async def read_case(
    client: Client, case_id: str, identity: Identity, *, start_hint: str, check_worker: bool = True
) -> CaseView:
    """The case as the workflow reports it (a closed case answers from its result), if ``identity``
    may see it. A missing case and someone else's case give the same error. A running case whose task
    queue has no worker is ``worker_unavailable`` at once (``check_worker``, one describe before the
    query), and so is one whose listed worker does not answer the query within seconds."""
    handle = case_handle(client, case_id)
    try:
        description = await handle.describe(rpc_timeout=RPC_TIMEOUT)
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            raise AuthorizationError("case_not_accessible", CASE_NOT_ACCESSIBLE) from None
        raise TransientError("temporal_unavailable", f"cannot describe {handle.id}: {error.message}") from None
    if description.status in (None, WorkflowExecutionStatus.RUNNING):
        if check_worker:
            await require_worker(client, description.task_queue, start_hint=start_hint)
        view = await _query_status(client, handle, description.task_queue, start_hint=start_hint)
    elif description.status is WorkflowExecutionStatus.COMPLETED:
        view = await handle.result()
    else:
        raise BusinessError("case_not_available", f"case workflow {handle.id} ended as {description.status.name}")
    if not may_see(view, identity):
        raise AuthorizationError("case_not_accessible", CASE_NOT_ACCESSIBLE)
    return view


async def _query_status(client: Client, handle: WorkflowHandle, task_queue: str, *, start_hint: str) -> CaseView:
    try:
        return await handle.query("status", result_type=CaseView, rpc_timeout=QUERY_TIMEOUT)
    except RPCError as error:
        await require_worker(client, task_queue, start_hint=start_hint, grace_seconds=0)
        raise TransientError(
            "worker_unavailable",
            f"the worker on task queue {task_queue!r} did not answer a status query within "
            f"{QUERY_TIMEOUT.total_seconds():.0f}s ({error.message}); check worker.py",
        ) from None


async def wait_until_settled(
    client: Client,
    case_id: str,
    identity: Identity,
    *,
    wait_seconds: float,
    start_hint: str,
    on_progress: Callable[[CaseView], None] = lambda view: None,
) -> CaseView:
    """Poll the status query until the case waits for a reviewer (its record written) or ends."""
    deadline = _now() + wait_seconds
    first = True
    while True:
        # The worker is checked once; after that a query that goes unanswered says whether it left.
        view = await read_case(client, case_id, identity, start_hint=start_hint, check_worker=first)
        first = False
        if view.status in TERMINAL_STATUSES:
            # Ended, but the workflow may still be writing its record: its result is the last word.
            return await wait_until_ended(client, case_id, wait_seconds=max(deadline - _now(), 1.0))
        if view.status is CaseStatus.WAITING_APPROVAL and view.record_attempted:
            return view
        on_progress(view)
        if _now() > deadline:
            raise TransientError(
                "wait_timeout", f"case {view.case_id} still running after {wait_seconds:.0f}s; check worker.py"
            )
        await asyncio.sleep(0.5)


async def wait_until_ended(client: Client, case_id: str, *, wait_seconds: float) -> CaseView:
    """Wait for the case workflow (following continue-as-new) to finish."""
    try:
        return await asyncio.wait_for(case_handle(client, case_id).result(), timeout=wait_seconds)
    except TimeoutError:
        raise TransientError("wait_timeout", f"case {case_id} has not ended after {wait_seconds:.0f}s") from None


def _now() -> float:
    return asyncio.get_running_loop().time()

"""Reading a case and waiting for it: the status query as is, or checked for a person (no printing here)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from case_client._codes import ClientErrorCode, WaitCode
from case_client._connection import RPC_TIMEOUT, now, require_worker
from case_client._rules import CASE_NOT_ACCESSIBLE, may_see
from contracts.case import TERMINAL_STATUSES, CaseStatus, CaseView
from contracts.case_input import CaseInput
from contracts.errors import AuthorizationError, BusinessError, TransientError
from contracts.identity import Identity
from contracts.names import QueryName, workflow_id

QUERY_TIMEOUT = timedelta(seconds=5)
"""A worker answers a status query in milliseconds; five seconds without an answer means trouble."""


def workflow_handle(client: Client, case_id: str) -> WorkflowHandle:
    """The handle of a case's latest run (it follows continue-as-new)."""
    return client.get_workflow_handle(workflow_id(case_id), result_type=CaseView)


async def first_start(client: Client, case_id: str) -> tuple[datetime | None, WorkflowExecutionStatus | None]:
    """When the case ``case_id`` was first started (its first run, before any continue-as-new) and the
    status of its latest run; ``(None, None)`` if no such workflow exists."""
    handle = workflow_handle(client, case_id)
    try:
        description = await handle.describe(rpc_timeout=RPC_TIMEOUT)
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            return None, None
        raise TransientError(
            ClientErrorCode.TEMPORAL_UNAVAILABLE, f"cannot describe {handle.id}: {error.message}"
        ) from None
    first_run = description.raw_description.workflow_execution_info.first_run_id
    started = description.start_time
    if first_run and first_run != description.run_id:
        with contextlib.suppress(RPCError):  # past retention: the latest run's start is the best known
            started = (await client.get_workflow_handle(handle.id, run_id=first_run).describe()).start_time
    return started, description.status


async def started_question(client: Client, handle: WorkflowHandle) -> str:
    """The question a case's run was started with, read from its first history event (no worker needed)."""
    async for event in handle.fetch_history_events(page_size=1):
        payloads = event.workflow_execution_started_event_attributes.input.payloads
        [case] = await client.data_converter.decode(payloads, [CaseInput])
        return str(case.question)
    raise TransientError(ClientErrorCode.CASE_NOT_FOUND, f"{handle.id} has no history to read its question from")


async def query_status(handle: WorkflowHandle, *, rpc_timeout: timedelta | None = None) -> CaseView:
    """The ``status`` query, as the workflow answers it now."""
    return await handle.query(QueryName.STATUS, result_type=CaseView, rpc_timeout=rpc_timeout)


class QueryUnanswered(Exception):
    """A status query that timed out: the worker was busy, not gone. A poll loop asks again."""


def query_timed_out(error: RPCError) -> bool:
    """Whether ``error`` is a query's timeout (the server's deadline or the client's) rather than a refusal."""
    return error.status is RPCStatusCode.DEADLINE_EXCEEDED or "Timeout expired" in error.message


async def read_case(
    client: Client, case_id: str, identity: Identity, *, start_hint: str, check_worker: bool = True
) -> CaseView:
    """The case as the workflow reports it (a closed case answers from its result), if ``identity``
    may see it. A missing case and someone else's case give the same error. A running case whose task
    queue has no worker is ``worker_unavailable`` at once (``check_worker``, one describe before the
    query); one whose listed worker does not answer the query within seconds is ``worker_unavailable``
    when no worker polls any more, else ``worker_busy``."""
    return await read_handle(
        client, workflow_handle(client, case_id), identity, start_hint=start_hint, check_worker=check_worker
    )


async def read_handle(
    client: Client,
    handle: WorkflowHandle,
    identity: Identity,
    *,
    start_hint: str,
    check_worker: bool,
    patient: bool = False,
) -> CaseView:
    """:func:`read_case` on ``handle``. ``patient``: a status query that goes unanswered raises
    :class:`QueryUnanswered`, for a wait that judges whether the worker is busy or gone."""
    try:
        description = await handle.describe(rpc_timeout=RPC_TIMEOUT)
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            raise AuthorizationError(ClientErrorCode.CASE_NOT_ACCESSIBLE, CASE_NOT_ACCESSIBLE) from None
        raise TransientError(
            ClientErrorCode.TEMPORAL_UNAVAILABLE, f"cannot describe {handle.id}: {error.message}"
        ) from None
    if description.status in (None, WorkflowExecutionStatus.RUNNING):
        if check_worker:
            await require_worker(client, description.task_queue, start_hint=start_hint)
        try:
            view = await query_status(handle, rpc_timeout=QUERY_TIMEOUT)
        except RPCError as error:
            if patient:  # timed out, or not taken yet: the wait judges the worker
                raise QueryUnanswered from None
            await require_worker(client, description.task_queue, start_hint=start_hint, grace_seconds=0)
            raise TransientError(
                WaitCode.WORKER_BUSY,
                f"the worker on task queue {description.task_queue!r} polls but did not answer a status query "
                f"within {QUERY_TIMEOUT.total_seconds():.0f}s ({error.message}): it is busy or stopping",
            ) from None
    elif description.status is WorkflowExecutionStatus.COMPLETED:
        view = await handle.result()
    else:
        raise BusinessError(
            ClientErrorCode.CASE_NOT_AVAILABLE, f"case workflow {handle.id} ended as {description.status.name}"
        )
    if not may_see(view, identity):
        raise AuthorizationError(ClientErrorCode.CASE_NOT_ACCESSIBLE, CASE_NOT_ACCESSIBLE)
    return view


async def wait_until_settled(
    read: Callable[[bool], Awaitable[CaseView]],
    ended: Callable[[float], Awaitable[CaseView]],
    *,
    wait_seconds: float,
    poll_seconds: float,
    on_progress: Callable[[CaseView], None],
) -> CaseView:
    """Poll ``read`` until the case waits for a reviewer (its record written) or ends; an ended case
    answers from ``ended`` (its result). ``read`` is told whether this is the first read; one that
    raises :class:`QueryUnanswered` is asked again at the next poll, until the deadline."""
    deadline = now() + wait_seconds
    first = True
    while True:
        try:
            view = await read(first)
        except QueryUnanswered:
            if now() > deadline:
                unanswered = f"no status answer within {wait_seconds:.0f}s; check worker.py"
                raise TransientError(ClientErrorCode.WAIT_TIMEOUT, unanswered) from None
            await asyncio.sleep(poll_seconds)
            continue
        first = False
        if view.status in TERMINAL_STATUSES:
            # Ended, but the workflow may still be writing its record: its result is the last word.
            return await ended(max(deadline - now(), 1.0))
        if view.status is CaseStatus.WAITING_APPROVAL and view.record_attempted:
            return view
        on_progress(view)
        if now() > deadline:
            raise TransientError(
                ClientErrorCode.WAIT_TIMEOUT,
                f"case {view.case_id} still running after {wait_seconds:.0f}s; check worker.py",
            )
        await asyncio.sleep(poll_seconds)


async def wait_for(
    handle: WorkflowHandle, done: Callable[[CaseView], bool], *, wait_seconds: float, poll_seconds: float
) -> CaseView:
    """Poll the status query until ``done(view)``."""
    deadline = now() + wait_seconds
    while True:
        view = await query_status(handle)
        if done(view):
            return view
        if now() > deadline:
            raise TransientError(
                ClientErrorCode.WAIT_TIMEOUT,
                f"case {view.case_id} still {view.status}/{view.phase} after {wait_seconds:.0f}s",
            )
        await asyncio.sleep(poll_seconds)


async def wait_until_ended(handle: WorkflowHandle, case_id: str, *, wait_seconds: float) -> CaseView:
    """Wait for the case workflow (following continue-as-new) to finish."""
    try:
        return await asyncio.wait_for(handle.result(), timeout=wait_seconds)
    except TimeoutError:
        raise TransientError(
            ClientErrorCode.WAIT_TIMEOUT, f"case {case_id} has not ended after {wait_seconds:.0f}s"
        ) from None

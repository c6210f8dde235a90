"""The commerce MCP server process SIGKILLed while execute_refund is in flight.

The worker is a real ``worker.py`` process; the commerce server is the ``python -m commerce_server``
child it launched over stdio. To hold the call inside the server, the test takes the SQLite write
lock of the commerce database (``BEGIN IMMEDIATE`` on its own connection), so the server's refund
transaction waits on its busy timeout; nothing in the server or the worker is changed. The test
kills the server once it has read the request (its ``rchar`` grew), then releases the lock.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3

import pytest

from contracts.case import CaseStatus
from contracts.errors import MAX_FAILURE_MESSAGE_CHARS
from tests.faults.fault_support import REFUND_QUESTION, activity_runs, alive, approval, bytes_read, wait_until

pytestmark = pytest.mark.slow


async def test_commerce_server_killed_mid_refund_call_retries_on_a_fresh_session(
    fault_world, temporal_server, workers
) -> None:
    worker = await workers(temporal_server.address, fault_world, "worker").ready()
    handle = await fault_world.start(REFUND_QUESTION)
    view = await fault_world.waiting_for_approval(handle)
    [server] = worker.commerce_servers("alice")
    idle_reads = bytes_read(server)

    lock = sqlite3.connect(fault_world.state_dir / "commerce.db", isolation_level=None, timeout=30)
    try:
        lock.execute("BEGIN IMMEDIATE")
        await handle.signal("review", approval("chen", view.case_id, view.digest))
        started = re.compile(rf"execute_refund case={view.case_id} approval=\S+ order=QH-1001 attempt=1\b")
        await wait_until(lambda: started.search(worker.log()), "the settlement activity to start")
        await wait_until(lambda: bytes_read(server) > idle_reads, "the commerce server to read the request")

        os.killpg(server, signal.SIGKILL)
        await wait_until(lambda: not alive(server), "the commerce server to die")
        assert fault_world.refund_records() == [] and fault_world.order("QH-1001").version == 1
    finally:
        lock.execute("ROLLBACK")
        lock.close()

    final = await fault_world.result(handle)
    assert final.status is CaseStatus.COMPLETED and final.receipt is not None
    rows = fault_world.refund_records()
    assert [(r.receipt_id, r.amount_cents, r.case_id) for r in rows] == [
        (final.receipt.receipt_id, 12900, view.case_id)
    ]
    order = fault_world.order("QH-1001")
    assert (order.refunded_cents, order.version) == (12900, 2)

    # Temporal retried the same activity; the retry opened a new commerce server process.
    [settle] = [run for run in await activity_runs(handle) if run.name == "execute_refund"]
    assert settle.attempt == 2 and settle.outcome == "completed"
    # The reason reaches history bounded (one line, no cause chain), never "Failure exceeds size limit".
    assert settle.last_failure.startswith("commerce_unavailable: ")
    assert len(settle.last_failure) <= MAX_FAILURE_MESSAGE_CHARS and "\n" not in settle.last_failure
    assert not worker.exited()
    [fresh] = worker.commerce_servers("alice")
    assert fresh != server
    print(f"killed commerce server {server}; retry used {fresh}; attempt 1 failed with: {settle.last_failure}")


async def test_a_hung_commerce_server_is_replaced_after_one_call_timeout(fault_world, temporal_server, workers) -> None:
    """SIGSTOP (hung, not dead): the settlement call times out after CALL_TIMEOUT_SECONDS, the session is
    dropped (its frozen process killed), and the next attempt pays on a fresh server, once."""
    worker = await workers(temporal_server.address, fault_world, "worker").ready()
    handle = await fault_world.start(REFUND_QUESTION)
    view = await fault_world.waiting_for_approval(handle)
    [server] = worker.commerce_servers("alice")

    os.kill(server, signal.SIGSTOP)
    try:
        await handle.signal("review", approval("chen", view.case_id, view.digest))
        final = await fault_world.result(handle, timeout=180)
    finally:
        if alive(server):
            os.kill(server, signal.SIGCONT)

    assert final.status is CaseStatus.COMPLETED and final.receipt is not None
    assert [(r.amount_cents, r.case_id) for r in fault_world.refund_records()] == [(12900, view.case_id)]
    [settle] = [run for run in await activity_runs(handle) if run.name == "execute_refund"]
    assert settle.attempt == 2 and settle.outcome == "completed"  # not ten attempts on the same hung session
    assert settle.last_failure.startswith("commerce_timeout: The commerce server did not answer execute_refund")
    await wait_until(lambda: not alive(server), "the hung commerce server to be stopped by the worker")
    [fresh] = worker.commerce_servers("alice")
    assert fresh != server

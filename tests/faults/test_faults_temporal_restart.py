"""The Temporal dev server stopped and started again while a case waits for approval.

A dedicated dev server (fixed port, SQLite file under the test's tmp dir) serves one worker process
and the test's client. The server is terminated while the case waits, started again on the same port
with the same database file, and then the approval goes through the same client object.
"""

from __future__ import annotations

import socket
import time

import pytest
from temporalio.service import RPCError

from contracts.case import CaseStatus, ReviewOutcome
from devstack.servers import free_port, start_dev_server
from tests.faults.fault_support import REFUND_QUESTION, FaultWorld, activity_runs, approval, connect, kill_group

pytestmark = pytest.mark.slow


async def test_approval_works_after_the_temporal_server_restarted(tmp_path, workers) -> None:
    server_dir = tmp_path / "temporal"
    port = free_port()
    server = start_dev_server(server_dir, port=port, db_name="restart.db")
    restarted = world = None
    try:
        client = await connect(server.address)
        world = FaultWorld.create(client, tmp_path)
        worker = await workers(server.address, world, "worker").ready()
        handle = await world.start(REFUND_QUESTION)
        view = await world.waiting_for_approval(handle)

        stopped_at = time.monotonic()
        server.stop()
        assert server.process.returncode is not None
        with pytest.raises(ConnectionRefusedError):  # the server is really gone
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        with pytest.raises(RPCError):  # and a client call fails once the SDK's own retries give up
            await world.view(handle)

        restarted = start_dev_server(server_dir, port=port, db_name="restart.db")
        outage = time.monotonic() - stopped_at
        again = await world.wait_for(handle, lambda v: True, timeout=60)
        assert (again.status, again.digest) == (CaseStatus.WAITING_APPROVAL, view.digest)
        assert view.digest is not None
        outcome = await handle.execute_update(
            "review", approval("chen", view.case_id, view.digest), result_type=ReviewOutcome
        )
        assert outcome.accepted
        final = await world.result(handle)

        assert final.status is CaseStatus.COMPLETED and final.receipt is not None
        rows = world.refund_records()
        assert [(r.receipt_id, r.amount_cents) for r in rows] == [(final.receipt.receipt_id, 12900)]
        order = world.order("QH-1001")
        assert (order.refunded_cents, order.version) == (12900, 2)
        assert [run.name for run in await activity_runs(handle)].count("execute_refund") == 1
        assert not worker.exited()  # the same worker process reconnected by itself
        retries = worker.log().count("gRPC call poll_")
        print(f"server down {outage:.1f}s; worker {worker.pid} survived ({retries} poll-retry warnings)")
    finally:
        if world is not None:
            world.engine.dispose()
        for dev in (server, restarted):
            if dev is not None:
                dev.stop()
                kill_group(dev.process.pid)

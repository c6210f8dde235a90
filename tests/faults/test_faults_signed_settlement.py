"""A timely signed approval, then a worker SIGKILL before the commerce commit, then the proposal
expires: the refund is still paid exactly once.

The commerce server pays an approval signed before the proposal expired for as long as the settle
window (``contracts.credentials.SETTLE_WINDOW``, 30 minutes) after it was signed; the time of the
(retried) execution does not matter. Also here, because it needs a fresh worker process: an approval
token with a forged signature, sent to a real ``worker.py``, is refused.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from contracts.case import CaseStatus, Phase, ReviewOutcome
from contracts.credentials import (
    ISSUER_KID,
    SETTLE_WINDOW,
    SignedReview,
    verify_receipt,
)
from keystore import reviewer_kid
from tests.case_world import event_details
from tests.credentials_support import forged_approval_token, signed_review
from tests.faults.fault_support import (
    PAUSED_WORKER_SCRIPT,
    REFUND_QUESTION,
    WorkerProcess,
    activity_runs,
    alive,
    scheduled_counts,
    wait_until,
)

pytestmark = pytest.mark.slow

APPROVAL_TTL_SECONDS = 20
"""Long enough to approve a waiting case on a loaded machine, short enough to wait out in a test, and
well under the settlement's 30 s start-to-close timeout, so the first attempt is still hanging on the
paused worker when it is killed."""


async def test_a_timely_signed_approval_survives_a_worker_kill_and_pays_once_after_the_proposal_expired(
    fault_world, temporal_server, workers, demo_keys, tmp_path
) -> None:
    """The first worker is the test-only launcher ``paused_worker.py`` paused at the start of settlement
    (``FAULT_PAUSE_BEFORE_SETTLE``), so nothing has reached the commerce server when it is killed; the
    second is a plain ``worker.py`` started after the kill."""
    address = temporal_server.address
    marker = tmp_path / "paused.json"
    paused = await workers(
        address,
        fault_world,
        "worker-paused",
        script=PAUSED_WORKER_SCRIPT,
        env={"FAULT_PAUSE_BEFORE_SETTLE": "1", "FAULT_MARKER": str(marker)},
    ).ready()

    handle = await fault_world.start(REFUND_QUESTION, ttl=APPROVAL_TTL_SECONDS)
    view = await fault_world.waiting_for_approval(handle)
    proposal = view.proposal
    assert (proposal.order_id, proposal.amount_cents) == ("QH-1001", 12900)
    review = signed_review("chen", view.case_id, view.digest)
    outcome = await handle.execute_update("review", review, result_type=ReviewOutcome)
    signed = jwt.decode(review.approval_token, options={"verify_signature": False})
    approval_jti, approved_at = signed["jti"], datetime.fromtimestamp(signed["iat"], UTC)
    assert outcome.accepted  # the workflow accepted it, so before the proposal expired
    assert approved_at < proposal.expires_at

    # The worker is paused at the start of settlement: nothing has been sent to the commerce server.
    await wait_until(marker.exists, "the paused worker to stop at the start of settlement")
    assert json.loads(marker.read_text())["where"] == "before settle"
    during = await fault_world.view(handle)
    assert (during.phase, during.status, during.receipt) == (Phase.SETTLE, CaseStatus.RUNNING, None)
    assert fault_world.refund_records() == []

    # Let the proposal expire while the settlement hangs, then kill the worker.
    await wait_until(
        lambda: datetime.now(UTC) > proposal.expires_at + timedelta(seconds=1),
        "the proposal to expire",
        timeout=APPROVAL_TTL_SECONDS + 60,
        interval=0.5,
    )
    assert fault_world.refund_records() == []
    paused.sigkill()
    assert not alive(paused.pid)
    await workers(address, fault_world, "worker-after").ready()

    final = await fault_world.result(handle)
    assert final.status is CaseStatus.COMPLETED and final.reason == "refund_settled", (final.status, final.reason)
    receipt = final.receipt
    assert receipt is not None and receipt.signature is not None
    [row] = fault_world.refund_records()
    assert (row.case_id, row.order_id, row.amount_cents, row.receipt_id) == (
        view.case_id,
        "QH-1001",
        12900,
        receipt.receipt_id,
    )
    # Paid after the proposal expired, within the settle window of the approval.
    paid_at = row.created_at if row.created_at.tzinfo else row.created_at.replace(tzinfo=UTC)
    assert proposal.expires_at < paid_at
    assert paid_at < approved_at + SETTLE_WINDOW
    order = fault_world.order("QH-1001")
    assert (order.refunded_cents, order.version) == (12900, 2)

    claims = verify_receipt(receipt.signature, demo_keys.public_keys())
    assert (claims.receipt_id, claims.case_id, claims.digest, claims.approval_jti) == (
        receipt.receipt_id,
        view.case_id,
        view.digest,
        approval_jti,
    )
    assert (claims.amount_cents, claims.order_version_before, claims.order_version_after) == (12900, 1, 2)
    assert claims.refunded_cents_after == 12900

    runs = await activity_runs(handle)
    [settle] = [run for run in runs if run.name == "execute_refund"]
    assert scheduled_counts(runs)["execute_refund"] == 1  # retried by Temporal, never scheduled twice
    # Every attempt on the paused worker stopped before sending anything; the one that paid ran elsewhere.
    assert settle.attempt is not None and settle.attempt >= 2 and settle.outcome == "completed"
    assert "timeout" in settle.last_failure.lower(), settle.last_failure
    assert str(paused.pid) not in settle.worker
    assert await event_details(handle, "review_accepted") == ["chen via update: approve (signed)"]
    assert len(await event_details(handle, "settled")) == 1
    assert await event_details(handle, "settlement_failed") == []
    print(
        f"approved {(proposal.expires_at - approved_at).total_seconds():.0f}s before expiry; paid "
        f"{(paid_at - proposal.expires_at).total_seconds():.0f}s "
        f"after it, receipt {receipt.receipt_id}, execute_refund attempt {settle.attempt} after: {settle.last_failure}"
    )


# --- a forged signature at a fresh worker process ------------------------------------------------


async def _recorded_while_alive(
    worker: WorkerProcess, handle: WorkflowHandle, detail: str, timeout: float = 60
) -> None:
    """Wait until the case records ``detail`` as a refusal; fail at once, with the worker's own last
    words, if the worker process dies meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        if worker.exited():
            last = [line for line in worker.log().splitlines() if "panicked" in line or "failed to import" in line]
            raise AssertionError(
                f"the worker process died (exit {worker.process.returncode}) judging a forged approval: {last}"
            )
        try:
            if detail in await asyncio.wait_for(event_details(handle, "review_refused"), timeout=5):
                return
        except TimeoutError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for the refusal {detail!r}")
        await asyncio.sleep(0.2)


async def test_a_forged_approval_signature_is_refused_by_a_fresh_worker_process_which_then_settles_once(
    fault_world, temporal_server, workers
) -> None:
    """The forged approval is refused and recorded (signal and update) and the same worker then settles
    chen's own approval. The in-process worker of ``tests/e2e`` cannot show this reliably: whether the
    signature check survives inside the workflow sandbox can depend on what the test process verified
    before."""
    worker = await workers(temporal_server.address, fault_world, "worker-forged").ready()
    handle = await fault_world.start(REFUND_QUESTION)
    view = await fault_world.waiting_for_approval(handle)

    for signer in (reviewer_kid("mei"), ISSUER_KID):
        forged = SignedReview(approval_token=forged_approval_token("chen", signer, view.case_id, view.digest))
        await handle.signal("review", forged)
        await _recorded_while_alive(worker, handle, "chen (claimed) via signal: bad_signature")
        with pytest.raises(WorkflowUpdateFailedError) as failed:
            await asyncio.wait_for(handle.execute_update("review", forged, result_type=ReviewOutcome), timeout=60)
        assert isinstance(failed.value.cause, ApplicationError)
        assert (failed.value.cause.type, failed.value.cause.message) == (
            "review_refused",
            "bad_signature: the signature does not match reviewer chen's published key",
        )
    assert await event_details(handle, "review_refused") == [
        f"chen (claimed) via {via}: bad_signature" for _ in range(2) for via in ("signal", "update")
    ]
    assert not worker.exited()
    assert fault_world.refund_records() == []
    assert (await fault_world.view(handle)).status is CaseStatus.WAITING_APPROVAL

    outcome = await handle.execute_update(
        "review", signed_review("chen", view.case_id, view.digest), result_type=ReviewOutcome
    )
    assert outcome.accepted
    final = await fault_world.result(handle)
    assert final.status is CaseStatus.COMPLETED and final.receipt is not None
    assert [(r.case_id, r.order_id, r.amount_cents) for r in fault_world.refund_records()] == [
        (view.case_id, "QH-1001", 12900)
    ]
    assert not worker.exited()

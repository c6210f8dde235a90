"""The logs of a real run, read as an operator's log shipper reads them.

A real ``worker.py`` with ``SUPPORT_LOG_FORMAT=json`` and ``SUPPORT_LOG_LEVEL=INFO`` (its stdio commerce
server writes to the same stderr) runs alice's refund of QH-1001 to its receipt, approved by chen, and
refuses one case started with an applicant token issued for another case. Its output must be JSON lines
(besides the worker's own plain start lines on stdout), hold the paid refund once with its case, order,
amount and receipt, the refusal as one line with its code and case and no stack, and never the
customer's question, a private key of the state dirs or a signed token.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from temporalio.client import Client

from case_client import CaseClient
from commerce_server.refunds import PAID_LOGGER
from contracts.case import CaseStatus, ReviewOutcome
from contracts.identity import Identity
from contracts.logs import HEADER, LOG_FORMAT_ENV
from keystore import demo_identity, keys_dir, load_private_key
from tests.credentials_support import applicant_token, signed_review, use_test_keys
from tests.faults.fault_support import REFUND_QUESTION, FaultWorld, WorkerProcess, spawn_worker, wait_until

QUESTION = f"{REFUND_QUESTION}. The courier, Lanfeng Zhu-4417, left it in the rain."
REFUSED_QUESTION = "Where is my order QH-1005? Ask Meiling Qiao-2093 at the front desk."


def secrets_of(state_dirs: list[Path]) -> dict[str, str]:
    """Every private key of the state dirs, as its PEM body and as its raw bytes (hex, base64url)."""
    found: dict[str, str] = {}
    for state_dir in state_dirs:
        for path in sorted(keys_dir(state_dir).glob("*.pem")):
            body = "".join(line for line in path.read_text().splitlines() if not line.startswith("-----"))
            raw = load_private_key(path).private_bytes(
                serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
            )
            found[f"{path} (PEM)"] = body
            found[f"{path} (hex)"] = raw.hex()
            found[f"{path} (base64url)"] = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert len(found) >= 3 * 3, found.keys()  # the issuer's, chen's and the commerce key at least
    return found


async def test_a_refund_runs_logs_are_json_lines_with_the_refund_and_the_refusal_and_no_secret(
    temporal_server: Any, temporal_client: Client, tmp_path: Path
) -> None:
    world = FaultWorld.create(temporal_client, tmp_path / "world")
    worker: WorkerProcess = spawn_worker(
        temporal_server.address, world.state_dir, world.task_queue, name="json", env={LOG_FORMAT_ENV: "json"}
    )
    try:
        await worker.ready()
        handle = await world.start(QUESTION)
        view = await world.waiting_for_approval(handle)
        assert view.digest is not None
        # mei (tenant south) signs a review of alice's qinghe case: the case reads only its own tenant's keys,
        # so it refuses the signature as unknown_signer, in one line.
        await handle.signal("review", signed_review("mei", view.case_id, view.digest))
        review = signed_review("chen", view.case_id, view.digest)
        outcome = await handle.execute_update("review", review, result_type=ReviewOutcome)
        assert outcome.accepted
        final = await world.result(handle)
        assert final.status is CaseStatus.COMPLETED and final.receipt is not None

        copied: list[str] = []

        def copied_token(identity: Identity, case_id: str) -> str:
            copied.append(applicant_token(identity, "c0ffee0000ff"))  # issued for another case
            return copied[-1]

        refused_client = CaseClient.for_client(temporal_client, task_queue=world.task_queue, issuer=copied_token)
        refused = await refused_client.start(demo_identity("alice"), REFUSED_QUESTION, ttl_seconds=900)
        stopped = await world.result(refused.workflow)
        assert stopped.status is CaseStatus.FAILED, (stopped.status, stopped.reason)
        paid_line = f'"receipt_id": "{final.receipt.receipt_id}"'
        await wait_until(lambda: paid_line in worker.log() and stopped.case_id in worker.log(), "both lines")
    finally:
        worker.cleanup()
        world.engine.dispose()

    log = worker.log()
    lines = [line for line in log.splitlines() if line.strip()]
    plain = [line for line in lines if not line.startswith("{")]
    assert all(line.startswith("worker: ") for line in plain), plain  # the worker's own start lines (stdout)
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(records) >= 6 and all(set(HEADER) <= record.keys() for record in records)
    assert {record["service"] for record in records} == {"worker", "commerce"}

    paid = [record for record in records if record["logger"] == PAID_LOGGER]
    assert len(paid) == 1, paid
    [refund] = paid
    assert final.proposal is not None
    expected = (final.proposal.case_id, "QH-1001", 12900, final.receipt.receipt_id, "commerce")
    assert (refund["case_id"], refund["order_id"], refund["amount_cents"], refund["receipt_id"], refund["service"]) == (
        expected
    )

    refusals = [record for record in records if record.get("case_id") == stopped.case_id and "code" in record]
    assert len(refusals) == 1, refusals
    [refusal] = refusals
    assert (refusal["level"], refusal["code"], refusal["activity"], refusal["retried"]) == (
        "WARNING",
        "token_for_another_case",
        "verify_applicant",
        False,
    )
    assert refusal["message"].startswith("activity verify_applicant refused: token_for_another_case: ")
    assert "exception" not in refusal
    reviews = [record for record in records if record["message"].startswith("review refused: ")]
    assert [(r["level"], r["code"], r["case_id"], r["service"]) for r in reviews] == [
        ("WARNING", "unknown_signer", view.case_id, "worker")
    ]
    assert "Traceback" not in log

    forbidden = {
        "the question": QUESTION,
        "the refused case's question": REFUSED_QUESTION,
        "a customer's words": "Lanfeng Zhu-4417",
        "another customer's words": "Meiling Qiao-2093",
        "chen's approval token": review.approval_token,
        "the copied applicant token": copied[0],
        **secrets_of([world.state_dir, use_test_keys().state_dir]),
    }
    assert [what for what, text in forbidden.items() if text and text in log] == []

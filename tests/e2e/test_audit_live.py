"""``starter.py audit`` against Temporal itself: a real QH-1001 refund runs to completion with chen's signed
approval, its worker is stopped, and an auditor with a fresh state dir (no keys, no commerce database)
reads the whole case from the dev server's workflow history."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from rich.cells import cell_len
from temporalio.client import Client

from case_history.audit_reviews import CLAIMED
from case_history.trail import unverified_claims
from cli.exit_codes import ExitCode
from contracts.case import CaseStatus, CaseView
from devstack.temporal_cli import temporal_cli
from tests.case_world import open_world
from tests.credentials_support import signed_review

ROOT = Path(__file__).resolve().parents[2]
REFUND_QUESTION = "Please refund QH-1001 and explain the amount and the policy"


async def _audit(temporal_server, state_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_server.address}
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(state_dir), *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


async def test_audit_reads_a_settled_refund_from_temporal_after_its_worker_stopped(
    temporal_client: Client, temporal_server, tmp_path: Path
) -> None:
    world, worker, cleanup = await open_world(temporal_client, tmp_path / "state")
    try:
        async with worker:
            handle = await world.start(REFUND_QUESTION)
            waiting = await world.settled(handle)
            assert waiting.status is CaseStatus.WAITING_APPROVAL and waiting.digest is not None
            review = signed_review("chen", waiting.case_id, waiting.digest)
            await handle.execute_update("review", review)
            final: CaseView = await handle.result()
    finally:
        await cleanup()  # the worker and the commerce server are gone from here on
        world.engine.dispose()
    assert final.status is CaseStatus.COMPLETED and final.receipt is not None and final.proposal is not None
    auditor = tmp_path / "auditor"  # no keys, no commerce database: only the history

    done = await _audit(temporal_server, auditor, "--profile", "chen", "audit", final.case_id)
    assert done.returncode == ExitCode.DECIDED, done.stdout + done.stderr
    assert done.stderr == ""
    text, lines = done.stdout, done.stdout.splitlines()
    assert f"case {final.case_id}: audit of the workflow history on {temporal_server.address}" in " ".join(text.split())
    assert final.proposal.amount_cents == 12900
    assert "12900 cents CNY for order QH-1001 of alice (qinghe)" in text
    assert f"    {final.digest}" in lines  # the whole digest, on a line of its own
    claims = unverified_claims(review.approval_token)
    assert claims is not None and claims["sub"] == "chen"
    assert f"chen: approve, token id {claims['jti']}\n            ({CLAIMED})" in text
    assert "case log: review_accepted: chen via update: approve (signed)" in text
    assert "answered: accepted: approve" in text
    assert f"receipt {final.receipt.receipt_id}: 12900 cents CNY for QH-1001" in text
    assert "outcome: final status completed: refund_settled" in text
    assert "eyJ" not in text  # tokens are shown as their claims and ids, never as tokens
    too_wide = [line for line in lines if cell_len(line) > 80 and len(line.split()) > 1]
    assert not too_wide, too_wide
    assert not (auditor / "keys").exists() and not list(auditor.glob("*.db"))

    as_json = await _audit(temporal_server, auditor, "--profile", "alice", "audit", final.case_id, "--json")
    assert as_json.returncode == ExitCode.DECIDED, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["proposal"]["amount_cents"] == 12900 and data["digest"] == data["digest_recomputed"] == final.digest
    assert data["settlement"]["receipt"]["receipt_id"] == final.receipt.receipt_id
    assert [(review["channel"], review["who"], review["answer"]) for review in data["reviews"]] == [
        ("update", "chen", "accepted: approve")
    ]
    assert data["final"]["status"] == "completed" and data["final"]["still_running"] is False

    # the same history exported by the Temporal CLI, read from its file, says the same
    export = [temporal_cli(), "workflow", "show", "--address", temporal_server.address]
    export += ["--workflow-id", f"case-{final.case_id}", "--output", "json"]
    shown = await asyncio.to_thread(subprocess.run, export, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    (tmp_path / "exported.json").write_text(shown.stdout, encoding="utf-8")
    from_file = await _audit(
        temporal_server, auditor, "audit", final.case_id, "--history", str(tmp_path / "exported.json"), "--json"
    )
    assert from_file.returncode == ExitCode.DECIDED, from_file.stderr
    assert {**json.loads(from_file.stdout), "source": None} == {**data, "source": None}

    refused = await _audit(temporal_server, auditor, "--profile", "bob", "audit", final.case_id)
    assert refused.returncode == ExitCode.REFUSED and refused.stdout == ""
    assert refused.stderr == "error: case_not_accessible: No such case is available to this profile.\n"

"""A refused review, as every caller sees it: the SDK, ``starter.py review`` and ``review-info``.

A refusal is the sender's mistake, not a crash: the update fails non-retryably with one sentence for
its code and no stack trace (the Web UI's dialog is checked in tests/browser). Real worker, real dev
server, the starter as a subprocess.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from cli.render import WEB_UI_SIGNAL, WEB_UI_UPDATE
from contracts.case import CaseStatus, Decision
from contracts.credentials import ISSUER_KID
from contracts.names import REVIEW_REFUSED, EventKind
from tests.case_world import CaseWorld, event_details
from tests.credentials_support import forged_approval_token, signed_review

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Please refund QH-1001 and explain the amount and the policy"


async def _starter(world: CaseWorld, temporal_server, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_server.address, "SUPPORT_TASK_QUEUE": world.task_queue}
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(world.state_dir), *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


async def test_a_refused_update_is_one_sentence_non_retryable_and_carries_no_stack_trace(world: CaseWorld) -> None:
    handle = await world.start(QUESTION)
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None
    refusals = [
        (
            forged_approval_token("chen", "reviewer:mei", view.case_id, view.digest),
            "bad_signature: the signature does not match reviewer chen's published key",
        ),
        (
            forged_approval_token("chen", ISSUER_KID, view.case_id, view.digest),
            "bad_signature: the signature does not match reviewer chen's published key",
        ),
        (
            signed_review("chen", view.case_id, "0" * 64).approval_token,
            "digest_mismatch: the approval was signed for another proposal (its digest differs)",
        ),
        (
            signed_review("mei", view.case_id, view.digest).approval_token,
            "unknown_signer: the directory publishes no key for reviewer mei",  # not in the case's tenant slice
        ),
    ]
    for token, message in refusals:
        with pytest.raises(WorkflowUpdateFailedError) as failed:
            await handle.execute_update("review", {"approval_token": token})
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError) and cause.type == REVIEW_REFUSED
        assert cause.message == message
        assert cause.non_retryable
        assert cause.failure is not None and cause.failure.stack_trace == ""
    assert len(await event_details(handle, EventKind.REVIEW_REFUSED)) == len(refusals)

    # The case still decides on chen's own approval.
    await handle.execute_update("review", signed_review("chen", view.case_id, view.digest, Decision.APPROVE))
    assert (await handle.result()).status is CaseStatus.COMPLETED


async def test_review_info_and_review_name_the_web_ui_path_and_the_refusal(world: CaseWorld, temporal_server) -> None:
    handle = await world.start(QUESTION)
    view = await world.settled(handle)
    assert view.digest is not None
    info = await _starter(world, temporal_server, "--profile", "chen", "review-info", view.case_id, "--approve")
    assert info.returncode == 0, info.stderr
    assert " → ".join(WEB_UI_UPDATE) in info.stdout and " → ".join(WEB_UI_SIGNAL) in info.stdout

    wrong = await _starter(
        world, temporal_server, "--profile", "chen", "review", view.case_id, "--digest", "f" * 64, "--approve"
    )
    assert wrong.returncode == 2
    [line] = wrong.stderr.strip().splitlines()
    assert "digest_mismatch: the approval was signed for another proposal" in line, line
    assert "Traceback" not in wrong.stderr

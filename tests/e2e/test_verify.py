"""``starter.py verify``: the chain applicant token -> proposal digest -> approval token -> receipt, checked
offline from a real case's workflow history and the public keys only.

A real case runs on the e2e ``world`` (real worker, real commerce server over stdio) and chen approves
it with his own signed review. Its history is exported as ``temporal workflow show --output json``
writes it; each test alteration is made to that JSON, the way anyone with write access to the history
(or a file on its way to an auditor) could make it, and ``verify --history`` must name the link it breaks.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload

from cli.exit_codes import ExitCode
from contracts.case import CaseStatus, CaseView
from contracts.case_input import CaseInput
from contracts.credentials import COMMERCE_KID, sign
from contracts.knowledge import Language
from contracts.names import WORKFLOW_NAME, ActivityName
from contracts.payload_codec import decode_payload_sync
from devstack.temporal_cli import temporal_cli
from keystore import demo_identity, load_private_key, private_key_path, public_jwk, reviewer_kid
from tests.credentials_support import signed_review, use_test_keys

ROOT = Path(__file__).resolve().parents[2]
REFUND_QUESTION = "Please refund QH-1001 and explain the amount and the policy"
History = dict[str, Any]


async def _starter(world, temporal_server, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_server.address, "SUPPORT_TASK_QUEUE": world.task_queue}
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(world.state_dir), *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


async def _exported(temporal_server, case_id: str) -> History:
    """The case's history as the Temporal CLI exports it."""
    command = [temporal_cli(), "workflow", "show", "--address", temporal_server.address]
    command += ["--workflow-id", f"case-{case_id}", "--output", "json"]
    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def _settled_case(world) -> CaseView:
    handle = await world.start(REFUND_QUESTION)
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None
    await handle.execute_update("review", signed_review("chen", view.case_id, view.digest))
    final: CaseView = await handle.result()
    assert final.status is CaseStatus.COMPLETED and final.receipt is not None, final.reason
    return final


# --- editing an exported history -----------------------------------------------------------------


def _plain(payload: dict[str, Any]) -> dict[str, Any]:
    """The exported payload as the worker's converter wrote it: one the case codec compressed
    (``binary/zlib``) decompressed, any other as it is."""
    return json_format.MessageToDict(decode_payload_sync(json_format.ParseDict(payload, Payload())))


def _decoded(payload: dict[str, Any]) -> dict[str, Any]:
    return json.loads(base64.b64decode(_plain(payload)["data"]))


def _edit(payload: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> None:
    """Change a payload's value in place; a compressed one is written back as the plain JSON it held."""
    value = _decoded(payload)
    change(value)
    plain = _plain(payload)
    payload.clear()
    payload.update(plain, data=base64.b64encode(json.dumps(value).encode("utf-8")).decode("ascii"))


def _start_input(history: History) -> dict[str, Any]:
    return history["events"][0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"][0]


def _scheduled(history: History, activity: str) -> dict[str, Any]:
    return next(
        event
        for event in history["events"]
        if event.get("activityTaskScheduledEventAttributes", {}).get("activityType", {}).get("name") == activity
    )


def _activity_input(history: History, activity: str) -> dict[str, Any]:
    return _scheduled(history, activity)["activityTaskScheduledEventAttributes"]["input"]["payloads"][0]


def _activity_result(history: History, activity: str) -> dict[str, Any]:
    """The result payload of the first ``activity``: a local activity's (its marker's), else a regular one's."""
    for event in history["events"]:
        marker = event.get("markerRecordedEventAttributes", {})
        if marker.get("markerName") == "core_local_activity":
            data = _decoded(marker["details"]["data"]["payloads"][0])
            if data.get("activity_type") == activity:
                return marker["details"]["result"]["payloads"][0]
    scheduled_id = _scheduled(history, activity)["eventId"]
    completed = next(
        event["activityTaskCompletedEventAttributes"]
        for event in history["events"]
        if event.get("activityTaskCompletedEventAttributes", {}).get("scheduledEventId") == scheduled_id
    )
    return completed["result"]["payloads"][0]


async def _verify_file(world, temporal_server, tmp_path: Path, history: History, name: str):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    return await _starter(
        world, temporal_server, "--profile", "chen", "verify", _case_id(history), "--history", str(path)
    )


def _case_id(history: History) -> str:
    return _decoded(_start_input(history))["case_id"]


def _link_line(stdout: str, link: str) -> str:
    return next(line for line in stdout.splitlines() if line.strip().startswith(link))


# --- the tests -----------------------------------------------------------------------------------


async def test_verify_passes_on_a_completed_case_from_temporal_and_from_an_exported_file(
    world, temporal_server, tmp_path: Path
) -> None:
    final = await _settled_case(world)
    assert final.receipt is not None
    online = await _starter(world, temporal_server, "--profile", "chen", "verify", final.case_id)
    assert online.returncode == ExitCode.DECIDED, online.stdout + online.stderr
    for link in ("applicant token", "proposal digest", "approval token", "receipt"):
        assert " OK " in _link_line(online.stdout, link), online.stdout
    assert "chain verified: applicant token -> proposal digest -> approval token -> receipt" in online.stdout
    assert final.receipt.receipt_id in online.stdout and "alice (qinghe, customer)" in online.stdout
    assert "eyJ" not in online.stdout + online.stderr  # no token is ever printed, only token ids

    history = await _exported(temporal_server, final.case_id)
    offline = await _verify_file(world, temporal_server, tmp_path, history, "as-exported")
    assert offline.returncode == ExitCode.DECIDED, offline.stdout + offline.stderr
    assert "chain verified" in offline.stdout and "the history file" in offline.stdout

    applicant = await _starter(world, temporal_server, "--profile", "alice", "verify", final.case_id)
    assert applicant.returncode == ExitCode.DECIDED, applicant.stderr
    for outsider in ("bob", "mei"):
        refused = await _starter(world, temporal_server, "--profile", outsider, "verify", final.case_id)
        missing = await _starter(world, temporal_server, "--profile", outsider, "verify", "no-such-case")
        assert refused.returncode == missing.returncode == ExitCode.REFUSED
        assert (
            refused.stderr
            == missing.stderr
            == "error: case_not_accessible: No such case is available to this profile.\n"
        )
        assert refused.stdout == ""


async def test_verify_names_the_broken_link_of_an_altered_history_or_receipt(
    world, temporal_server, tmp_path: Path
) -> None:
    final = await _settled_case(world)
    exported = await _exported(temporal_server, final.case_id)
    settle = _decoded(_activity_input(exported, ActivityName.EXECUTE_REFUND))
    keys = use_test_keys().state_dir

    def receipt_amount(history: History) -> None:
        _edit(_activity_result(history, ActivityName.EXECUTE_REFUND), lambda r: r.update(amount_cents=1_290_000))

    def meis_approval(history: History) -> None:
        mei = signed_review("mei", final.case_id, settle["digest"]).approval_token
        _edit(_activity_input(history, ActivityName.EXECUTE_REFUND), lambda s: s.update(approval_token=mei))

    def no_applicant_token(history: History) -> None:
        _edit(_start_input(history), lambda case: case.update(applicant_token=None))

    def receipt_signed_by_a_forger(history: History) -> None:
        """The receipt and its claims rewritten to 1,290,000 cents, signed as ``commerce`` with another key."""
        receipt = _decoded(_activity_result(history, ActivityName.EXECUTE_REFUND))
        claims = json.loads(base64.urlsafe_b64decode(receipt["signature"].split(".")[1] + "=="))
        forger = load_private_key(private_key_path(keys, reviewer_kid("mei")))
        forged = sign({**claims, "amount_cents": 1_290_000}, forger, kid=COMMERCE_KID)
        _edit(
            _activity_result(history, ActivityName.EXECUTE_REFUND),
            lambda r: r.update(amount_cents=1_290_000, signature=forged),
        )

    def forged_approval_with_its_key_written_into_the_history(history: History) -> None:
        """A key pair of the forger's, published as chen's in the directory the verify_applicant activity
        recorded: verify reads the directory from outside the history, so the forgery stays a forgery."""
        forger = Ed25519PrivateKey.generate()
        token = signed_review("chen", final.case_id, settle["digest"]).approval_token
        claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
        forged = sign(claims, forger, kid=reviewer_kid("chen"))
        _edit(_activity_input(history, ActivityName.EXECUTE_REFUND), lambda s: s.update(approval_token=forged))

        def publish(verified: dict[str, Any]) -> None:
            others = [key for key in verified["directory"]["keys"] if key["kid"] != reviewer_kid("chen")]
            verified["directory"]["keys"] = [*others, public_jwk(forger, reviewer_kid("chen"))]

        _edit(_activity_result(history, ActivityName.VERIFY_APPLICANT), publish)

    alterations: list[tuple[Callable[[History], None], str, str]] = [
        (receipt_amount, "receipt", "amount_cents is 1290000 in the history but 12900 in the signed receipt"),
        (meis_approval, "approval token", "reviewer_of_another_tenant"),
        (no_applicant_token, "applicant token", "missing: the case was started without an applicant token"),
        (receipt_signed_by_a_forger, "receipt", "does not verify with the commerce key: bad_signature"),
        (forged_approval_with_its_key_written_into_the_history, "approval token", "bad_signature"),
    ]
    for alter, link, says in alterations:
        history = json.loads(json.dumps(exported))
        alter(history)
        done = await _verify_file(world, temporal_server, tmp_path, history, alter.__name__)
        assert done.returncode == ExitCode.CHAIN_BROKEN, (alter.__name__, done.stdout, done.stderr)
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"error: chain_broken: the {link} link is broken: "), (alter.__name__, line)
        assert says in line, (alter.__name__, line)
        assert " BROKEN " in _link_line(done.stdout, link), (alter.__name__, done.stdout)
        assert "chain verified" not in done.stdout


async def test_verify_says_what_a_case_without_settlement_lacks(world, temporal_server) -> None:
    handle = await world.start(REFUND_QUESTION)
    waiting = await world.settled(handle)
    assert waiting.status is CaseStatus.WAITING_APPROVAL
    done = await _starter(world, temporal_server, "--profile", "chen", "verify", waiting.case_id)
    assert done.returncode == ExitCode.CHAIN_INCOMPLETE, done.stdout + done.stderr
    assert " OK " in _link_line(done.stdout, "applicant token") and " OK " in _link_line(done.stdout, "proposal digest")
    assert " ABSENT " in _link_line(done.stdout, "approval token") and " ABSENT " in _link_line(done.stdout, "receipt")
    assert "chain incomplete: approval token, receipt absent" in done.stdout and done.stderr == ""

    # a case started without any applicant token (a bare `temporal workflow start`) reads nothing and ends;
    # verify names the missing credential
    case = CaseInput(
        case_id="unsigned" + waiting.case_id[:8],
        question=REFUND_QUESTION,
        language=Language.EN,
        applicant=demo_identity("alice"),
    )
    unsigned = await world.client.start_workflow(
        WORKFLOW_NAME, case, id=f"case-{case.case_id}", task_queue=world.task_queue, result_type=CaseView
    )
    ended: CaseView = await unsigned.result()
    assert ended.status is CaseStatus.FAILED
    refused = await _starter(world, temporal_server, "--profile", "chen", "verify", case.case_id)
    assert refused.returncode == ExitCode.CHAIN_BROKEN, refused.stdout + refused.stderr
    assert "the applicant token link is broken: missing" in refused.stderr
    assert " ABSENT " in _link_line(refused.stdout, "receipt")

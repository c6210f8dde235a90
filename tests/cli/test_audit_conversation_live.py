"""``starter.py audit`` and ``verify`` over a real conversation: the real worker, dev server, commerce
server and rehearsal model. alice asks for a refund without naming the order, is asked which order,
gives it in a ``message`` update, bob's message to her case is refused, and alice withdraws; with the
worker stopped, an auditor reads every message and reply from the dev server's history, and ``verify``
checks every message's credential with the public keys."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len
from temporalio.client import Client, WorkflowHandle

from case_client._conversation import MessageRefused, new_message_id, send_message, start_conversation
from case_client._rules import new_case
from case_history.conversation import token_fingerprint
from cli.exit_codes import ExitCode
from contracts.case import CaseStatus, CaseView
from contracts.conversation import CustomerMessage, MessageRefusal, Speaker
from keystore import demo_identity
from tests.case_world import CaseWorld, open_world
from tests.credentials_support import applicant_token

ROOT = Path(__file__).resolve().parents[2]
ALICE = demo_identity("alice")
QUESTION = "I want a refund for my lamp"
BOBS_WORDS = "bob writes into alice's case and must never be kept"


async def _starter(temporal_server, state_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_server.address}
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(state_dir), *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


async def _say(handle: WorkflowHandle, text: str, *, who: str = "alice") -> tuple[int, str]:
    token = applicant_token(demo_identity(who), handle.id.removeprefix("case-"))
    accepted = await send_message(handle, CustomerMessage(text=text, token=token, message_id=new_message_id()))
    return accepted.turn, token


async def _withdrawn_conversation(world: CaseWorld) -> tuple[CaseView, list[str]]:
    """The case, ended withdrawn, and the tokens of alice's two further messages."""
    case = new_case(ALICE, QUESTION)
    case = case.model_copy(update={"applicant_token": applicant_token(ALICE, case.case_id)})
    handle, _ = await start_conversation(world.client, world.task_queue, case, wait_seconds=25)
    await world.wait_for(handle, lambda view: view.status is CaseStatus.WAITING_CUSTOMER)
    turn, order_token = await _say(handle, "QH-1001")
    assert turn == 2
    await world.wait_for(handle, lambda view: view.status is CaseStatus.WAITING_APPROVAL)
    with pytest.raises(MessageRefused) as refused:
        await _say(handle, BOBS_WORDS, who="bob")
    assert refused.value.refusal is MessageRefusal.ANOTHER_CUSTOMER
    turn, withdraw_token = await _say(handle, "withdraw")
    assert turn == 3
    final = CaseView.model_validate(await handle.result())
    assert final.status is CaseStatus.WITHDRAWN
    return final, [order_token, withdraw_token]


async def test_audit_and_verify_cover_every_message_of_a_real_conversation(
    temporal_client: Client, temporal_server, tmp_path: Path
) -> None:
    world, worker, cleanup = await open_world(temporal_client, tmp_path / "state")
    try:
        async with worker:
            final, tokens = await _withdrawn_conversation(world)
    finally:
        await cleanup()  # the worker and the commerce server are gone from here on
        world.engine.dispose()
    customer = [entry for entry in final.conversation if entry.speaker is Speaker.CUSTOMER]
    assert [entry.text for entry in customer] == [QUESTION, "QH-1001", "withdraw"]
    assert all(BOBS_WORDS not in entry.text for entry in final.conversation)
    fingerprints = [token_fingerprint(token) for token in tokens]
    assert [entry.credential.fingerprint for entry in customer[1:] if entry.credential] == fingerprints
    auditor = tmp_path / "auditor"  # no keys, no commerce database: only the history

    done = await _starter(temporal_server, auditor, "--profile", "alice", "audit", final.case_id)
    assert done.returncode == ExitCode.DECIDED, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    words = " ".join(done.stdout.split())
    said = " ".join(line.removeprefix("      | ") for line in lines if line.startswith("      | "))
    pointed = {QUESTION, final.answer}  # the question and the final answer are pointed at, not repeated
    expected = [entry.text for entry in final.conversation if entry.text not in pointed]
    # every other message and reply, in order; a long reply is cut at a word, saying how much follows
    shown = re.split(r" \.\.\. \(\+\d+ characters\)", said)
    assert len(shown) > 1 and expected
    quoted = " ".join(expected)
    assert all(" ".join(part.split()) in quoted for part in shown), shown
    assert said.split()[:3] == quoted.split()[:3] and said.split()[-1] == quoted.split()[-1]
    assert "customer, message 1 (applicant token): the question above" in " ".join(done.stdout.split())
    for turn, fingerprint in enumerate(fingerprints, start=2):
        assert f"alice, message {turn}, built-in credential {fingerprint}" in words
    assert "case log: message_accepted" not in words  # the case's log says what the entry says: not repeated
    assert "refused another_customers_case (" in words and "characters, text not shown)" in words
    assert BOBS_WORDS not in done.stdout and "eyJ" not in done.stdout
    assert "outcome: final status withdrawn: customer_withdrew" in words
    too_wide = [line for line in lines if cell_len(line) > 80 and len(line.split()) > 1]
    assert not too_wide, too_wide

    as_json = await _starter(temporal_server, auditor, "--profile", "alice", "audit", final.case_id, "--json")
    assert as_json.returncode == ExitCode.DECIDED, as_json.stderr
    messages = json.loads(as_json.stdout)["conversation"]["messages"]
    entries = json.loads(as_json.stdout)["conversation"]["entries"]
    accepted = [
        e["detail"]
        for e in json.loads(as_json.stdout)["conversation"]["case_events"]
        if e["kind"] == "message_accepted"
    ]
    assert accepted == [
        f"message {turn} from alice under built-in credential {fingerprint}"
        for turn, fingerprint in enumerate(fingerprints, start=2)
    ]
    assert [entry["text"] for entry in entries] == [entry.text for entry in final.conversation]  # every word
    assert [(message["outcome"], message["turn"]) for message in messages] == [
        ("accepted", 2),
        ("refused", None),
        ("accepted", 3),
    ]
    assert BOBS_WORDS not in as_json.stdout and all(token not in as_json.stdout for token in tokens)

    verified = await _starter(temporal_server, auditor, "--profile", "alice", "verify", final.case_id)
    assert verified.returncode == ExitCode.CHAIN_INCOMPLETE, verified.stdout + verified.stderr  # nothing approved
    assert verified.stderr == ""
    for turn in (1, 2, 3):
        assert f"  message {turn}     OK " in verified.stdout, verified.stdout
    assert "  refused       OK         1 refused message(s) (another_customers_case)" in verified.stdout
    assert "none of their texts is in the transcript" in verified.stdout
    assert BOBS_WORDS not in verified.stdout and "eyJ" not in verified.stdout

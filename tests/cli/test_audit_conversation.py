"""``audit`` and ``verify`` over a conversation: every customer message and service reply, who said it,
when and under which credential, read from a workflow history built here event by event (a question,
a reply, a further message carried by a ``message`` update, a refused one, and the final transcript).

The history is made of real Temporal protobuf events with payloads encoded as the case's data converter
encodes them; the tokens are signed with the test keys, so ``verify`` checks real signatures. Each
alteration is one a writer of the history could make, and ``verify`` must name the message it breaks.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from google.protobuf.timestamp_pb2 import Timestamp
from rich.cells import cell_len
from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter

from case_history.audit import audit_from_history
from case_history.conversation import RunConversation, conversation_of, token_fingerprint, whole_conversation
from case_history.trail import history_from_json
from case_history.verify_conversation import MessageState, verify_conversation
from cli.audit_json import audit_json
from cli.audit_render import audit_lines
from cli.exit_codes import ExitCode
from cli.text_layout import WIDTH
from contracts.case import Budgets, CaseEvent, CaseStatus, CaseView, Phase
from contracts.case_input import CaseInput
from contracts.conversation import (
    MESSAGE,
    ConversationEntry,
    CustomerMessage,
    MessageAccepted,
    MessageCredential,
    ReplySource,
    Speaker,
)
from contracts.directory import Directory
from contracts.knowledge import Language
from contracts.names import MESSAGE_REFUSED, WORKFLOW_NAME
from keystore import demo_identity, directory_location, load_directory
from tests.credentials_support import use_test_keys

ROOT = Path(__file__).resolve().parents[2]
CASE_ID = "c0nv0000001"
QUESTION = "I want a refund for my lamp"
ASKED = "Which order is this about?"
HOSTILE = "QH-1001 <img src=x onerror=alert(1)>"
REFUSED_TEXT = "these refused words must never be shown"
ANSWER = "Your refund of CNY 129.00 for QH-1001 waits for a reviewer."
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=2)


def _token(subject: str = "alice", case_id: str = CASE_ID, *, now: datetime = T0) -> str:
    return use_test_keys().applicant_token(demo_identity(subject), case_id, now=now)


def _keys() -> Directory:
    return load_directory(directory_location(use_test_keys().state_dir, {}))


def _payloads(*values: Any) -> Payloads:
    return Payloads(payloads=pydantic_data_converter.payload_converter.to_payloads(list(values)))


class HistoryBuilder:
    """A case's history, event by event, at times from :data:`T0`."""

    def __init__(self, case: CaseInput) -> None:
        self.events: list[HistoryEvent] = []
        start = self._event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 0)
        attributes = start.workflow_execution_started_event_attributes
        attributes.workflow_type.name = WORKFLOW_NAME
        attributes.input.CopyFrom(_payloads(case))
        attributes.original_execution_run_id = attributes.first_execution_run_id = "run-1"

    def _event(self, kind: EventType.ValueType, seconds: int) -> HistoryEvent:
        stamp = Timestamp()
        stamp.FromDatetime(T0 + timedelta(seconds=seconds))
        event = HistoryEvent(event_id=len(self.events) + 1, event_type=kind, event_time=stamp)
        self.events.append(event)
        return event

    def message(self, update_id: str, message: CustomerMessage, seconds: int) -> None:
        event = self._event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, seconds)
        request = event.workflow_execution_update_accepted_event_attributes.accepted_request
        request.meta.update_id, request.meta.identity = update_id, "chat-channel@test"
        request.input.name = MESSAGE
        request.input.args.CopyFrom(_payloads(message))

    def accepted(self, update_id: str, turn: int, seconds: int) -> None:
        event = self._event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, seconds)
        completed = event.workflow_execution_update_completed_event_attributes
        completed.meta.update_id = update_id
        completed.outcome.success.CopyFrom(_payloads(MessageAccepted(case_id=CASE_ID, message_id="m", turn=turn)))

    def refused(self, update_id: str, code: str, seconds: int) -> None:
        event = self._event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, seconds)
        completed = event.workflow_execution_update_completed_event_attributes
        completed.meta.update_id = update_id
        completed.outcome.failure.message = "You are writing faster than we can answer."
        info = completed.outcome.failure.application_failure_info
        info.type = MESSAGE_REFUSED
        info.details.CopyFrom(_payloads({"code": code}))

    def completed(self, view: CaseView, seconds: int) -> WorkflowHistory:
        event = self._event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, seconds)
        event.workflow_execution_completed_event_attributes.result.CopyFrom(_payloads(view))
        return WorkflowHistory(workflow_id=f"case-{CASE_ID}", events=self.events)


def _entry(seq: int, speaker: Speaker, text: str, turn: int, **more: Any) -> ConversationEntry:
    return ConversationEntry(
        seq=seq, speaker=speaker, text=text, at=T0 + timedelta(seconds=seq * 10), turn=turn, **more
    )


def _view(entries: list[ConversationEntry]) -> CaseView:
    return CaseView(
        case_id=CASE_ID,
        status=CaseStatus.WITHDRAWN,
        phase=Phase.WAITING_APPROVAL,
        applicant="alice",
        tenant="qinghe",
        question=QUESTION,
        language=Language.EN,
        model="rehearsal",
        answer=ANSWER,
        budgets=Budgets(),
        conversation=entries,
    )


def conversation_history(
    *,
    message_token: str | None = None,
    change: Callable[[list[ConversationEntry]], list[ConversationEntry]] = lambda entries: entries,
    refused_text: str = REFUSED_TEXT,
) -> tuple[WorkflowHistory, str]:
    """A case whose customer asked, was asked for the order, gave it, was refused once for writing too
    fast, and got an answer from the case's records; and the further message's token."""
    token = message_token or _token(now=T0 + timedelta(seconds=20))
    case = CaseInput(
        case_id=CASE_ID,
        question=QUESTION,
        language=Language.EN,
        applicant=demo_identity("alice"),
        applicant_token=_token(),
    )
    history = HistoryBuilder(case)
    history.message("u-2", CustomerMessage(text=HOSTILE, token=token, message_id="msg-00000002"), 30)
    history.accepted("u-2", 2, 31)
    history.message("u-3", CustomerMessage(text=refused_text, token=token, message_id="msg-00000003"), 32)
    history.refused("u-3", "message_too_frequent", 33)
    credential = MessageCredential(subject="alice", issuer="built-in", fingerprint=token_fingerprint(token))
    entries = [
        _entry(1, Speaker.CUSTOMER, QUESTION, 1),
        _entry(2, Speaker.SERVICE, ASKED, 1, source=ReplySource.MODEL_DRAFT),
        _entry(3, Speaker.CUSTOMER, HOSTILE, 2, credential=credential),
        _entry(4, Speaker.SERVICE, ANSWER, 2, source=ReplySource.CASE_RECORDS),
    ]
    return history.completed(_view(change(entries)), 60), token


def _states(history: WorkflowHistory) -> list[tuple[int, MessageState, str]]:
    case = CaseInput.model_validate(
        pydantic_data_converter.payload_converter.from_payload(
            history.events[0].workflow_execution_started_event_attributes.input.payloads[0], CaseInput
        )
    )
    report = verify_conversation(conversation_of(history), case, _keys())
    return [(check.turn, check.state, check.detail) for check in report.checks]


# --- audit ------------------------------------------------------------------------------------------


def test_the_audit_lists_every_message_and_reply_with_who_when_and_the_credential() -> None:
    history, token = conversation_history()
    audit = audit_from_history(history)
    lines = audit_lines(audit)
    text = " ".join(" ".join(lines).split())  # the words, however the lines wrap
    fingerprint = hashlib.sha256(token.encode()).hexdigest()[:16]
    assert "conversation (UTC, from the workflow's result) 2 message(s) from the customer, 2 replies" in text
    start = lines.index(next(line for line in lines if line.startswith("conversation (")))
    said = [line for line in lines[start:] if line.startswith("      | ")]
    assert said[:2] == [f"      | {ASKED}", f"      | {HOSTILE}"]  # the question and the answer are pointed at
    assert "customer, message 1 (applicant token): the question above" in text
    assert "service, reply to 1: model draft (reviewed)" in text
    assert f"alice, message 2, built-in credential {fingerprint}" in text
    assert "update event 2 from client chat-channel@test, message id msg-00000002" in text
    assert "service, reply to 2: case records (answered by code): what the customer was told, below" in text
    assert f"refused message_too_frequent ({len(REFUSED_TEXT)} characters, text not shown)" in text
    assert REFUSED_TEXT not in text and token not in text and "eyJ" not in text
    too_wide = [line for line in lines if cell_len(line) > WIDTH and len(line.split()) > 1]
    assert not too_wide, too_wide

    data = audit_json(audit)["conversation"]
    assert [entry["text"] for entry in data["entries"]] == [QUESTION, ASKED, HOSTILE, ANSWER]
    assert data["entries"][2]["credential"] == {"subject": "alice", "issuer": "built-in", "fingerprint": fingerprint}
    taken, refused = data["messages"]
    assert (taken["outcome"], taken["turn"], taken["text"], taken["token_fingerprint"]) == (
        "accepted",
        2,
        HOSTILE,
        fingerprint,
    )
    assert (refused["outcome"], refused["refusal"], refused["text"]) == ("refused", "message_too_frequent", None)
    whole = json.dumps(audit_json(audit))
    assert token not in whole and REFUSED_TEXT not in whole


def test_a_history_without_a_conversation_says_so() -> None:
    committed = ROOT / "tests" / "histories" / "v0.10" / "answered_delivery-2026-12-issue46.json"
    audit = audit_from_history(history_from_json(committed.read_text(encoding="utf-8"), "case-x"))
    assert "  conversation: no transcript (a case before release 0.11)" in audit_lines(audit)
    assert audit_json(audit)["conversation"]["entries"] == []


# --- verify -----------------------------------------------------------------------------------------


def test_every_message_of_an_honest_conversation_verifies() -> None:
    history, _ = conversation_history()
    states = _states(history)
    assert [(turn, state) for turn, state, _ in states] == [
        (1, MessageState.OK),
        (2, MessageState.OK),
        (0, MessageState.OK),
    ]
    assert "signed by the issuer for this case, valid when accepted" in states[1][2]
    assert states[2][2] == "1 refused message(s) (message_too_frequent); none of their texts is in the transcript"


def _another_fingerprint(entries: list[ConversationEntry]) -> list[ConversationEntry]:
    credential = MessageCredential(subject="alice", issuer="built-in", fingerprint="0" * 16)
    return [entry.model_copy(update={"credential": credential}) if entry.seq == 3 else entry for entry in entries]


def _words_changed(entries: list[ConversationEntry]) -> list[ConversationEntry]:
    return [entry.model_copy(update={"text": "QH-1002"}) if entry.seq == 3 else entry for entry in entries]


def _refused_words_kept(entries: list[ConversationEntry]) -> list[ConversationEntry]:
    return [*entries, _entry(5, Speaker.SERVICE, REFUSED_TEXT, 3, source=ReplySource.STATUS_NOTICE)]


def _question_changed(entries: list[ConversationEntry]) -> list[ConversationEntry]:
    return [entries[0].model_copy(update={"text": "Refund QH-1002"}), *entries[1:]]


@pytest.mark.parametrize(
    ("change", "turn", "says"),
    [
        (_another_fingerprint, 2, "the transcript names credential 0000000000000000"),
        (_words_changed, 2, "no accepted message update in the history holds this text"),
        (_refused_words_kept, 0, "(message_too_frequent) is entry 5 of the transcript"),
        (_question_changed, 1, "the first message is not the question the case was started with"),
    ],
)
def test_an_altered_transcript_breaks_the_message_it_alters(
    change: Callable[[list[ConversationEntry]], list[ConversationEntry]], turn: int, says: str
) -> None:
    history, _ = conversation_history(change=change)
    broken = [(check_turn, detail) for check_turn, state, detail in _states(history) if state is MessageState.BROKEN]
    assert len(broken) == 1 and broken[0][0] == turn and says in broken[0][1], broken


def test_a_token_that_does_not_prove_the_customer_of_this_case_breaks_its_message() -> None:
    for token, says in [
        (_token(case_id="another-case"), "token_for_another_case"),
        (_token(now=T0 - timedelta(hours=1)), "token_expired"),
        (_forged_token(), "bad_signature"),
    ]:
        history, _ = conversation_history(message_token=token)
        [message] = [(state, detail) for turn, state, detail in _states(history) if turn == 2]
        assert message[0] is MessageState.BROKEN and says in message[1], message
        assert token not in message[1]


def _forged_token() -> str:
    claims = jwt.decode(_token(), options={"verify_signature": False})
    return jwt.encode(claims, Ed25519PrivateKey.generate(), algorithm="EdDSA", headers={"kid": "issuer"})


def test_an_outside_issuers_token_is_reported_not_re_verifiable_offline_never_verified() -> None:
    outside = "https://login.example.test"
    token = jwt.encode(
        {"sub": "alice", "iss": outside, "aud": "support-case", "exp": T0 + timedelta(hours=1), "iat": T0},
        Ed25519PrivateKey.generate(),
        algorithm="EdDSA",
    )

    def outside_credential(entries: list[ConversationEntry]) -> list[ConversationEntry]:
        credential = MessageCredential(subject="alice", issuer=outside, fingerprint=token_fingerprint(token))
        return [entry.model_copy(update={"credential": credential}) if entry.seq == 3 else entry for entry in entries]

    history, _ = conversation_history(message_token=token, change=outside_credential)
    [message] = [(state, detail) for turn, state, detail in _states(history) if turn == 2]
    assert message[0] is MessageState.UNCHECKED
    assert "not re-verifiable offline" in message[1] and outside in message[1]


# --- the commands -----------------------------------------------------------------------------------


def _starter(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(tmp_path / "state"), *args]
    env = {key: value for key, value in os.environ.items() if key != "SUPPORT_DEBUG"}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def test_verify_and_audit_commands_read_the_conversation_from_an_exported_history(tmp_path: Path) -> None:
    history, token = conversation_history()
    honest = tmp_path / "honest.json"
    honest.write_text(history.to_json(), encoding="utf-8")
    done = _starter(tmp_path, "verify", CASE_ID, "--history", str(honest))
    assert done.returncode == ExitCode.CHAIN_INCOMPLETE, done.stdout + done.stderr  # no proposal: the chain stops
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert (
        "conversation: 2 customer message(s), 2 replies of the service, 1 refused, from the workflow's result" in lines
    )
    assert any(line.startswith("  message 2     OK ") for line in lines), lines
    assert token not in done.stdout and REFUSED_TEXT not in done.stdout

    audit = _starter(tmp_path, "audit", CASE_ID, "--history", str(honest))
    assert audit.returncode == ExitCode.DECIDED, audit.stderr
    assert f"      | {HOSTILE}" in audit.stdout.splitlines() and token not in audit.stdout

    altered, _ = conversation_history(change=_words_changed)
    forged = tmp_path / "forged.json"
    forged.write_text(altered.to_json(), encoding="utf-8")
    broken = _starter(tmp_path, "verify", CASE_ID, "--history", str(forged))
    assert broken.returncode == ExitCode.CHAIN_BROKEN, broken.stdout + broken.stderr
    [line] = broken.stderr.strip().splitlines()
    assert line.startswith("error: conversation_broken: message 2 does not hold: no accepted message update")
    assert "chain verified" not in broken.stdout


def test_the_runs_of_a_long_conversation_join_into_one_each_entry_once() -> None:
    """A case that continued as new: each run carries only the latest entries; the audit and verify read
    every run and join them by entry number, and count the numbers no run read holds."""
    speakers = {1: Speaker.CUSTOMER, 0: Speaker.SERVICE}
    said = [_entry(seq, speakers[seq % 2], f"entry {seq}", (seq + 1) // 2) for seq in range(1, 9)]
    logged = CaseEvent(at=T0, kind="message_accepted", detail="message 2 from alice under built-in credential x")
    first = RunConversation("run-1", [], said[:5], 0, "the case records", [logged])
    second = RunConversation("run-2", [], said[3:6], 3, "the state it carried in", [logged])
    third = RunConversation("run-3", [], said[7:], 7, "the workflow's result", [])
    whole = whole_conversation([first, second, third])
    assert [entry.seq for entry in whole.entries] == [1, 2, 3, 4, 5, 6, 8]
    assert whole.missing == 1 and whole.runs == 3 and whole.events == [logged]
    assert whole.read_from == "the workflow's result and the transcripts of 2 earlier run(s)"
    assert len(whole.customer_entries) == 3 and len(whole.replies) == 4

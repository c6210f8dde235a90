"""The Web UI's current details say how much was said and until when the case waits, never the words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from contracts.case import Phase
from contracts.case_input import Lifecycle
from contracts.conversation import MessageCredential, ReplySource, Speaker
from tests.workflows.state_support import waiting_state
from workflows.case_details import current_details

NOW = datetime(2026, 12, 7, 9, 30, tzinfo=UTC)
SECRET_WORDS = "my card ends in 4242 <b>bold</b>"


def credential() -> MessageCredential:
    return MessageCredential(subject="alice", issuer="built-in", fingerprint="0123456789abcdef")


def test_a_case_waiting_for_its_customer_says_the_counts_and_until_when_without_a_word_of_text() -> None:
    state = waiting_state()
    talk = state.conversation
    talk.add(Speaker.CUSTOMER, "Please refund QH-1001", NOW, turn=1)
    talk.add(Speaker.SERVICE, "Which order?", NOW, turn=1, source=ReplySource.MODEL_DRAFT)
    talk.messages = 1
    talk.accept(SECRET_WORDS, "m-1", NOW + timedelta(minutes=1), credential())
    state.lifecycle = Lifecycle(phase=Phase.WAITING_CUSTOMER)
    talk.waiting_until = NOW + timedelta(hours=24)

    details = current_details(state, NOW)
    assert "- **Conversation:** 2 message(s) from the customer, 1 reply; " in details
    assert "waiting for the customer's answer until 2026-12-08 09:30Z" in details
    assert "4242" not in details and "<b>" not in details and "Which order?" not in details


def test_entries_carried_out_of_a_long_conversation_are_counted_as_earlier() -> None:
    state = waiting_state()
    talk = state.conversation
    talk.messages, talk.dropped = 30, 20
    talk.add(Speaker.SERVICE, "news", NOW, turn=30, source=ReplySource.CASE_RECORDS)
    details = current_details(state, NOW)
    line = next(row for row in details.splitlines() if row.startswith("- **Conversation:**"))
    assert line == "- **Conversation:** 30 message(s) from the customer; 1 reply in the last 1 entry (20 earlier)"
    assert "waiting for the customer" not in line  # it waits for a reviewer

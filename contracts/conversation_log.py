"""The conversation a case keeps in its state: the transcript, the messages waiting for a turn, and the
counters its limits are checked against (:mod:`contracts.conversation`).

Part of :class:`contracts.case_input.CaseState`, so a case that continues as new carries it; the
transcript is carried bounded (:data:`contracts.conversation.KEPT_ENTRIES`). Nothing here calls
Temporal: the workflow passes in the time.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from contracts.case import MAX_QUESTION_CHARS
from contracts.conversation import (
    KEPT_ENTRIES,
    MAX_MESSAGE_CHARS,
    MAX_PENDING_MESSAGES,
    MAX_REPLY_CHARS,
    ConversationEntry,
    MessageCredential,
    ReplySource,
    Speaker,
)

RECENT_WINDOW = timedelta(minutes=1)
RECENT_KEPT = 600
KEPT_MESSAGE_IDS = 64
"""Message ids remembered for idempotency: a resend of one of the last this many is not taken twice."""


class PendingMessage(BaseModel):
    """A customer message accepted and not yet taken up by a turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn: int = Field(ge=1)
    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)


class ConversationLog(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entries: list[ConversationEntry] = Field(default_factory=list, max_length=KEPT_ENTRIES)
    dropped: int = Field(default=0, ge=0)
    """Entries before the kept ones."""
    last_seq: int = Field(default=0, ge=0)
    messages: int = Field(default=0, ge=0)
    """Customer messages the case has taken, the first (its question) included."""
    run_messages: int = Field(default=0, ge=0)
    """Customer messages taken in this run (a run continues as new past a limit)."""
    inbox: list[PendingMessage] = Field(default_factory=list, max_length=MAX_PENDING_MESSAGES)
    message_ids: dict[str, int] = Field(default_factory=dict)
    """The turn each recent message id was accepted as (idempotency of a resent message)."""
    last_message_at: datetime | None = None
    recent: list[datetime] = Field(default_factory=list, max_length=RECENT_KEPT)
    """When the messages of the last minute were taken (the rate limit counts them)."""
    turn: int = Field(default=1, ge=1)
    """The customer message the case is working on or last answered."""
    model_turns: int = Field(default=0, ge=0)
    """Turns that called the model (plan to deliver)."""
    request: list[str] = Field(default_factory=list, max_length=20)
    """The customer's messages since the last answer: together, the question the current turn works on."""
    waiting_until: datetime | None = None

    def add(
        self,
        speaker: Speaker,
        text: str,
        at: datetime,
        *,
        turn: int,
        source: ReplySource | None = None,
        credential: MessageCredential | None = None,
    ) -> ConversationEntry:
        self.last_seq += 1
        entry = ConversationEntry(
            seq=self.last_seq,
            speaker=speaker,
            text=text[:MAX_REPLY_CHARS],
            at=at,
            turn=turn,
            source=source,
            credential=credential,
        )
        self.entries.append(entry)
        if len(self.entries) > KEPT_ENTRIES:
            self.dropped += len(self.entries) - KEPT_ENTRIES
            del self.entries[: len(self.entries) - KEPT_ENTRIES]
        return entry

    def take_first(self, question: str, at: datetime) -> None:
        """The case's question is message 1."""
        self.messages = self.run_messages = 1
        self.last_message_at = at
        self.request = [question]
        self.add(Speaker.CUSTOMER, question, at, turn=1)

    def accept(self, text: str, message_id: str, at: datetime, credential: MessageCredential) -> int:
        """Take a further message: its turn number. The caller has checked :meth:`refusal`-worthy limits."""
        self.messages += 1
        self.run_messages += 1
        turn = self.messages
        self.last_message_at = at
        self.recent = [*self.in_last_minute(at), at][-RECENT_KEPT:]
        self.message_ids[message_id] = turn
        if len(self.message_ids) > KEPT_MESSAGE_IDS:
            for old in list(self.message_ids)[: len(self.message_ids) - KEPT_MESSAGE_IDS]:
                del self.message_ids[old]
        self.inbox.append(PendingMessage(turn=turn, text=text))
        self.add(Speaker.CUSTOMER, text, at, turn=turn, credential=credential)
        return turn

    def in_last_minute(self, now: datetime) -> list[datetime]:
        return [moment for moment in self.recent if now - moment < RECENT_WINDOW]

    def take_next(self) -> PendingMessage:
        """The oldest pending message, now the one the case works on; it joins the current request."""
        message = self.inbox.pop(0)
        self.turn = message.turn
        self.request = [*self.request, message.text][-20:]
        return message

    def answered(self) -> None:
        """The current request got its answer: the next message starts a new one."""
        self.request = []

    @property
    def question(self) -> str:
        """The current request's messages, newest last, bounded to a case question's length (oldest
        messages are left out first)."""
        kept: list[str] = []
        size = 0
        for text in reversed(self.request):
            size += len(text) + 1
            if size > MAX_QUESTION_CHARS and kept:
                break
            kept.append(text[-MAX_QUESTION_CHARS:])
        return "\n".join(reversed(kept))

    @property
    def latest(self) -> str:
        return self.request[-1] if self.request else ""

    def reply_to(self, turn: int) -> ConversationEntry | None:
        """The first service entry answering message ``turn``."""
        return next((e for e in self.entries if e.speaker is Speaker.SERVICE and e.turn == turn), None)

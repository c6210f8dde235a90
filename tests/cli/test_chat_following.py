"""Following a conversation's turn without a server: the ``reply`` update is asked again until the
reply exists or the case ends (a closed case answers from its transcript), a wait that runs out says
the case goes on, ``ask``'s wait stops when the case waits for the customer, and a turn's progress
lines come before its reply, up to where the case stood when it answered.

Doubles stand in for Temporal (the case handle's reads) and for time, so nothing waits on a clock."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from case_client import CaseClosed, Progress
from case_client._codes import WaitCode
from case_client._following import CaseProbe, follow_reply, follow_until_settled
from case_client._pollers import QueuePollers
from case_client._progress import CaseWork
from cli.conversation_turns import LineReader, follow_turn
from contracts.case import CaseStatus, CaseView, Phase
from contracts.conversation import (
    ConversationEntry,
    ConversationView,
    ProgressItem,
    ProgressKind,
    ReplySource,
    Speaker,
    TurnReply,
)
from contracts.errors import TransientError
from contracts.knowledge import Language
from tests.reviewer_console.console_double import waiting_view

AT = datetime(2026, 12, 7, 9, 30, tzinfo=UTC)


def entry(seq: int, speaker: Speaker, text: str, turn: int) -> ConversationEntry:
    source = ReplySource.MODEL_DRAFT if speaker is Speaker.SERVICE else None
    return ConversationEntry(seq=seq, speaker=speaker, text=text, at=AT, turn=turn, source=source)


QUESTION = entry(2, Speaker.SERVICE, "Which order is this about?", 1)


def turn_reply(status: CaseStatus, reply: ConversationEntry | None = None, offset: int = 0) -> TurnReply:
    return TurnReply(case_id="c1", turn=1, status=status, reply=reply, progress_offset=offset)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def asking(clock: Clock, answers: list[TurnReply | None], asked: list[float]):
    """``ask(seconds)`` answering from ``answers`` (None: the case has closed), each ask taking the
    seconds it was given, as the ``reply`` update waits in the case."""

    async def ask(seconds: float) -> TurnReply:
        asked.append(seconds)
        clock.now += seconds
        answer = answers.pop(0)
        if answer is None:
            raise CaseClosed("c1")
        return answer

    return ask


def transcript(status: CaseStatus, *entries: ConversationEntry) -> ConversationView:
    return ConversationView(
        case_id="c1", tenant="qinghe", customer="alice", language=Language.EN, status=status, entries=list(entries)
    )


async def test_the_reply_is_asked_for_again_until_it_exists() -> None:
    clock, asked = Clock(), list[float]()
    answers: list[TurnReply | None] = [
        turn_reply(CaseStatus.RUNNING),
        turn_reply(CaseStatus.WAITING_CUSTOMER, QUESTION, offset=7),
    ]

    async def no_transcript() -> ConversationView:
        raise AssertionError("a running case answers by its reply update")

    got = await follow_reply("c1", 1, asking(clock, answers, asked), no_transcript, wait_seconds=300, clock=clock)
    assert got.reply == QUESTION and got.progress_offset == 7
    assert asked == [30.0, 30.0]  # never more than the update may wait in the case


async def test_a_case_that_closed_answers_from_its_transcript() -> None:
    clock, asked = Clock(), list[float]()
    withdrawn = entry(4, Speaker.SERVICE, "Your request is withdrawn; nothing was paid.", 2)

    async def read() -> ConversationView:
        return transcript(CaseStatus.WITHDRAWN, QUESTION, entry(3, Speaker.CUSTOMER, "withdraw", 2), withdrawn)

    got = await follow_reply("c1", 2, asking(clock, [None], asked), read, wait_seconds=60, clock=clock)
    assert (got.status, got.reply, got.turn) == (CaseStatus.WITHDRAWN, withdrawn, 2)


async def test_a_wait_that_runs_out_says_the_message_was_taken_and_the_case_goes_on() -> None:
    clock, asked = Clock(), list[float]()
    answers: list[TurnReply | None] = [turn_reply(CaseStatus.RUNNING)] * 3

    async def read() -> ConversationView:
        raise AssertionError("not closed")

    with pytest.raises(TransientError) as raised:
        await follow_reply("c1", 1, asking(clock, answers, asked), read, wait_seconds=45, clock=clock)
    assert raised.value.code == WaitCode.CASE_WORKING and asked == [30.0, 15.0]
    assert "no reply to message 1 yet after 45 s (status running); your message was taken" in raised.value.message


async def test_a_reply_wait_no_worker_takes_up_ends_at_the_deadline_saying_so() -> None:
    async def unanswered(_seconds: float) -> TurnReply:
        await asyncio.Event().wait()  # the update waits for a worker that never comes
        raise AssertionError("unreachable")

    async def read() -> ConversationView:
        raise AssertionError("not closed")

    with pytest.raises(TransientError) as raised:
        await follow_reply("c1", 3, unanswered, read, wait_seconds=0, grace=0.01)
    assert raised.value.code == WaitCode.WORKER_BUSY
    assert raised.value.message.startswith("case c1: no worker took up the wait for the reply to message 3")


async def test_a_case_that_waits_for_a_person_without_a_reply_is_returned_as_it_is() -> None:
    clock, asked = Clock(), list[float]()
    answers: list[TurnReply | None] = [turn_reply(CaseStatus.WAITING_APPROVAL)]

    async def read() -> ConversationView:
        raise AssertionError("not closed")

    got = await follow_reply("c1", 1, asking(clock, answers, asked), read, wait_seconds=10, clock=clock)
    assert got.status is CaseStatus.WAITING_APPROVAL and got.reply is None


async def test_asks_wait_ends_when_the_case_waits_for_the_customer() -> None:
    asking_view = waiting_view("c1").model_copy(
        update={"status": CaseStatus.WAITING_CUSTOMER, "phase": Phase.WAITING_CUSTOMER, "record_path": "r/c1.json"}
    )
    unrecorded = asking_view.model_copy(update={"record_path": None})  # its record not yet written
    views = [waiting_view("c1").model_copy(update={"status": CaseStatus.RUNNING}), unrecorded, asking_view]
    clock = Clock()

    async def read(_first: bool) -> CaseView:
        return views.pop(0)

    async def never(*_: object) -> CaseView:
        raise AssertionError("a case waiting for the customer has not ended")

    async def work() -> CaseWork:
        return CaseWork("q")

    async def pollers(_work: CaseWork) -> QueuePollers:
        return QueuePollers("q", ())

    async def sleep(seconds: float) -> None:
        clock.now += seconds

    probe = CaseProbe("c1", read, never, work, pollers)
    view = await follow_until_settled(probe, wait_seconds=60, poll_seconds=0.5, clock=clock, sleep=sleep)
    assert view.status is CaseStatus.WAITING_CUSTOMER and views == []


# --- a turn at the terminal: progress lines, then the reply ---


def progress(offset: int, kind: ProgressKind, text: str, status: CaseStatus = CaseStatus.RUNNING) -> Progress:
    return Progress(offset, ProgressItem(kind=kind, text=text, at=AT, turn=1, status=status))


class HandleDouble:
    """A case whose stream holds ``items`` (published one by one once the reply is asked for) and
    whose reply update answers ``answer`` once every item before its offset is out."""

    def __init__(self, items: list[Progress], answer: TurnReply, *, stream_fails: bool = False) -> None:
        self.items = items
        self.answer = answer
        self.stream_fails = stream_fails
        self.published = asyncio.Event()
        self.read_from: int | None = None

    async def _stream(self, offset: int) -> AsyncIterator[Progress]:
        self.read_from = offset
        if self.stream_fails:
            raise RuntimeError("no stream on this build")
        await self.published.wait()
        for item in self.items:
            if item.offset >= offset:
                yield item
                await asyncio.sleep(0)
        await asyncio.Event().wait()  # a live case's stream stays open

    def progress(self, from_offset: int = 0) -> AsyncIterator[Progress]:
        return self._stream(from_offset)

    async def reply_within(self, turn: int, *, timeout: float) -> TurnReply:
        self.published.set()
        return self.answer

    async def progress_offset(self) -> int:
        return self.answer.progress_offset


async def test_a_turns_progress_is_shown_from_its_offset_up_to_where_the_case_answered() -> None:
    items = [
        progress(3, ProgressKind.MESSAGE_RECEIVED, "message 2 received"),
        progress(4, ProgressKind.READING_ORDER, "reading order QH-1001"),
        progress(5, ProgressKind.REPLY, "We can refund 129.00."),
        progress(6, ProgressKind.WAITING_FOR_REVIEWER, "waiting for a reviewer", CaseStatus.WAITING_APPROVAL),
    ]
    case = HandleDouble(items, turn_reply(CaseStatus.WAITING_APPROVAL, QUESTION, offset=7))
    shown: list[str] = []
    answer, seen = await follow_turn(case, 1, 3, timeout=60, show=lambda item: shown.append(item.text))  # type: ignore[arg-type]
    assert case.read_from == 3 and answer.status is CaseStatus.WAITING_APPROVAL
    assert shown == [p.item.text for p in items] and seen.next_offset == 7


async def test_a_stream_that_cannot_be_read_costs_its_lines_never_the_reply() -> None:
    case = HandleDouble([], turn_reply(CaseStatus.WAITING_CUSTOMER, QUESTION, offset=2), stream_fails=True)
    shown: list[str] = []
    answer, _ = await follow_turn(case, 1, 0, timeout=60, show=lambda item: shown.append(item.text))  # type: ignore[arg-type]
    assert answer.reply == QUESTION and shown == []


async def test_a_chats_input_is_read_line_by_line_to_its_end() -> None:
    reader = LineReader(io.StringIO("I want a refund for my lamp\r\nIt is order QH-1001\n\n"))
    assert [await reader.next() for _ in range(4)] == [
        "I want a refund for my lamp",
        "It is order QH-1001",
        "",
        None,
    ]

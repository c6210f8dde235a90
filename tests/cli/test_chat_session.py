"""``chat``'s session without a server: the first line starts a case, later lines are messages under a
token for that case, each turn prints its progress and then its reply, a refusal is its sentence and
the chat goes on, an ended case lets the next line start a new one, and leaving says how to carry on.

Doubles stand in for the case client and its cases (what :class:`cli.conversation_commands.ChatSession`
calls), so nothing connects."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from case_client import MessageRefused, Progress
from cli.conversation_commands import ChatSession
from contracts.case import TERMINAL_STATUSES, CaseStatus
from contracts.conversation import (
    ConversationEntry,
    ConversationView,
    MessageAccepted,
    MessageRefusal,
    ProgressItem,
    ProgressKind,
    ReplySource,
    Speaker,
    TurnReply,
    refusal_sentence,
)
from contracts.identity import Identity
from contracts.knowledge import Language
from keystore import demo_identity

AT = datetime(2026, 12, 7, 9, 30, tzinfo=UTC)
STARTER = "python starter.py --profile alice"


def reply(turn: int, text: str, status: CaseStatus, offset: int) -> TurnReply:
    entry = ConversationEntry(
        seq=2 * turn, speaker=Speaker.SERVICE, text=text, at=AT, turn=turn, source=ReplySource.MODEL_DRAFT
    )
    return TurnReply(case_id="c1", turn=turn, status=status, reply=entry, progress_offset=offset)


class CaseDouble:
    """A case answering each message with the next of ``turns`` (its progress texts and its reply)."""

    def __init__(self, turns: list[tuple[list[str], TurnReply]]) -> None:
        self.case_id = "c1"
        self.turns = turns
        self.items: list[Progress] = []
        self.tokens: list[str] = []
        self.refusal: MessageRefusal | None = None

    def _publish(self, turn: int) -> None:
        texts, _ = self.turns[turn - 1]
        for text in texts:
            item = ProgressItem(kind=ProgressKind.LOOKING_UP, text=text, at=AT, turn=turn, status=CaseStatus.RUNNING)
            self.items.append(Progress(len(self.items), item))

    async def _stream(self, offset: int) -> AsyncIterator[Progress]:
        for progress in self.items[offset:]:
            yield progress
        last_turn = self.items[-1].item.turn if self.items else 1
        if self.turns[last_turn - 1][1].status not in TERMINAL_STATUSES:
            await asyncio.Event().wait()  # a live case's stream stays open; an ended one's ends

    def progress(self, from_offset: int = 0) -> AsyncIterator[Progress]:
        return self._stream(from_offset)

    async def progress_offset(self) -> int:
        return len(self.items)

    async def say(self, text: str, *, token: str, language: Language = Language.EN) -> MessageAccepted:
        if self.refusal is not None:
            raise MessageRefused(self.refusal, refusal_sentence(self.refusal, language))
        self.tokens.append(token)
        turn = len(self.tokens) + 1
        self._publish(turn)
        return MessageAccepted(case_id="c1", message_id="m" * 8, turn=turn)

    async def reply_within(self, turn: int, *, timeout: float) -> TurnReply:
        return self.turns[turn - 1][1]

    async def conversation(self) -> ConversationView:
        raise AssertionError("not read in a chat that started its own case")


class CasesDouble:
    def __init__(self, case: CaseDouble) -> None:
        self.case = case
        self.started: list[tuple[str, Language | None]] = []

    async def converse(
        self, applicant: Identity, text: str, *, language: Language | None, wait_seconds: float
    ) -> tuple[CaseDouble, TurnReply | None]:
        self.started.append((text, language))
        self.case._publish(1)
        return self.case, None


class SignerDouble:
    def applicant_token(self, identity: Identity, case_id: str) -> str:
        return f"token-{identity.subject}-{case_id}"


def session(language: Language | None = None) -> ChatSession:
    alice = demo_identity("alice")
    signer = SignerDouble()
    return ChatSession(alice, signer, starter=STARTER, worker="w", language=language, pacing=0)  # type: ignore[arg-type]


async def test_a_chat_starts_a_case_writes_to_it_and_says_how_to_carry_it_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    case = CaseDouble(
        [
            (["Reading your message."], reply(1, "Which order is this about?", CaseStatus.WAITING_CUSTOMER, 1)),
            (["Reading order QH-1001."], reply(2, "We can refund CNY 129.00.", CaseStatus.WAITING_APPROVAL, 2)),
        ]
    )
    cases, chat = CasesDouble(case), session()
    await chat.send(cases, "I want a refund for my lamp")  # type: ignore[arg-type]
    await chat.send(cases, "  It is order QH-1001 ")  # type: ignore[arg-type]
    assert cases.started == [("I want a refund for my lamp", None)]
    assert case.tokens == ["token-alice-c1"]  # a further message carries the writer's token for this case
    assert capsys.readouterr().out.splitlines() == [
        "Case c1 started.",
        "… Reading your message.",
        "service: Which order is this about?",
        "Case c1 waits for your answer.",
        "… Reading order QH-1001.",
        "service: We can refund CNY 129.00.",
        "Case c1: a proposal waits for approval; nothing is paid or changed before it is",
        "  approved.",
        'You can still write: ask for news, or write "withdraw" to withdraw the request.',
    ]
    assert chat.goodbye() == [
        "Case c1 goes on without this chat.",
        "Continue it with:",
        f'  {STARTER} say c1 "…"',
        f"  {STARTER} chat --case c1",
    ]


async def test_when_the_case_ends_the_next_line_starts_a_new_case(capsys: pytest.CaptureFixture[str]) -> None:
    case = CaseDouble(
        [
            ([], reply(1, "We can refund CNY 129.00.", CaseStatus.WAITING_APPROVAL, 0)),
            (["Your request was withdrawn; nothing was paid."], reply(2, "Withdrawn.", CaseStatus.WITHDRAWN, 1)),
        ]
    )
    cases, chat = CasesDouble(case), session()
    await chat.send(cases, "Please refund QH-1001")  # type: ignore[arg-type]
    await chat.send(cases, "withdraw")  # type: ignore[arg-type]
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == [
        "Case c1 has ended: the customer withdrew the request before anyone approved it;",
        "  nothing was paid.",
        "Your next message starts a new case.",
    ]
    assert chat.case is None and chat.goodbye() == []  # the end was said when it came
    await chat.send(cases, "Where is QH-1005?")  # type: ignore[arg-type]
    assert [text for text, _ in cases.started] == ["Please refund QH-1001", "Where is QH-1005?"]


async def test_a_refused_message_is_its_sentence_and_the_chat_goes_on(capsys: pytest.CaptureFixture[str]) -> None:
    case = CaseDouble([([], reply(1, "请问是哪个订单？", CaseStatus.WAITING_CUSTOMER, 0))])
    cases, chat = CasesDouble(case), session(Language.ZH)
    await chat.send(cases, "我的台灯要退款")  # type: ignore[arg-type]
    assert cases.started == [("我的台灯要退款", Language.ZH)]
    case.refusal = MessageRefusal.TOO_FREQUENT
    await chat.send(cases, "QH-1001")  # type: ignore[arg-type]
    captured = capsys.readouterr()
    assert "客服: 请问是哪个订单？" in captured.out.splitlines()
    assert captured.err.strip() == f"未发送：{refusal_sentence(MessageRefusal.TOO_FREQUENT, Language.ZH)}"
    assert chat.case is case  # still this case
    case.refusal = MessageRefusal.CASE_CLOSED
    await chat.send(cases, "还在吗？")  # type: ignore[arg-type]
    assert chat.case is None and "您的下一条消息将创建新的案件。" in capsys.readouterr().err


async def test_an_empty_or_over_long_line_is_said_and_nothing_is_sent(capsys: pytest.CaptureFixture[str]) -> None:
    cases, chat = CasesDouble(CaseDouble([])), session()
    await chat.send(cases, "x" * 2001)  # type: ignore[arg-type]
    assert cases.started == [] and "longer than 2000 characters" in capsys.readouterr().err
    assert chat.goodbye() == ["Chat ended; no case was started."]

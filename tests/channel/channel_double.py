"""The channel's test double of the cases (:class:`customer_channel.Conversations`): conversations held
in memory, what was started and sent recorded, a refusal or an outage on demand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from case_client._conversation import MessageRefused, Progress
from contracts.case_input import CaseInput
from contracts.case_status import CaseStatus
from contracts.conversation import (
    ConversationEntry,
    ConversationView,
    CustomerMessage,
    MessageAccepted,
    MessageRefusal,
    ProgressItem,
    ProgressKind,
    Speaker,
    TurnReply,
    refusal_sentence,
)
from contracts.knowledge import Language
from customer_channel import CaseNotFound

NOW = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)


def view_of(
    case_id: str, customer: str = "alice", tenant: str = "qinghe", text: str = "Where is QH-1005?"
) -> ConversationView:
    entry = ConversationEntry(seq=1, speaker=Speaker.CUSTOMER, text=text, at=NOW, turn=1)
    return ConversationView(
        case_id=case_id,
        tenant=tenant,
        customer=customer,
        language=Language.EN,
        status=CaseStatus.WAITING_CUSTOMER,
        entries=[entry],
    )


def item(kind: ProgressKind, text: str, status: CaseStatus = CaseStatus.RUNNING) -> ProgressItem:
    return ProgressItem(kind=kind, text=text, at=NOW, turn=1, status=status)


@dataclass
class ConversationsDouble:
    views: dict[str, ConversationView] = field(default_factory=dict)
    items: dict[str, list[ProgressItem]] = field(default_factory=dict)
    started: list[CaseInput] = field(default_factory=list)
    sent: list[tuple[str, CustomerMessage]] = field(default_factory=list)
    refuse_with: MessageRefusal | None = None
    polled: bool = True
    broken: bool = False
    calls: int = 0

    async def serving(self) -> bool:
        self.calls += 1
        return self.polled

    async def start(self, case: CaseInput, *, wait_seconds: float) -> TurnReply:
        self.calls += 1
        if self.refuse_with is not None:
            raise MessageRefused(self.refuse_with, refusal_sentence(self.refuse_with, case.language))
        self.started.append(case)
        self.views[case.case_id] = view_of(case.case_id, case.applicant.subject, case.applicant.tenant, case.question)
        return TurnReply(case_id=case.case_id, turn=1, status=CaseStatus.RUNNING, progress_offset=0)

    async def send(self, case_id: str, message: CustomerMessage, *, language: Language) -> MessageAccepted:
        self.calls += 1
        if self.refuse_with is not None:
            raise MessageRefused(self.refuse_with, refusal_sentence(self.refuse_with, language))
        self.sent.append((case_id, message))
        return MessageAccepted(case_id=case_id, message_id=message.message_id, turn=len(self.sent) + 1)

    async def conversation(self, case_id: str) -> ConversationView:
        self.calls += 1
        if self.broken:
            raise RuntimeError("the double is broken")
        if case_id not in self.views:
            raise CaseNotFound
        return self.views[case_id]

    async def progress(self, case_id: str, from_offset: int) -> AsyncIterator[Progress]:
        self.calls += 1
        for offset, entry in enumerate(self.items.get(case_id, [])):
            if offset >= from_offset:
                yield Progress(offset=offset, item=entry)

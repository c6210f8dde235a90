"""What the console shows, read for one reviewer: the inbox rows and a case page. Every read goes
through the case client as that reviewer (``list_cases`` and ``read``), so another tenant's case is
never listed and reads exactly like a missing one. Nothing here renders: templates do, autoescaped.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from case_client import CaseSummary
from contracts.case import NEAR_EXPIRY, CaseEvent, CaseStatus, CaseView, ReviewOutcome
from contracts.credentials import SignedReview
from contracts.effect_card import CardRow, EffectCard, action_rows, effect_rows
from contracts.errors import SupportError, TransientError
from contracts.identity import Identity
from contracts.knowledge import Language
from contracts.names import EventKind
from knowledge.store import KnowledgeBase
from reviewer_console.conversation import ConversationLine, conversation_lines
from reviewer_console.words import Text, Words


class CaseReader(Protocol):
    """What the console needs of :class:`case_client.CaseHandle`."""

    async def read(self, viewer: Identity, *, start_hint: str, check_worker: bool = True) -> CaseView: ...

    async def listed(self, viewer: Identity) -> CaseSummary: ...

    async def question(self) -> str: ...

    async def events(self) -> list[CaseEvent]: ...

    async def review(self, decision: SignedReview) -> ReviewOutcome: ...


class CaseSource(Protocol):
    """What the console needs of :class:`case_client.CaseClient` (a test passes a double)."""

    def list_cases(self, viewer: Identity, status: CaseStatus | None = None) -> AsyncIterator[CaseSummary]: ...

    def open(self, case_id: str) -> CaseReader: ...

    async def workers_polling(self) -> bool: ...


@dataclass(frozen=True)
class InboxRow:
    """One waiting case. ``confirmed``: read from the case itself; otherwise only Temporal's visibility
    listed it (its search attributes), while no worker answers, and what only the case knows (time
    left, approvals so far, the currency) is unknown until one does."""

    case_id: str
    amount_text: str
    amount_detail: str
    order_id: str
    customer: str
    age: str
    time_left: str
    expires_at: datetime | None
    approvals: str
    confirmed: bool
    near_expiry: bool = False
    """The proposal closes, unpaid, within :data:`NEAR_EXPIRY`: the row is marked so that it is not missed."""
    escalated_to: str | None = None
    """The tenant's escalation reviewer, once the case asked them to decide it."""


@dataclass(frozen=True)
class Inbox:
    rows: list[InboxRow]
    serving: bool
    """Whether a worker polls the case task queue, so that a decision taken now is recorded."""


def near_expiry(seconds_left: float) -> bool:
    return 0 < seconds_left <= NEAR_EXPIRY.total_seconds()


def duration_text(seconds: float, *, expired: str = "expired") -> str:
    """``4 min 05 s``, ``2 h 03 min``, or ``expired`` at or below zero: whole units, for a person."""
    if seconds <= 0:
        return expired
    return Words(Language.EN).duration(seconds)


def inbox_row(summary: CaseSummary, view: CaseView, *, now: datetime, words: Words) -> InboxRow | None:
    """The row of a waiting case, or None if it no longer waits with a proposal a reviewer decides."""
    if view.status is not CaseStatus.WAITING_APPROVAL:
        return None
    if view.action is not None:
        return action_row(summary, view, now=now, words=words)
    if view.proposal is None:
        return None
    proposal = view.proposal
    required = view.effect.approvals_required if view.effect else 1
    approved = len(view.effect.approved_by) if view.effect else 0
    left = (proposal.expires_at - now).total_seconds()
    return InboxRow(
        case_id=view.case_id,
        amount_text=words.money(proposal.amount_cents, proposal.currency),
        amount_detail=words.cents(proposal.amount_cents),
        order_id=proposal.order_id,
        customer=view.applicant,
        age=_age(summary, now, words),
        time_left=words.time_left(left),
        expires_at=proposal.expires_at,
        approvals=f"{approved} / {required}",
        confirmed=True,
        near_expiry=near_expiry(left),
        escalated_to=view.escalated_to,
    )


def action_row(summary: CaseSummary, view: CaseView, *, now: datetime, words: Words) -> InboxRow | None:
    """The row of an action waiting for agreement, when its rule asks reviewers (else none decides here)."""
    action = view.action
    assert action is not None
    if action.requires.reviewers == 0:
        return None
    effect = action.effect
    left = (action.expires_at - now).total_seconds()
    return InboxRow(
        case_id=view.case_id,
        amount_text=words.money(effect.refund_cents, effect.currency),
        amount_detail=f"{action.kind.value} · {words.label('customer confirmed' if view.confirmed_by else 'customer')}",
        order_id=effect.target,
        customer=view.applicant,
        age=_age(summary, now, words),
        time_left=words.time_left(left),
        expires_at=action.expires_at,
        approvals=f"{len(view.approved_by)} / {action.requires.reviewers}",
        confirmed=True,
        near_expiry=near_expiry(left),
        escalated_to=view.escalated_to,
    )


def action_card_rows(view: CaseView, words: Words) -> list[CardRow]:
    """What executing the action does, as every rendering shows it (:func:`contracts.effect_card.action_rows`),
    labels in the reviewer's language and the money currency first; the expiry is the page's time left."""
    action = view.action
    assert action is not None
    effect = action.effect
    rows: list[CardRow] = []
    for row in action_rows(action, confirmed_by=view.confirmed_by, approved_by=view.approved_by):
        if row.label == "expires":
            continue
        text = row.text
        if row.label == "action":
            text = f"{text} · {words(Text.SIMULATED)}"
        elif row.label == "customer confirmed" and not action.requires.customer:
            text = words.label(text)
        elif row.label == "money back":
            money = f"{words.money(effect.refund_cents, effect.currency)} ({words.cents(effect.refund_cents)})"
            text = f"{money} → {effect.refund_to or '-'}"
        rows.append(CardRow(words.label(row.label), text, row.data))
    return rows


def listed_row(summary: CaseSummary, *, now: datetime, words: Words) -> InboxRow:
    """The row of a case as visibility lists it, when the case itself cannot be asked."""
    cents = summary.refund_cents
    return InboxRow(
        case_id=summary.case_id,
        amount_text=words.amount(cents) if cents is not None else "-",
        amount_detail=words.cents(cents) if cents is not None else "",
        order_id=summary.order_id or "-",
        customer=summary.applicant or "-",
        age=_age(summary, now, words),
        time_left=words(Text.UNKNOWN_NOW),
        expires_at=None,
        approvals="-",
        confirmed=False,
    )


def _age(summary: CaseSummary, now: datetime, words: Words) -> str:
    seconds = (now - summary.started).total_seconds()
    return words.duration(seconds) if seconds >= 1 else words(Text.JUST_NOW)


async def inbox(cases: CaseSource, reviewer: Identity, *, now: datetime, start_hint: str, words: Words) -> Inbox:
    """The reviewer's tenant's cases waiting for approval, soonest expiry first, as Temporal's
    visibility lists them, whether or not a worker answers. While one answers, each case is read from
    the case itself (one that no longer waits is left out); once a case does not answer (no worker
    polls, or the one that polled has stopped or is stuck), the rest are shown as listed rather than
    each asked in turn, and the inbox says that decisions wait."""
    summaries = [summary async for summary in cases.list_cases(reviewer, CaseStatus.WAITING_APPROVAL)]
    serving = await cases.workers_polling()
    rows: list[InboxRow] = []
    for summary in summaries:
        if not serving:
            rows.append(listed_row(summary, now=now, words=words))
            continue
        try:
            view = await cases.open(summary.case_id).read(reviewer, start_hint=start_hint, check_worker=False)
        except TransientError:
            serving = False
            rows.append(listed_row(summary, now=now, words=words))
            continue
        except SupportError:  # not this reviewer's after all, or ended between the listing and the read
            continue
        row = inbox_row(summary, view, now=now, words=words)
        if row is not None:
            rows.append(row)
    far = datetime.max.replace(tzinfo=UTC)
    return Inbox(sorted(rows, key=lambda row: (row.expires_at or far, row.case_id)), serving)


@dataclass(frozen=True)
class CitedPassage:
    passage_id: str
    title: str
    text: str


@dataclass(frozen=True)
class CasePage:
    view: CaseView
    rows: list[CardRow]
    passages: list[CitedPassage]
    facts: list[tuple[str, str]]
    refusals: list[CaseEvent]
    approvals: list[CaseEvent]
    waiting: bool
    """The case waits for a review of a proposal."""
    approved_by_viewer: bool
    """The signed-in reviewer's approval is among those the case holds (four-eyes: another is needed)."""
    expires_at: datetime | None
    time_left: str
    conversation: list[ConversationLine] = field(default_factory=list)
    """The case's messages and replies, oldest first (:mod:`reviewer_console.conversation`)."""
    earlier_entries: int = 0
    """Entries older than the ones the case carries now (in its earlier records and histories)."""
    waiting_until: datetime | None = None
    """While the case waits for the customer's answer: when it closes if nobody writes."""
    near_expiry: bool = False
    """The proposal closes, unpaid, within :data:`NEAR_EXPIRY`."""

    @property
    def decidable(self) -> bool:
        """Approve and Reject are offered: the case waits, this reviewer has not approved, and time is left."""
        return self.waiting and not self.approved_by_viewer and self.expires_at is not None


def card_rows(card: EffectCard, words: Words) -> list[CardRow]:
    """The effect card as every rendering shows it, labels in the reviewer's language, the amount
    currency first, and without the expiry (the page shows it as time left, in the reviewer's zone)."""
    rows: list[CardRow] = []
    for row in effect_rows(card):
        if row.label == "expires":
            continue
        text = row.text
        if row.label == "refund":
            text = f"{words.money(card.amount_cents, card.currency)} ({words.cents(card.amount_cents)}) · "
            text += f"{card.order_id} · {words(Text.SIMULATED)}"
        rows.append(CardRow(words.label(row.label), text, row.data))
    return rows


def rule_facts(view: CaseView, words: Words) -> list[tuple[str, str]]:
    """The facts the refund rule used, from the quote and the card (the invoice total beside the refund)."""
    quote = view.quote
    if quote is None:
        return []
    delivered = (
        f"{quote.delivered_on.isoformat()}, {quote.days_since_delivery} days ago"
        if quote.delivered_on
        else "not delivered"
    )
    facts = [
        ("order", f"{quote.order_id} (version {quote.order_version})"),
        ("delivered", delivered),
        ("paid items", words.money(quote.paid_items_cents, quote.currency)),
        ("already refunded", words.money(quote.refunded_cents, quote.currency)),
        ("freight (not refunded)", words.money(quote.freight_cents, quote.currency)),
        ("refund", f"{words.money(quote.amount_cents, quote.currency)} ({words.cents(quote.amount_cents)})"),
    ]
    card = view.effect
    if card is not None and card.return_received is not None:
        facts.insert(2, ("warehouse receipt", "received" if card.return_received else "NOT received"))
    if card is not None and card.invoice_total_cents is not None:
        facts.append(("invoice total", words.money(card.invoice_total_cents, card.currency)))
    return [(words.label(label), text) for label, text in facts]


def cited_passages(view: CaseView, knowledge: KnowledgeBase, policy_tenant: str) -> list[CitedPassage]:
    """The text of each passage the answer cites, as the knowledge base holds it for the case's tenant."""
    found: list[CitedPassage] = []
    as_of = view.quote.as_of if view.quote else None
    for citation in view.citations:
        if as_of is None:
            break
        with contextlib.suppress(SupportError):
            passage = knowledge.read_passage(citation, tenant=policy_tenant, as_of=as_of)
            found.append(CitedPassage(passage.passage_id, passage.page_title, passage.text))
            continue
        with contextlib.suppress(SupportError):
            for passage in knowledge.read_page(citation, tenant=policy_tenant, language=view.language, as_of=as_of):
                found.append(CitedPassage(passage.passage_id, passage.page_title, passage.text))
    return found


def case_page(
    view: CaseView,
    events: list[CaseEvent],
    knowledge: KnowledgeBase,
    *,
    policy_tenant: str,
    viewer: str,
    now: datetime,
    words: Words,
) -> CasePage:
    action = view.action
    reviewed = action is None or action.requires.reviewers > 0
    waiting = view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None and reviewed
    pending = action or view.proposal
    expires_at = pending.expires_at if waiting and pending is not None else None
    left = (expires_at - now).total_seconds() if expires_at is not None else 0.0
    approved_by = view.approved_by if action is not None else view.effect.approved_by if view.effect else []
    rows = action_card_rows(view, words) if action is not None else card_rows(view.effect, words) if view.effect else []
    return CasePage(
        view=view,
        rows=rows,
        passages=cited_passages(view, knowledge, policy_tenant),
        facts=rule_facts(view, words),
        refusals=[event for event in events if event.kind == EventKind.REVIEW_REFUSED],
        approvals=[event for event in events if event.kind in (EventKind.REVIEW_ACCEPTED, EventKind.SETTLED)],
        waiting=waiting,
        approved_by_viewer=waiting and viewer in approved_by,
        expires_at=expires_at if left > 0 else None,
        time_left=words.time_left(left),
        conversation=conversation_lines(view, words),
        earlier_entries=view.conversation_dropped,
        waiting_until=view.waiting_until if view.status is CaseStatus.WAITING_CUSTOMER else None,
        near_expiry=waiting and near_expiry(left),
    )

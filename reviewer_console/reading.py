"""What the console shows, read for one reviewer: the inbox rows and a case page. Every read goes
through the case client as that reviewer (``list_cases`` and ``read``), so another tenant's case is
never listed and reads exactly like a missing one. Nothing here renders: templates do, autoescaped.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from case_client import CaseSummary
from contracts.case import CaseEvent, CaseStatus, CaseView, ReviewOutcome
from contracts.credentials import SignedReview
from contracts.effect_card import CardRow, effect_rows, money
from contracts.errors import SupportError
from contracts.identity import Identity
from contracts.names import EventKind
from knowledge.store import KnowledgeBase


class CaseReader(Protocol):
    """What the console needs of :class:`case_client.CaseHandle`."""

    async def read(self, viewer: Identity, *, start_hint: str, check_worker: bool = True) -> CaseView: ...

    async def events(self) -> list[CaseEvent]: ...

    async def review(self, decision: SignedReview) -> ReviewOutcome: ...


class CaseSource(Protocol):
    """What the console needs of :class:`case_client.CaseClient` (a test passes a double)."""

    def list_cases(self, viewer: Identity, status: CaseStatus | None = None) -> AsyncIterator[CaseSummary]: ...

    def open(self, case_id: str) -> CaseReader: ...


@dataclass(frozen=True)
class InboxRow:
    case_id: str
    amount_cents: int
    currency: str
    amount_text: str
    order_id: str
    customer: str
    age: str
    time_left: str
    expires_at: datetime
    approvals: str


def duration_text(seconds: float, *, expired: str = "expired") -> str:
    """``4 min 05 s``, ``2 h 03 min``, or ``expired`` at or below zero: whole units, for a person."""
    if seconds <= 0:
        return expired
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s"


def inbox_row(summary: CaseSummary, view: CaseView, *, now: datetime) -> InboxRow | None:
    """The row of a waiting case, or None if it no longer waits with a proposal."""
    if view.status is not CaseStatus.WAITING_APPROVAL or view.proposal is None:
        return None
    proposal = view.proposal
    required = view.effect.approvals_required if view.effect else 1
    approved = len(view.effect.approved_by) if view.effect else 0
    return InboxRow(
        case_id=view.case_id,
        amount_cents=proposal.amount_cents,
        currency=proposal.currency,
        amount_text=money(proposal.amount_cents, proposal.currency),
        order_id=proposal.order_id,
        customer=view.applicant,
        age=duration_text((now - summary.started).total_seconds(), expired="just now"),
        time_left=duration_text((proposal.expires_at - now).total_seconds()),
        expires_at=proposal.expires_at,
        approvals=f"{approved} of {required}",
    )


async def inbox(cases: CaseSource, reviewer: Identity, *, now: datetime, start_hint: str) -> list[InboxRow]:
    """The reviewer's tenant's cases waiting for approval, soonest expiry first. A case that ended
    between the listing and the read is left out."""
    rows: list[InboxRow] = []
    async for summary in cases.list_cases(reviewer, CaseStatus.WAITING_APPROVAL):
        try:
            view = await cases.open(summary.case_id).read(reviewer, start_hint=start_hint, check_worker=False)
        except SupportError:
            continue
        row = inbox_row(summary, view, now=now)
        if row is not None:
            rows.append(row)
    return sorted(rows, key=lambda row: row.expires_at)


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


def rule_facts(view: CaseView) -> list[tuple[str, str]]:
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
        ("paid items", money(quote.paid_items_cents, quote.currency)),
        ("already refunded", money(quote.refunded_cents, quote.currency)),
        ("freight (not refunded)", money(quote.freight_cents, quote.currency)),
        ("refund", f"{quote.amount_cents} cents ({money(quote.amount_cents, quote.currency)})"),
    ]
    card = view.effect
    if card is not None and card.return_received is not None:
        facts.insert(2, ("warehouse receipt", "received" if card.return_received else "NOT received"))
    if card is not None and card.invoice_total_cents is not None:
        facts.append(("invoice total", money(card.invoice_total_cents, card.currency)))
    return facts


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


def case_page(view: CaseView, events: list[CaseEvent], knowledge: KnowledgeBase, *, policy_tenant: str) -> CasePage:
    return CasePage(
        view=view,
        rows=effect_rows(view.effect) if view.effect else [],
        passages=cited_passages(view, knowledge, policy_tenant),
        facts=rule_facts(view),
        refusals=[event for event in events if event.kind == EventKind.REVIEW_REFUSED],
        approvals=[event for event in events if event.kind in (EventKind.REVIEW_ACCEPTED, EventKind.SETTLED)],
        waiting=view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None,
    )

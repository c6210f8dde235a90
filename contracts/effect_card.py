"""The computed effect of a refund proposal: what a reviewer approves, stated by code from the records.

Seed 002's rule: the person confirming a mutation is shown the server's computed effect, never the
model's description of it. Every line here comes from the refund quote (the executable rule's
result), the order as the commerce server returned it, the policy passages the quote cites and the
proposal with its digest. No model text, and nothing the customer typed, reaches a card.

One card, three renderings: the workflow's current details in the Temporal Web UI (markdown,
:mod:`workflows.case_details`), the terminal (``ask``, ``status``, ``review-info``) and ``audit``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from contracts.actions import ActionProposal
from contracts.commerce import Invoice, Order, RefundProposal, RefundQuote
from contracts.knowledge import Passage


class CitedPage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    page_id: str
    title: str


class CardDecision(BaseModel):
    """Who decided the proposal, how and when, as the workflow accepted it (the reviewer's name is the
    subject their signature proved, or the name an unsigned review of an older case claimed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reviewer: str
    decision: str
    """``approve`` or ``reject``."""
    signed: bool
    """The decision came as a reviewer-signed approval token (every case since signed credentials)."""
    via: str | None
    """``update`` or ``signal``: how the decision reached the workflow (None if it was not kept)."""
    at: datetime


class EffectCard(BaseModel):
    """What approving this proposal does, and why the rule allows it (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    order_id: str
    item: str | None
    """The order's SKU, quantity and category, from the commerce record (None if it was not read)."""
    amount_cents: int
    currency: str
    rule_version: str
    quote_id: str
    reasons: list[str]
    """Why the rule admits the refund, one fact per line, from the quote."""
    cited_pages: list[CitedPage]
    digest: str
    expires_at: datetime
    invoice_total_cents: int | None = None
    """The order's invoice total (paid items + freight), shown beside the refund (None on older cards)."""
    return_received: bool | None = None
    """Whether the returns warehouse has received the item, from the order record (the rule requires it;
    None on older cards and when the order was not read)."""
    decided: CardDecision | None = None
    """The accepted review, once there is one (None on older cards and while the proposal waits)."""
    approvals_required: int = 1
    """Distinct reviewers the tenant's policy needs for this amount (2 at or above its threshold)."""
    approved_by: list[str] = []
    """The reviewers whose signed approvals the case accepted so far, in order."""

    @property
    def amount(self) -> str:
        """``12900 cents (CNY 129.00)``."""
        return f"{self.amount_cents} cents ({money(self.amount_cents, self.currency)})"


class CardRow(NamedTuple):
    """One line of the card: ``label``, ``text``, and whether the text came from records (``data``:
    escaped where markdown renders it) or was composed here from numbers and ids."""

    label: str
    text: str
    data: bool = False


def effect_rows(card: EffectCard) -> list[CardRow]:
    """The card's lines, in the order every rendering shows them (Web UI, terminal, audit)."""
    return [
        CardRow("refund", f"{card.amount} for {card.order_id}, SIMULATED payment"),
        *([CardRow("invoice", invoice_text(card.invoice_total_cents, card))] if card.invoice_total_cents else []),
        *([CardRow("item", card.item, data=True)] if card.item else []),
        CardRow("rule", f"{card.rule_version}, quote {card.quote_id}", data=True),
        *(CardRow("why", reason, data=True) for reason in card.reasons),
        *([CardRow("return", return_text(card.return_received))] if card.return_received is not None else []),
        *(CardRow("policy", f"{page.page_id} {page.title}", data=True) for page in card.cited_pages),
        CardRow("digest", card.digest),
        CardRow("expires", card.expires_at.isoformat(timespec="seconds")),
        *([approvals_row(card)] if card.approvals_required > 1 else []),
        *([decision_row(card.decided)] if card.decided else []),
    ]


def approvals_row(card: EffectCard) -> CardRow:
    """``1 of 2 approvals (chen); two distinct reviewers of the tenant are needed for this amount``."""
    who = f" ({', '.join(card.approved_by)})" if card.approved_by else ""
    return CardRow(
        "approvals",
        f"{len(card.approved_by)} of {card.approvals_required} approvals{who}; "
        f"{card.approvals_required} distinct reviewers of the tenant are needed for this amount",
        data=True,
    )


def invoice_text(total_cents: int, card: EffectCard) -> str:
    """The invoice total beside the refund, so a reviewer sees which of the two figures is paid."""
    return (
        f"total {total_cents} cents ({money(total_cents, card.currency)}); the refund is the item balance, "
        "not the invoice total"
    )


def return_text(received: bool) -> str:
    """The warehouse-receipt fact the rule requires, as the order record states it."""
    if received:
        return "received at the returns warehouse (order record)"
    return "NOT received at the returns warehouse (order record)"


def decision_row(decided: CardDecision) -> CardRow:
    """``approved  by chen at 2026-12-01T10:42:07+00:00 (signed approval token, sent as an update)``."""
    how = "signed approval token" if decided.signed else "unsigned review naming the reviewer"
    sent = f", sent as {'an update' if decided.via == 'update' else 'a signal'}" if decided.via else ""
    label = {"approve": "approved", "reject": "rejected"}.get(decided.decision, "decided")
    at = decided.at.isoformat(timespec="seconds")
    return CardRow(label, f"by {decided.reviewer} at {at} ({how}{sent})", data=True)


def money(cents: int, currency: str) -> str:
    """``CNY 129.00`` for 12900 cents: integer arithmetic, never a float."""
    sign = "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    return f"{currency} {sign}{whole}.{part:02d}"


def eligibility_reasons(quote: RefundQuote) -> list[str]:
    """The quote's own facts, as sentences written here."""
    reasons = [f"rule {quote.rule_version}: {quote.reason} (quote {quote.quote_id}, as of {quote.as_of.isoformat()})"]
    if quote.delivered_on is not None and quote.days_since_delivery is not None:
        window = f", window {quote.window_days} days" if quote.window_days is not None else ""
        reasons.append(f"delivered {quote.delivered_on.isoformat()}, {quote.days_since_delivery} days ago{window}")
    reasons.append(
        f"paid items {money(quote.paid_items_cents, quote.currency)}, already refunded "
        f"{money(quote.refunded_cents, quote.currency)}, freight {money(quote.freight_cents, quote.currency)} "
        "not refunded"
    )
    return reasons


def order_item(order: Order | None, order_id: str) -> str | None:
    """``SKU × quantity (category)`` of the order record read for this case, if it is the proposal's order."""
    if order is None or order.order_id != order_id:
        return None
    return f"{order.sku} × {order.quantity} ({order.category})"


def effect_card(
    proposal: RefundProposal,
    digest: str,
    quote: RefundQuote,
    *,
    order: Order | None,
    evidence: Mapping[str, Passage],
    invoice: Invoice | None = None,
    decided: CardDecision | None = None,
    approvals_required: int = 1,
    approved_by: Sequence[str] = (),
) -> EffectCard:
    """The card for a proposal; ``order`` is the case's ``get_order`` fact, ``evidence`` its passages
    by passage id (the quote cites pages; a page's title is that of any of its passages read).

    The card also shows the invoice total (the ``get_invoice`` fact when the case read it, else paid
    items + freight from the quote, which is how an invoice is made), the warehouse receipt from
    ``order`` and the accepted review ``decided``."""
    titles = {passage.page_id: passage.page_title for passage in evidence.values()}
    pages = [CitedPage(page_id=page, title=titles.get(page, "(not read in this case)")) for page in quote.citations]
    return EffectCard(
        order_id=proposal.order_id,
        item=order_item(order, proposal.order_id),
        amount_cents=proposal.amount_cents,
        currency=proposal.currency,
        rule_version=proposal.rule_version,
        quote_id=proposal.quote_id,
        reasons=eligibility_reasons(quote),
        cited_pages=pages,
        digest=digest,
        expires_at=proposal.expires_at,
        invoice_total_cents=invoice_total(invoice, quote),
        return_received=return_received(order, proposal.order_id),
        decided=decided,
        approvals_required=approvals_required,
        approved_by=list(approved_by),
    )


def invoice_total(invoice: Invoice | None, quote: RefundQuote) -> int:
    """The invoice's own total when the case read the invoice of the quoted order, else paid items + freight."""
    if invoice is not None and invoice.order_id == quote.order_id:
        return invoice.total_cents
    return quote.paid_items_cents + quote.freight_cents


def return_received(order: Order | None, order_id: str) -> bool | None:
    """The order record's ``return_received``, if the record read is the proposal's order."""
    if order is None or order.order_id != order_id:
        return None
    return order.return_received


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~&:.])")
"""What can make a link, an image, HTML, emphasis, code or a table of plain text, and the ``:`` and
``.`` of bare URLs that GFM turns into links (a ``-`` or a digit only starts a list at the start of a
line, and data never starts one here: it always follows a label)."""


def markdown_text(text: str, *, limit: int = 200) -> str:
    """``text`` as literal markdown: one line, at most ``limit`` characters, every character that
    could make markup escaped, so that data (a question, a title, a claimed name) never renders as a link, an image,
    HTML or emphasis in the Web UI."""
    flat = " ".join(str(text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return _MARKDOWN_SPECIAL.sub(r"\\\1", flat)


class ProposalForReview(BaseModel):
    """What the ``proposal`` query returns: the proposal, the digest an approval must name, and its effect."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    proposal: RefundProposal
    digest: str
    effect: EffectCard | None = None


def proposal_memo(card: EffectCard) -> str:
    """The memo line of a waiting case (``temporal workflow describe`` shows it without a worker)."""
    return f"{card.amount} for {card.order_id}; digest {card.digest}; expires {card.expires_at.isoformat()}"


def action_rows(
    action: ActionProposal, *, confirmed_by: str | None, approved_by: Sequence[str], receipt_id: str | None = None
) -> list[CardRow]:
    """What executing an action does and who has agreed, from the commerce server's proposal: the one set of
    rows the terminal card, the console and the Web UI's current details show (labels in English)."""
    effect, requires = action.effect, action.requires
    rows = [
        CardRow("action", f"{action.kind.value} · {effect.target}"),
        CardRow("order", f"{effect.status_before} → {effect.status_after} (version {effect.order_version})")
        if effect.order_id is not None
        else CardRow("account", f"default delivery address (version {effect.account_version})"),
        CardRow("money back", f"{money(effect.refund_cents, effect.currency)} → {effect.refund_to or '-'}"),
    ]
    if effect.quote_id is not None:
        rows.append(CardRow("quote", effect.quote_id))
    if effect.invoice_void:
        rows.append(CardRow("invoice", "void"))
    if effect.return_opened is not None:
        opened = effect.return_opened
        due = money(opened.refund_due_cents, effect.currency)
        rows.append(CardRow("return", f"{opened.units} unit(s); {due} → {opened.refund_to} once checked in"))
    if effect.exchange_opened is not None:
        swap = effect.exchange_opened
        difference = money(abs(swap.difference_cents), effect.currency)
        direction = "charged" if swap.difference_cents > 0 else "refunded" if swap.difference_cents else "none"
        rows.append(CardRow("exchange", f"{swap.units} × {swap.sku_before} → {swap.sku_after}"))
        rows.append(CardRow("difference", f"{difference} {direction} ({swap.settle_with}) once checked in"))
    if effect.address_after is not None:
        new = effect.address_after
        text = f"{new.recipient}, {new.phone}, {new.line1}, {new.city} {new.postcode}, {new.country}"
        label = "new address" if effect.order_id is not None else "new default address"
        rows.append(CardRow(label, text, data=True))
    rows += [
        CardRow("policy", ", ".join(effect.policy_pages)),
        CardRow("customer confirmed", (confirmed_by or "-") if requires.customer else "not asked"),
        CardRow("approvals", f"{len(approved_by)} / {requires.reviewers}: {', '.join(approved_by) or '-'}"),
        CardRow("expires", action.expires_at.strftime("%Y-%m-%d %H:%M UTC")),
        CardRow("digest", action.digest),
    ]
    if receipt_id is not None:
        rows.append(CardRow("receipt", f"{receipt_id} (SIMULATED)"))
    return rows

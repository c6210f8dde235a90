"""What the Temporal Web UI shows of a case: its current details (markdown) and one-line step summaries.

Pure and deterministic: the workflow passes its state and ``workflow.now()``. Amounts, the order,
the reasons and the digest come from :class:`contracts.effect_card.EffectCard` (code, from the
records); anything a customer, a model or a would-be reviewer wrote goes through
:func:`contracts.effect_card.markdown_text`, so it is shown as text, never rendered. No token, key or
secret is ever part of the details: the approve command prints a token for the reviewer to paste.
"""

from __future__ import annotations

from datetime import datetime

from contracts.actions import ActionProposal
from contracts.case import CaseStatus, CloseRequest, Phase
from contracts.case_input import CaseState
from contracts.commerce import RefundProposal, RefundReceipt
from contracts.conversation import Speaker
from contracts.effect_card import EffectCard, action_rows, effect_rows, markdown_text, money
from contracts.names import REVIEW, EventKind, workflow_id
from workflows.case_view import case_effect_card

_PHASE_HEADINGS = {
    Phase.PLAN: "Planning",
    Phase.INVESTIGATE: "Investigating with the case's tools",
    Phase.REVIEW: "Drafting an answer and reviewing it independently",
    Phase.DELIVER: "Checking the reviewed answer at the deliver gate",
    Phase.WAITING_APPROVAL: "Waiting for the tenant's reviewer",
    Phase.SETTLE: "Paying the approved refund (simulated)",
    Phase.WAITING_CUSTOMER: "Waiting for the customer's answer",
}


def utc(moment: datetime) -> str:
    """``2026-12-01 10:42Z``: minutes are enough for a person; the card gives the exact ISO time."""
    return moment.strftime("%Y-%m-%d %H:%MZ")


def current_details(s: CaseState, now: datetime) -> str:
    """The case as of ``now``, in markdown: phase, the proposal card while it waits, the receipt after."""
    status = s.lifecycle.status
    lines = [f"### {_heading(s)}", ""]
    if s.plan is not None:
        lines.append(f"- **Intent:** {s.plan.intent.value}; **order:** {s.plan.order_id or 'none named'}")
    lines.append(
        f"- **Budgets used:** model {s.budgets.model_requests}/{s.budgets.max_model_requests}, "
        f"tools {s.budgets.tool_requests}/{s.budgets.max_tool_requests}, turns {s.budgets.turns}"
    )
    lines.append(f"- **Conversation:** {conversation_line(s)}")
    card = case_effect_card(s)
    if card is not None:
        waiting = status is CaseStatus.WAITING_APPROVAL
        lines += ["", *effect_markdown(card, now, waiting=waiting)]
        if status is CaseStatus.WAITING_APPROVAL:
            lines += ["", *review_instructions(s.case.case_id, pending_reviewers(s))]
        lines += ["", *refusals_markdown(s)]
    if s.receipt is not None:
        lines += ["", *receipt_markdown(s.receipt)]
    if s.action is not None:
        lines += ["", *action_markdown(s)]
    if s.escalated_to is not None:
        lines += [
            "",
            f"**Escalated** to {markdown_text(s.escalated_to, limit=40)}: the proposal neared its expiry undecided",
        ]
    if s.lifecycle.outcome is not None:
        lines += ["", f"**Ended:** {status.value} ({markdown_text(s.reason or '', limit=200)})"]
    return "\n".join(lines)


def action_markdown(s: CaseState) -> list[str]:
    """The action proposal: the rows every rendering shows (:func:`contracts.effect_card.action_rows`), the
    digest in a block of its own as a refund's is."""
    action = s.action
    assert action is not None
    receipt = s.action_receipt.receipt_id if s.action_receipt else None
    confirmed = s.confirmation.subject if s.confirmation else None
    approved = [approval.reviewer for approval in s.approvals]
    lines = [f"**What executing {action.kind.value} does** (computed by the commerce server from its records):", ""]
    for row in action_rows(action, confirmed_by=confirmed, approved_by=approved, receipt_id=receipt):
        if row.label != "digest":
            lines.append(f"- **{row.label}:** {markdown_text(row.text, limit=200)}")
    return [
        *lines,
        "",
        "**digest** (a confirmation or an approval names exactly this):",
        "",
        "```text",
        action.digest,
        "```",
    ]


def conversation_line(s: CaseState) -> str:
    """How much was said, by counts and times only: what the customer and the service wrote stays in the
    transcript (the console and ``audit`` show it; a Web UI reader may not be one who should read it)."""
    talk = s.conversation
    replies = sum(1 for entry in talk.entries if entry.speaker is Speaker.SERVICE)
    answered = f"{replies} repl{'y' if replies == 1 else 'ies'}"
    said = f"{talk.messages} message(s) from the customer, {answered}"
    if talk.dropped:
        kept = len(talk.entries)
        said = f"{talk.messages} message(s) from the customer; {answered} in the last {kept} "
        said += "entry" if kept == 1 else "entries"
        said += f" ({talk.dropped} earlier)"
    if s.lifecycle.status is CaseStatus.WAITING_CUSTOMER and talk.waiting_until is not None:
        said += f"; waiting for the customer's answer until {utc(talk.waiting_until)}"
    return said


def effect_markdown(card: EffectCard, now: datetime, *, waiting: bool) -> list[str]:
    """The computed effect: every figure from the quote and the records, never from model text.

    The digest is a code block of its own (the Web UI never wraps one), so
    a reviewer comparing or copying it sees the 64 characters on one line; inline code wraps mid-string."""
    lines = ["**What approving does** (computed by the refund rule from the records, never by the model):", ""]
    for row in effect_rows(card):
        if row.label == "digest":
            continue  # after the list, in a block of its own
        if row.label == "expires" and waiting:
            left = max(int((card.expires_at - now).total_seconds() // 60), 0)
            text = f"{utc(card.expires_at)} ({left} min left at {utc(now)})"
        else:
            text = markdown_text(row.text, limit=200) if row.data else row.text
        lines.append(f"- **{row.label}:** {text}")
    lines += ["", "**digest** (an approval names exactly this):", "", "```text", card.digest, "```"]
    return lines


def pending_reviewers(s: CaseState) -> list[str]:
    """The reviewers of the applicant's tenant in the recorded directory who have not approved yet."""
    if s.directory is None:
        return []
    approved = {approval.reviewer for approval in s.approvals}
    reviewers = s.directory.reviewers(s.case.applicant.tenant)
    return [person.subject for person in reviewers if person.subject not in approved]


def review_instructions(case_id: str, reviewers: list[str]) -> list[str]:
    """How a reviewer of the tenant decides: a signed token, pasted once (the token is never shown here).
    The command names the one reviewer who can decide, or ``REVIEWER`` and the list of those who can."""
    profile = reviewers[0] if len(reviewers) == 1 else "REVIEWER"
    who = (
        f"Reviewers who can decide: {', '.join(markdown_text(name, limit=40) for name in reviewers[:10])}"
        if len(reviewers) > 1
        else ""
    )
    payload = '{"approval_token": "<the token review-info prints>"}'
    return [
        "**To decide**, the tenant's reviewer signs with their own key (a name alone is refused):",
        "",
        f"- Terminal: `python starter.py --profile {profile} review {case_id} --digest <digest> --approve` "
        "(or `--reject`)",
        f"- Temporal CLI or Web UI: `python starter.py --profile {profile} review-info {case_id} --approve` "
        f"(or `--reject`) prints a token; send it once as update (or signal) `{REVIEW}` to "
        f"`{workflow_id(case_id)}` with `{payload}`",
        *([f"- {who}"] if who else []),
    ]


def refusals_markdown(s: CaseState) -> list[str]:
    refused = [event for event in s.log.events if event.kind == EventKind.REVIEW_REFUSED]
    total = len(refused) + s.log.dropped
    lines = [f"**Refused review attempts so far:** {total}"]
    for event in refused[-3:]:
        lines.append(f"- {utc(event.at)}: {markdown_text(event.detail, limit=160)}")
    return lines


def receipt_markdown(receipt: RefundReceipt) -> list[str]:
    return [
        f"**Paid (SIMULATED):** receipt `{receipt.receipt_id}`, {receipt.amount_cents} cents = "
        f"{money(receipt.amount_cents, receipt.currency)} for {receipt.order_id}, approval `{receipt.approval_id}`",
    ]


def _heading(s: CaseState) -> str:
    if s.lifecycle.outcome is not None:
        return f"Case {s.lifecycle.status.value}"
    return _PHASE_HEADINGS[s.lifecycle.phase]


# --- one-line summaries of the steps (Temporal shows them on the timeline and in the history) --------


def tool_summary(name: str, arguments: dict[str, object] | None) -> str:
    """``get_order QH-1001``: an admitted call (its name is one of ours; its arguments are the model's,
    so they are escaped)."""
    shown = ", ".join(markdown_text(str(value), limit=40) for value in (arguments or {}).values())
    return f"{name} {shown}".strip()[:160]


def approval_timer_summary(card: EffectCard) -> str:
    return f"approval window: {card.amount} for {card.order_id}, expires {utc(card.expires_at)}"


def record_summary(s: CaseState) -> str:
    """The record activity's summary tells the story so far: the state it writes and what it proves."""
    view = f"write case record: {s.lifecycle.status.value}"
    if s.receipt is not None:
        return f"{view}, receipt {s.receipt.receipt_id} ({s.receipt.amount_cents} cents, SIMULATED)"
    card = case_effect_card(s)
    if card is not None and s.lifecycle.status is CaseStatus.WAITING_APPROVAL:
        return f"{view}, proposal {card.amount} for {card.order_id}, digest {card.digest[:12]}…"
    return view


def finding_summary(s: CaseState) -> str:
    """What the investigation has established so far, for the next step's summary (results are only
    known after a step is scheduled, so each step names what the previous ones found)."""
    quote = s.quote
    if quote is None:
        return ""
    outcome = f"{quote.amount_cents} eligible" if quote.eligible else f"not eligible ({quote.reason})"
    return f" (calculate_refund {quote.order_id} → {outcome})"


REVIEW_SIGNAL_HELP = (
    'Approve or reject the pending refund, fire and forget: {"approval_token": "<token>"} where the token is '
    "what `starter.py --profile REVIEWER review-info CASE --approve` (or --reject) prints. A name alone is "
    "refused; the outcome is in the case events."
)
REVIEW_UPDATE_HELP = (
    'Approve or reject the pending refund and get the answer: {"approval_token": "<token>"} where the token is '
    "what `starter.py --profile REVIEWER review-info CASE --approve` (or --reject) prints. A refused, "
    "expired, reused or malformed attempt fails the update and is recorded."
)


def settle_summary(approval_id: str, proposal: RefundProposal) -> str:
    return f"execute_refund {approval_id[:16]}…: {proposal.amount_cents} cents for {proposal.order_id}"


def closure_summary(request: CloseRequest) -> str:
    proposal = request.proposal
    return f"close_refund_proposal {request.outcome.value}: {proposal.amount_cents} cents for {proposal.order_id}"


def refused_input_details(reason: str) -> str:
    """The Web UI's current details of a run that refused its input: the reason, and nothing of the input."""
    return f"## Input refused: this run read nothing and takes no review\n\n{markdown_text(reason, limit=300)}"


def action_summary(action: ActionProposal) -> str:
    return f"execute_action {action.proposal_id}: {action.kind.value} of {action.effect.target}"

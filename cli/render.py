"""What a person sees at the command line: the case card, the review commands and the tables.

Nothing printed here is ever read as Rich markup, emoji codes or highlighting: answers, questions,
notes and citations come from customers and models, and "[/b]" or "[link=...]" in them is text. So
every console is ``markup=False`` and every model or customer string goes in as plain data.
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from case_client import CaseSummary, TemporalTarget, workflow_id
from case_client._conversation import awaited_confirmation
from case_history.verify import SIGNED_DECISION, ChainReport
from cli.conversation_render import (
    chat_command,
    display_width,
    reply_lines,
    say_command,
    sentence_lines,
    wrap,
)
from cli.conversation_text import Line, status_sentence, until_text
from cli.conversation_text import line as sentence
from contracts.case import AnswerSource, CaseStatus, CaseView, Decision
from contracts.commerce import RefundQuote
from contracts.conversation import Speaker
from contracts.effect_card import EffectCard, action_rows, effect_rows
from contracts.names import REVIEW
from devstack.temporal_cli import shell_path, temporal_cli_for_display

if TYPE_CHECKING:
    from mcp_types import Resource, Tool

console = Console(markup=False, emoji=False, highlight=False)
errors = Console(stderr=True, soft_wrap=True, markup=False, emoji=False, highlight=False)

ANSWER_AUTHORS = {
    AnswerSource.MODEL_DRAFT: "the model (reviewed, admitted by the deliver gate)",
    AnswerSource.RECEIPT: "the service, from the commerce receipt",
    AnswerSource.STATUS_NOTICE: "the service: the fixed notice for this status",
}


WEB_UI_UPDATE = ("More Actions", "Send an Update")
"""The Web UI's (2.54) menu path to an update dialog, as review-info names it and the browser test clicks it."""
WEB_UI_SIGNAL = ("More Actions", "Send a Signal")
"""The Web UI's menu path to a signal dialog."""


def worker_command(state_dir: Path) -> str:
    """How to start a worker for this state dir, as a person would type it here."""
    return f"{shell_path(sys.executable)} worker.py --state-dir {shell_path(state_dir)}"


def starter_command(state_dir: Path, profile: str) -> str:
    """``starter.py`` for this state dir and profile, as a person would type it here."""
    return f"{shell_path(sys.executable)} starter.py --state-dir {shell_path(state_dir)} --profile {profile}"


def tenant_reviewer(tenant: str, state_dir: Path) -> str:
    """A reviewer of ``tenant`` in the local directory for the printed command (the first listed), or
    ``REVIEWER`` when the directory lists none or cannot be read here."""
    from contracts.errors import SupportError
    from keystore import directory_location, load_directory

    try:
        reviewers = load_directory(directory_location(state_dir)).reviewers(tenant)
    except SupportError:
        reviewers = []
    return reviewers[0].subject if reviewers else "REVIEWER"


def review_commands(view: CaseView, state_dir: Path) -> list[str]:
    """Ready-to-run review commands for the tenant's reviewer: ``review`` signs with the reviewer's own
    key and sends an update; ``review-info --approve`` prints a signed token in the Temporal CLI and
    Web UI forms. A payload that merely names a reviewer is refused, so none is ever printed."""
    starter = starter_command(state_dir, tenant_reviewer(view.tenant, state_dir))
    return [
        f"{starter} review {view.case_id} --digest {view.digest} --approve",
        f"{starter} review {view.case_id} --digest {view.digest} --reject",
        f"{starter} review-info {view.case_id} --approve",
    ]


def signed_review_forms(
    view: CaseView, target: TemporalTarget, *, reviewer: str, decision: Decision, token: str, valid_until: datetime
) -> list[str]:
    """What ``review-info --approve|--reject`` prints: the Temporal CLI update and signal, and the JSON
    for the Web UI's dialogs, each carrying ``token`` (a short-lived credential meant to be pasted)."""
    payload = json.dumps({"approval_token": token})
    temporal = f"{temporal_cli_for_display()} workflow"
    where = f"--address {target.address} --namespace {target.namespace} --workflow-id {workflow_id(view.case_id)}"
    return [
        f"{reviewer} signed {SIGNED_DECISION[decision]} of case {view.case_id}, digest {view.digest}. "
        f"The token is valid until {valid_until.isoformat(timespec='seconds')} and decides the case once: "
        "send it one way only.",
        "Temporal CLI, an update (it answers; a refused one exits non-zero):",
        f"  {temporal} update execute {where} --name {REVIEW} --input '{payload}'",
        "Temporal CLI, a signal (fire and forget; the outcome is in the case events):",
        f"  {temporal} signal {where} --name {REVIEW} --input '{payload}'",
        f"Web UI: open workflow {workflow_id(view.case_id)} (namespace {target.namespace}), "
        f"{' → '.join(WEB_UI_UPDATE)} (or {' → '.join(WEB_UI_SIGNAL)}), choose {REVIEW}, and paste into Data:",
        f"  {payload}",
    ]


def chain_lines(report: ChainReport, source: str, keys_location: str) -> list[str]:
    """``verify``'s report: where the history and the keys came from, then one line per link."""
    lines = [f"case {report.case_id}: chain of proof from {source}, checked with the public keys at {keys_location}"]
    width = max(len(link.name) for link in report.links)
    for link in report.links:
        lines.append(f"  {link.name:<{width}}  {link.state.value:<6}  {link.detail}")
    return lines


CARD_WIDTH = 80
"""Every line of the case card fits 80 columns; a case id, a digest or a receipt id is never broken."""
_LABEL = 10


def card_line(label: str, text: str, *, width: int = CARD_WIDTH) -> list[str]:
    """``  label     text``, the text wrapped at spaces only. An id or a digest always fits; a single
    token too long for the value column (a file path) goes whole on a line of its own."""
    indent = " " * (_LABEL + 4)
    flat = " ".join(str(text).split()) or "-"
    if " " not in flat and len(indent) + len(flat) > width:  # a long path: whole, on a line of its own
        return [f"  {label}", f"    {flat}"]
    return textwrap.wrap(
        flat,
        width=width,
        initial_indent=f"  {label:<{_LABEL}}  ",
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def effect_card_lines(card: EffectCard) -> list[str]:
    """The computed effect a reviewer approves: the same rows as the Web UI's current details."""
    lines = ["  what approving does (computed by the refund rule from the records):"]
    for row in effect_rows(card):
        lines += card_line(row.label, row.text)
    return lines


def case_card_lines(view: CaseView, *, now: str | None = None) -> list[str]:
    """The case card as plain lines (``ask``, ``status``, ``review-info``), at most 80 columns; ``now``
    (for a running case: what it is doing, :meth:`case_client.CaseHandle.work`) follows its phase."""
    lines = [f"case {view.case_id}", f"  (fictional data; model: {view.model})"]
    rows = [
        ("status", status_row(view)),
        ("phase", view.phase.value),
        *([("now", now)] if now else []),
        ("applicant", f"{view.applicant} ({view.tenant})"),
        ("intent", f"{view.intent.value if view.intent else '-'}, order {view.order_id or '-'}"),
        ("answer", view.answer or "-"),
        ("written by", ANSWER_AUTHORS[view.answer_source] if view.answer_source else "-"),
        ("citations", ", ".join(view.citations) or "-"),
    ]
    for label, value in rows:
        lines += card_line(label, value)
    if view.effect is not None:
        lines += effect_card_lines(view.effect)
    elif view.proposal is not None:  # a case recorded before the card existed
        lines += card_line("refund", f"{view.proposal.amount_cents} cents for {view.proposal.order_id}")
        lines += card_line("digest", view.digest or "-")
    if view.receipt:
        lines += card_line("receipt", f"{view.receipt.receipt_id}: {view.receipt.amount_cents} cents (SIMULATED)")
    lines += action_card_lines(view)
    if view.escalated_to:
        lines += card_line("escalated", f"to {view.escalated_to}: the proposal neared its expiry undecided")
    elif view.near_expiry_at is not None:
        noted = view.near_expiry_at.strftime("%Y-%m-%d %H:%M:%S UTC")
        lines += card_line("near expiry", f"noted at {noted}: the proposal neared its expiry undecided")
    budgets = view.budgets
    lines += card_line(
        "budgets",
        f"model {budgets.model_requests}/{budgets.max_model_requests}, tools "
        f"{budgets.tool_requests}/{budgets.max_tool_requests}, turns {budgets.turns}",
    )
    lines += card_line("tokens", view.tokens)
    lines += card_line("cost", model_cost_line(view))
    lines += card_line(
        "record", view.record_path or (f"not written: {view.record_error}" if view.record_error else "-")
    )
    return lines


def action_card_lines(view: CaseView) -> list[str]:
    """The action a case proposed: the rows every rendering shows (:func:`contracts.effect_card.action_rows`)."""
    if view.action is None:
        return []
    receipt = view.action_receipt.receipt_id if view.action_receipt else None
    rows = action_rows(view.action, confirmed_by=view.confirmed_by, approved_by=view.approved_by, receipt_id=receipt)
    lines = ["  what executing the action does (computed by the commerce server from its records):"]
    for row in rows:
        lines += card_line(row.label, row.text)
    return lines


def status_row(view: CaseView) -> str:
    """``waiting_customer: the service asked the customer a question and waits for the answer``: the
    status value (scripts and reviewers search for it), its reason, and what it means."""
    reason = f" ({view.reason})" if view.reason else ""
    return f"{view.status.value}{reason}: {status_sentence(view.status)}"


def customer_turn_lines(view: CaseView, starter: str) -> list[str]:
    """For a case waiting for the customer: the service's question (its last reply, else the answer),
    until when it waits, and how to answer (``say``) or carry on in a chat."""
    if view.status is not CaseStatus.WAITING_CUSTOMER:
        return []
    language = view.language
    asked = next((entry for entry in reversed(view.conversation) if entry.speaker is Speaker.SERVICE), None)
    if asked is not None:
        lines = reply_lines(asked, language)
    else:  # a view without its transcript: the answer is the question
        label = f"{sentence(Line.SERVICE, language)}: "
        lines = wrap(view.answer, first=label, rest=" " * display_width(label)) if view.answer else []
    return [
        *lines,
        *sentence_lines(
            sentence(Line.WAITS_FOR_ANSWER, language, case=view.case_id, until=until_text(view.waiting_until, language))
        ),
        sentence(Line.ANSWER_WITH, language),
        f"  {say_command(starter, view.case_id)}",
        f"  {chat_command(starter, view.case_id)}",
    ]


def print_case_card(view: CaseView, *, now: str | None = None) -> None:
    """Plain print: nothing in a case is read as markup, and nothing is wrapped again by Rich."""
    for line in case_card_lines(view, now=now):
        print(line)


def show_case(view: CaseView, state_dir: Path, *, with_review_commands: bool = True, for_customer: bool = True) -> None:
    """The case card, then (for a case waiting for a reviewer) the exact review commands, or (for one
    waiting for the customer, shown to the customer) the service's question and how to answer it."""
    print_case_card(view)
    if for_customer:
        for text in customer_turn_lines(view, starter_command(state_dir, view.applicant)):
            print(text)
    if for_customer and awaited_confirmation(view) is not None:
        print("The customer agrees by answering yes; their sign-in signs the confirmation over this proposal:")
        print(f"  {starter_command(state_dir, view.applicant)} say {shlex.quote(view.case_id)} yes")
    reviewed = view.action is None or view.action.requires.reviewers > 0
    if with_review_commands and reviewed and view.status is CaseStatus.WAITING_APPROVAL:
        approve, reject, info = review_commands(view, state_dir)
        console.print("A reviewer of the tenant decides, signing with their own key (an update):")
        print(f"  {approve}")  # plain print: a command is copied whole, never wrapped
        print(f"  {reject}")
        console.print("or prints a signed token for the Temporal CLI (update, signal) and the Web UI:")
        print(f"  {info}")


def progress_text(case_id: str, view: CaseView | None = None) -> Text:
    if view is None:
        return Text(f"case {case_id}…")
    return Text(
        f"case {case_id}: phase {view.phase.value}, model requests {view.budgets.model_requests}, "
        f"tool requests {view.budgets.tool_requests}"
    )


def grid(title: str, rows: Sequence[Sequence[Any]], *, fold: bool = False) -> Table:
    """A table whose first row is the header; every cell is shown as text."""
    table = Table(title=title)
    for column in rows[0]:
        if fold:
            table.add_column(str(column), overflow="fold")
        else:
            table.add_column(str(column))
    for row in rows[1:]:
        table.add_row(*(str(cell) for cell in row))
    return table


def case_list_lines(query: str, cases: Iterable[CaseSummary]) -> list[str]:
    """``list`` as plain lines that fit 80 columns: the query wrapped at spaces, then one row per case
    whose case id is whole (never cut or wrapped) and whose time is in UTC to the minute."""
    header = ("case", "status", "order", "refund", "started (UTC)")
    rows = [
        (
            case.case_id,
            (case.status or "-") + (f"/{case.phase}" if case.phase and case.status == CaseStatus.RUNNING else ""),
            case.order_id or "-",
            str(case.refund_cents) if case.refund_cents is not None else "-",
            case.started.astimezone(UTC).strftime("%Y-%m-%d %H:%MZ"),
        )
        for case in cases
    ]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    lines = textwrap.wrap(f"cases ({query})", width=CARD_WIDTH, break_long_words=False, break_on_hyphens=False)
    for row in [header, *rows]:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    if not rows:
        lines.append("(no cases)")
    return lines


def case_list_json(cases: Iterable[CaseSummary]) -> str:
    """``list --json``: one object per case, the fields of :class:`CaseSummary` (times in ISO 8601)."""
    return json.dumps(
        [
            {
                "case_id": case.case_id,
                "status": case.status,
                "phase": case.phase,
                "order_id": case.order_id,
                "refund_cents": case.refund_cents,
                "started": case.started.isoformat(),
            }
            for case in cases
        ],
        indent=2,
    )


def mcp_table(subject: str, tools: Iterable[Tool], resources: Iterable[Resource]) -> Table:
    """The commerce MCP server's tools and resources."""
    table = Table(title=f"commerce MCP server (stdio, profile {subject})")
    table.add_column("kind")
    table.add_column("name")
    table.add_column("description")
    for tool in tools:
        table.add_row("tool", tool.name, (tool.description or "").splitlines()[0])
    for resource in resources:
        table.add_row("resource", str(resource.uri), resource.description or "")
    return table


def quote_table(result: RefundQuote) -> Table:
    """A refund quote, one labelled row per figure."""
    table = Table(title=f"refund quote for {result.order_id} (fictional)", show_header=False)
    for label, value in [
        ("eligible", str(result.eligible)),
        ("reason", result.reason),
        ("amount", f"{result.amount_cents} cents ({result.currency} {result.amount_cents / 100:.2f})"),
        (
            "paid items / freight / refunded",
            f"{result.paid_items_cents} / {result.freight_cents} / {result.refunded_cents}",
        ),
        ("days since delivery", str(result.days_since_delivery)),
        ("rule version", result.rule_version),
        ("order version", str(result.order_version)),
        ("quote id", result.quote_id),
        ("ledger", result.ledger_id or "-"),
        ("cited pages", ", ".join(result.citations) or "-"),
        ("why", result.explanation_en),
    ]:
        table.add_row(label, value)
    return table


def one_line(error: ValidationError) -> str:
    """A pydantic validation error as the one line a person reads."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "input"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"invalid input: {where}: {first['msg']}{more}"


def model_cost_line(view: CaseView) -> str:
    """The case's model cost and the prompt/completion split it was priced from."""
    usage = view.usage
    if not usage.replies:
        return view.cost
    split = f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens"
    return f"{view.cost} ({split})" if usage.prompt_tokens or usage.completion_tokens else view.cost

"""``starter.py audit``'s text form of a :class:`~case_history.audit.CaseAudit` (:func:`audit_lines`: 80
columns, one or two screens). Every string from the history may come from a customer, a model or a
writer of the history: the lines are plain text (print them with ``print`` or a ``markup=False``
console), laid out by :mod:`cli.text_layout`, and no credential is ever printed: a token is shown
as the claims it makes (unverified) and its id.
"""

from __future__ import annotations

import re

from rich.cells import cell_len

from case_history.audit import NOT_VERIFIED, PROPOSED_ARGUMENTS, ActivityCall, CaseAudit
from case_history.audit_reviews import CLAIMED, ReviewAttempt
from case_history.trail import End, unverified_claims
from cli.render import ANSWER_AUTHORS
from cli.text_layout import INDENT, WIDTH, at, brief, brief_value, clean, collapsed, stamp, wrap
from contracts.model_io import ModelCallMeta
from contracts.names import EventKind

ANSWER_LINES = 12
_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
"""A backslash escape of ASCII punctuation: summaries are markdown for the Web UI, shown here as text."""


def audit_lines(audit: CaseAudit, source: str | None = None) -> list[str]:
    """The audit as plain text lines of at most 80 columns (a lone id or digest may be longer)."""
    lines = wrap(f"case {audit.case_id}: audit of {source or 'its workflow history'}", "")
    lines += [NOT_VERIFIED, "(`starter.py verify` checks the signatures); fictional data."]
    for section in (_asked, _timeline, _evidence, _proposal, _reviews, _settlement, _told, _outcome):
        lines += ["", *section(audit)]
    if audit.problems:
        lines += ["", "problems reading the history"]
        for problem in audit.problems:
            lines += wrap(clean(problem))
    return bounded(lines)


LONG_LINE = 2 * WIDTH
"""A line longer than this is one unbroken word that is no id or digest (a pasted blob): it is cut."""
MAX_AUDIT_CHARS = 100_000
"""The most text an audit prints (a few hundred screens); ``--json`` has everything."""
WHOLE = "(--json prints the whole audit)"


def bounded(lines: list[str]) -> list[str]:
    """``lines`` with every over-long line cut to :data:`WIDTH` columns and the whole cut after
    :data:`MAX_AUDIT_CHARS` characters, each cut followed by a line saying how much went and where
    the whole is: a history may hold megabytes (an answer, a question, a tool result)."""
    kept: list[str] = []
    total = 0
    for number, line in enumerate(lines):
        if cell_len(line) > LONG_LINE:
            head = line[:WIDTH]
            while cell_len(head) > WIDTH:
                head = head[:-1]
            kept += [head, f"    ... {len(line) - len(head):,} more characters cut {WHOLE}"]
        else:
            kept.append(line)
        total += min(len(line), LONG_LINE)
        if total > MAX_AUDIT_CHARS and number + 1 < len(lines):
            rest = lines[number + 1 :]
            hidden = sum(len(line) for line in rest)
            kept.append(f"... {len(rest):,} more lines ({hidden:,} characters) cut {WHOLE}")
            break
    return kept


# --- sections ---------------------------------------------------------------------------------------


def _asked(audit: CaseAudit) -> list[str]:
    case, started = audit.trail.case.value, audit.trail.started_at
    if case is None:
        return ["who asked what", *wrap(f"the case input does not decode: {clean(audit.trail.case.problem or '')}")]
    who = case.applicant
    lines = ["who asked what"]
    lines += wrap(
        f"{stamp(started) if started else '-'}: {clean(who.subject)} (tenant {clean(who.tenant)}, "
        f"{who.role.value}), in {case.language.value}"
    )
    lines += wrap(clean(case.question), "  question: ", "    ")
    claims = audit.applicant_claims
    if case.applicant_token is None:
        lines.append("  applicant token: none in the case input")
    elif claims is None:
        lines.append("  applicant token: present, but not readable as a token")
    else:
        token = f"{claims.get('sub')} ({claims.get('tenant')}, {claims.get('role')}) for case {claims.get('case_id')}"
        lines += [*wrap(f"applicant token: {clean(token)}"), f"    ({CLAIMED})"]
    if audit.continued:
        lines.append(f"  this history is run {audit.continued + 1} of the case (it continued as new)")
    return lines


def _timeline(audit: CaseAudit) -> list[str]:
    entries = [(call.at, _activity_lines(call)) for call in audit.activities]
    for event in audit.refusals:
        detail = f"(case log) {clean(event.detail)}"
        entries.append((event.at, wrap(detail, f"{at(event.at)}{clean(event.kind):<22} ", INDENT)))
    entries.sort(key=lambda entry: entry[0])
    models, tools = audit.model_requests, audit.tool_calls
    known = [call.model.usage.total_tokens for call in models if call.model and call.model.usage]
    failed = sum(1 for call in models if call.outcome != End.COMPLETED)
    tokens = f"{sum(known)} tokens reported by {len(known)}" if known else "no token usage reported"
    refused = sum(1 for event in audit.refusals if event.kind == EventKind.TOOL_REFUSED)
    totals = [
        *wrap(f"model requests: {len(models)}, {failed} not completed, {tokens}"),
        *wrap(f"tool calls: {len(tools)} run, {refused} refused by the workflow"),
    ]
    title = "timeline (UTC, in scheduled order; local: a local activity, input not recorded)"
    return [title, *collapsed(lines for _, lines in entries), *totals]


def _activity_lines(call: ActivityCall) -> list[str]:
    """Its time, kind and outcome, then what it was asked (a tool's arguments) or who answered (a model's
    identity and tokens) and its summary, if any; then what came back."""
    tool, head = call.tool, call.outcome
    if tool is not None and tool.ok is not None:
        head = "ok" if tool.ok else "refused"
    head += f", attempt {call.attempt}" if call.attempt > 1 else ""
    head += ", local" if call.local else ""
    if tool is not None:
        head += ": " + (" ".join(f"{key}={brief_value(value)}" for key, value in tool.arguments.items()) or "-")
    elif call.model is not None:
        head += f": {_model(call.model)}"
    lines = wrap(head, f"{at(call.at)}{clean(f'tool {tool.name}' if tool else call.kind):<22} ", INDENT)
    summary = '"' + clean(_MARKDOWN_ESCAPE.sub(r"\1", call.summary)) + '"' if call.summary else ""
    if summary and len(lines) == 1 and cell_len(f"{lines[0]}  {summary}") <= WIDTH:
        lines = [f"{lines[0]}  {summary}"]
    elif summary:
        lines += wrap(summary, INDENT)
    if tool is not None and tool.arguments_from and tool.arguments_from != PROPOSED_ARGUMENTS:  # said in the title
        lines += wrap(clean(f"(arguments from {tool.arguments_from})"), INDENT)
    if tool is not None and tool.ok and tool.result is not None:
        lines += wrap(brief(tool.result), INDENT + "-> ", INDENT + "   ")
    failure = tool.error if tool is not None else call.failure
    if failure:
        lines += wrap(clean(failure), INDENT + ("refused: " if tool and tool.ok is False else "failure: "))
    if call.note:
        lines += wrap(clean(call.note), INDENT)
    return lines


def _evidence(audit: CaseAudit) -> list[str]:
    return [
        "evidence cited",
        *wrap(", ".join(map(clean, audit.answer_citations)) or "nothing", "  by the answer: ", "    "),
        *wrap(", ".join(map(clean, audit.quote_citations)) or "no quote", "  by the refund quote: ", "    "),
    ]


def _proposal(audit: CaseAudit) -> list[str]:
    proposal = audit.proposal
    if proposal is None:
        return ["proposal: none (nothing was proposed to a reviewer)"]
    lines = ["proposal"]
    lines += wrap(
        f"{proposal.amount_cents} cents {proposal.currency} for order {proposal.order_id} of "
        f"{proposal.applicant} ({proposal.tenant})"
    )
    lines += wrap(
        f"order v{proposal.order_version}, rule {proposal.rule_version}, quote {proposal.quote_id}, "
        f"ledger {proposal.ledger_id or '-'}"
    )
    lines += wrap(f"created {stamp(proposal.created_at)}, expires {stamp(proposal.expires_at)}")
    recorded, recomputed = audit.view.digest if audit.view else None, audit.recomputed_digest
    if recorded is None or recorded == recomputed:
        return [*lines, "  digest (sha-256 of the proposal; recomputed here: the same)", f"    {recomputed}"]
    return [*lines, "  digest recorded", f"    {clean(recorded)}", "  recomputed here: DIFFERENT", f"    {recomputed}"]


def _reviews(audit: CaseAudit) -> list[str]:
    if not audit.reviews:
        return ["review attempts: none"]
    blocks = (_review_lines(review, audit.recomputed_digest) for review in audit.reviews)
    return [f"review attempts: {len(audit.reviews)} (who: as the payload claims or names it)", *collapsed(blocks)]


def _review_lines(review: ReviewAttempt, digest: str | None) -> list[str]:
    lines = wrap(f"{review.channel} from client {clean(review.sender) or '?'}", at(review.at), INDENT)
    if review.problem:
        lines += wrap(clean(review.problem), INDENT)
    if review.who is not None:
        token = f", token id {clean(review.token_id)}" if review.token_id else ""
        note = f" ({clean(review.note)})" if review.note else ""
        lines += wrap(f"{clean(review.who)}: {clean(review.decision or '?')}{token}{note}", INDENT)
    if review.label is not None:
        lines.append(f"{INDENT}({review.label})")
    if review.digest is not None and review.digest != digest:
        lines += [f"{INDENT}for another digest:", f"{INDENT}  {clean(review.digest)}"]
    if review.channel == "update":
        lines += wrap(clean(review.answer or "no answer recorded yet"), INDENT + "answered: ")
    recorded = review.recorded
    if recorded is None:
        return [*lines, f"{INDENT}case log: no event for it in this run's last record"]
    return [*lines, *wrap(f"{recorded.kind}: {clean(recorded.detail)}", INDENT + "case log: ")]


def _settlement(audit: CaseAudit) -> list[str]:
    settlement = audit.trail.settlement
    if settlement is None:
        return ["settlement: nothing was executed (no execute_refund activity)"]
    lines = [f"settlement (execute_refund at {stamp(settlement.scheduled_at)}): {settlement.outcome}"]
    request = settlement.request.value
    if request is None:
        lines += wrap(f"the request does not decode: {clean(settlement.request.problem or '')}")
    else:
        proposal = request.proposal
        lines += wrap(
            f"asked to pay {proposal.amount_cents} cents {proposal.currency} for {proposal.order_id}, "
            f"approval {request.approval_id} by {clean(request.reviewer)}, approved "
            f"{stamp(request.approved_at)}"
        )
        claims = unverified_claims(request.approval_token)
        if claims is not None:
            who, decision, jti = (clean(str(claims.get(key))) for key in ("sub", "decision", "jti"))
            lines += [*wrap(f"approval token: {who}: {decision}, token id {jti}"), f"    ({CLAIMED})"]
    receipt = audit.receipt
    if receipt is not None:
        lines += wrap(
            f"receipt {receipt.receipt_id}: {receipt.amount_cents} cents {receipt.currency} for "
            f"{receipt.order_id}, order v{receipt.order_version_after}, at {stamp(receipt.created_at)}"
            f"{', SIMULATED' if receipt.simulated else ''}"
        )
        signed = "signed as the commerce server (claimed, unverified)" if receipt.signature else "unsigned"
        lines.append(f"  receipt signature: {signed}")
    elif settlement.receipt.problem:
        lines += wrap(f"the receipt does not decode: {clean(settlement.receipt.problem)}")
    return lines


def _told(audit: CaseAudit) -> list[str]:
    view = audit.view
    if view is None or not view.answer:
        return ["the customer was told: nothing recorded"]
    author = ANSWER_AUTHORS[view.answer_source] if view.answer_source else "not recorded (an older case)"
    text: list[str] = []
    for paragraph in view.answer.splitlines():
        text += wrap(clean(paragraph), "    ", "    ")
    if len(text) > ANSWER_LINES:
        hidden = len(" ".join(line.strip() for line in text[ANSWER_LINES:]))
        text = [*text[:ANSWER_LINES], f"    ... about {hidden} more characters (--json has the whole answer)"]
    return ["the customer was told", *wrap(f"written by: {author}"), *text]


def _outcome(audit: CaseAudit) -> list[str]:
    ending = audit.ending
    status = f"{ending.status.value if ending.status else 'unknown'}" + (
        f": {clean(ending.reason)}" if ending.reason else ""
    )
    if ending.run_end == End.CONTINUED_AS_NEW:
        text = f"still running: this run continued as new (last recorded: {status})"
    elif ending.run_end is None:
        text = f"still running (last recorded: {status}, from {ending.source})"
    elif ending.run_end == End.COMPLETED:
        text = f"final status {status} (from {ending.source})"
    else:
        text = f"the run {ending.run_end} (last recorded: {status}, from {ending.source})"
    return wrap(text, "outcome: ", "    ")


def _model(meta: ModelCallMeta) -> str:
    who = meta.provider if meta.provider == meta.model else f"{meta.provider}:{meta.model}"
    tokens = f"{meta.usage.total_tokens} tokens" if meta.usage else "tokens unknown"
    return f"{clean(who)}, {tokens}" + (f", model attempt {meta.attempt}" if meta.attempt > 1 else "")

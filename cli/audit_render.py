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
from case_history.conversation import REPLY_AUTHORS, MessageOutcome, MessageUpdate
from case_history.trail import End, unverified_claims
from cli.audit_action import action_lines
from cli.render import ANSWER_AUTHORS
from cli.text_layout import INDENT, WIDTH, at, brief, brief_value, clean, collapsed, stamp, wrap
from contracts.case import CaseEvent
from contracts.conversation import ConversationEntry, Speaker
from contracts.model_io import ModelCallMeta
from contracts.names import EventKind

ANSWER_LINES = 12
_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
"""A backslash escape of ASCII punctuation: summaries are markdown for the Web UI, shown here as text."""


def audit_lines(audit: CaseAudit, source: str | None = None) -> list[str]:
    """The audit as plain text lines of at most 80 columns (a lone id or digest may be longer)."""
    lines = wrap(f"case {audit.case_id}: audit of {source or 'its workflow history'}", "")
    lines += [NOT_VERIFIED, "(`starter.py verify` checks the signatures); fictional data."]
    lines += ["", *_asked(audit), *_conversation(audit)]
    decided = (action_lines, _reviews) if audit.action.proposes else (_proposal, _reviews, _settlement)
    for section in (_timeline, _evidence, *decided, _told, _outcome):
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


def _conversation(audit: CaseAudit) -> list[str]:
    """The conversation after the question: one line when the customer wrote nothing more; else a section
    with every entry of the transcript in order (who, when, under which credential, the words: the
    question and the final answer are pointed at, not repeated), each further message with the update
    that carried it, then the message updates the transcript does not hold."""
    talk = audit.conversation
    if not talk.messages and all(entry.turn == 1 for entry in talk.entries):
        if not talk.entries:
            return ["  conversation: no transcript (a case before release 0.11)"]
        said = [
            f"{_AUTHOR_NAMES[entry.source] if entry.source else '?'} {stamp(entry.at)[11:19]}" for entry in talk.replies
        ]
        return wrap(f"conversation: question; replies: {', '.join(said) or 'none yet'}")
    runs = f", {talk.runs} runs" if talk.runs > 1 else ""
    lines = ["", f"conversation (UTC, from {talk.read_from}{runs})"]
    lines += wrap(f"{len(talk.customer_entries)} message(s) from the customer, {_replies(len(talk.replies))}")
    if talk.missing:
        earlier = f"{talk.missing} earlier entr{'y is' if talk.missing == 1 else 'ies are'}"
        lines += wrap(f"({earlier} not in what was read: see the case's earlier runs)")
    accepted = {message.turn: message for message in talk.messages if message.turn and not message.duplicate}
    logged = {_logged_turn(event.detail): event for event in talk.events if event.kind == EventKind.MESSAGE_ACCEPTED}
    case = audit.trail.case.value
    known = {case.question: "the question above"} if case else {}
    if audit.view is not None and audit.view.answer:
        known[audit.view.answer] = "what the customer was told, below"
    day = None
    for entry in talk.entries:
        if stamp(entry.at)[:10] != day:
            day = stamp(entry.at)[:10]
            lines.append(f"  {day}")
        further = entry.speaker is Speaker.CUSTOMER and entry.credential is not None
        pointer = known.get(entry.text) if not further else None
        lines += _entry_lines(entry, pointer, accepted.get(entry.turn), logged.get(entry.turn) if further else None)
    shown = {entry.turn for entry in talk.customer_entries}
    if any(message.turn not in shown or message.duplicate for message in talk.messages):
        lines.append("  message updates the transcript does not hold (refused words are never shown):")
    for message in talk.messages:
        if message.outcome is not MessageOutcome.ACCEPTED or message.duplicate:
            lines += _unaccepted_lines(message)
        elif message.turn not in shown:
            head = f"update event {message.event_id} at {stamp(message.at)}: accepted as message {message.turn}, "
            lines += wrap(head + "not in the transcript read (a later record holds it)", "  ", "      ")
            lines += _said(message.text or "", CUSTOMER_LINES)
    return lines


CUSTOMER_LINES, REPLY_LINES = 3, 2
"""The most lines of a customer's message and of a reply the text shows (``--json`` has every word)."""
_AUTHOR_NAMES = {source: REPLY_AUTHORS[source].split(" (")[0] for source in REPLY_AUTHORS}


def _replies(count: int) -> str:
    return f"{count} repl{'y' if count == 1 else 'ies'}"


def _entry_lines(
    entry: ConversationEntry, pointer: str | None, update: MessageUpdate | None, logged: CaseEvent | None
) -> list[str]:
    """``[seq] time who: what``, then the words (unless ``pointer`` says where they are), and for a
    further message the update that carried it and, where it says more than this, its case-log event."""
    credential, time = entry.credential, stamp(entry.at)[11:19]
    if entry.speaker is Speaker.SERVICE:
        author = REPLY_AUTHORS[entry.source] if entry.source else "author not recorded"
        head = f"service, reply to {entry.turn}: {author}"
    elif credential is None:
        head = f"customer, message {entry.turn} (applicant token)"
    else:
        head = f"{clean(credential.subject)}, message {entry.turn}, {clean(credential.issuer)} credential"
        head += f" {credential.fingerprint}"
    lines = wrap(f"[{entry.seq}] {time} {head}" + (f": {pointer}" if pointer else ""), "  ", "      ")
    if not pointer:
        lines += _said(entry.text, REPLY_LINES if entry.speaker is Speaker.SERVICE else CUSTOMER_LINES)
    if credential is not None and update is None:
        lines.append("      no message update of the runs read carried it (`starter.py verify` checks)")
    elif credential is not None and update is not None:
        token = f", token {update.fingerprint} (NOT the credential named)"
        token = "" if update.fingerprint == credential.fingerprint else token
        carried = f"update event {update.event_id} from client {clean(update.sender)}"
        lines += wrap(f"{carried}, message id {clean(update.message_id or '?')}{token}", "      ")
    said = f"message {entry.turn} from {credential.subject} under {credential.issuer}" if credential else ""
    if logged is not None and not (credential and logged.detail == f"{said} credential {credential.fingerprint}"):
        lines += wrap(f"{logged.kind}: {clean(logged.detail)}", "      case log: ", "        ")
    return lines


def _said(text: str, most: int) -> list[str]:
    """The words, quoted, in at most ``most`` lines: a longer text is cut at a word, with how many
    characters follow (``--json`` has every word)."""
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        lines += wrap(clean(paragraph), "      | ", "      | ")
    if len(lines) <= most:
        return lines
    flat = " ".join(clean(text).split())
    shown = flat[: most * (WIDTH - 8)]
    while len(lines) > most and shown:
        shown = shown.rsplit(" ", 1)[0] if " " in shown else shown[:-1]
        lines = wrap(f"{shown} ... (+{len(flat) - len(shown)} characters)", "      | ", "      | ")
    return lines


def _unaccepted_lines(message: MessageUpdate) -> list[str]:
    """A message not taken: refused (its code; the text is never shown), failed, a resend, or unanswered."""
    size = clean(message.problem or "")
    if message.text is not None:
        size = f"{len(message.text)} characters, text not shown"
    if message.outcome is MessageOutcome.REFUSED:
        what = f"refused {clean(message.refusal or '?')} ({size})"
    elif message.outcome is MessageOutcome.ACCEPTED:
        what = f"a resend of message {message.turn} (message id {clean(message.message_id or '?')}): taken once"
    elif message.outcome is MessageOutcome.FAILED:
        what = f"failed: {clean(message.answer or '?')} ({size})"
    else:
        what = f"no answer recorded yet ({size})"
    return wrap(f"update event {message.event_id} at {stamp(message.at)}: {what}", "  ", "      ")


def _logged_turn(detail: str) -> int | None:
    """The message number a ``message_accepted`` event names (``message 2 from ...``)."""
    words = detail.split()
    return int(words[1]) if len(words) > 1 and words[0] == "message" and words[1].isdigit() else None


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

"""A conversation in the terminal as plain lines: progress items, the service's replies, and what to do
next. Nothing here is printed through Rich markup; model and customer text is data, and its control
characters (a terminal's escape sequences are its markup) never reach the terminal.
"""

from __future__ import annotations

import shlex
import unicodedata
from datetime import datetime

from cli.conversation_text import Line, line, status_sentence, until_text
from contracts.case import TERMINAL_STATUSES, CaseStatus
from contracts.conversation import ConversationEntry, ProgressItem, ProgressKind, TurnReply
from contracts.knowledge import Language

WIDTH = 80
PROGRESS_CHARS = 120
"""A progress line is short: its text is cut here (with ``…``)."""


def plain(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` without control characters (an escape sequence could recolour or rewrite the terminal):
    each is dropped, and a blank of any kind is a space; with ``keep_newlines`` line breaks stay (one
    line of blanks each), else every run of blanks is one space."""
    kept = "".join(
        ch if ch == "\n" else " " if ch.isspace() else ch
        for ch in text
        if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cf")
    )
    if keep_newlines:
        return "\n".join(" ".join(row.split()) for row in kept.split("\n")).strip("\n")
    return " ".join(kept.split())


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: a wide (CJK) character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _pieces(paragraph: str) -> list[tuple[bool, str]]:
    """``(after a blank, piece)``: the words, with every wide character a piece of its own (a line may
    break between two CJK characters, never inside an id, a digest or a path)."""
    pieces: list[tuple[bool, str]] = []
    for word in paragraph.split(" "):
        spaced, run = True, ""
        for ch in word:
            if display_width(ch) == 2:
                if run:
                    pieces.append((spaced, run))
                    spaced, run = False, ""
                pieces.append((spaced, ch))
                spaced = False
            else:
                run += ch
        if run:
            pieces.append((spaced, run))
    return pieces


def wrap(text: str, *, first: str = "", rest: str = "", width: int = WIDTH) -> list[str]:
    """``text`` (one paragraph, made :func:`plain`) in lines of at most ``width`` columns, the first
    led by ``first`` and the others by ``rest``; a piece longer than a line stands whole on its own."""
    lines, current = [], first
    fresh = True  # nothing but the lead on the current line
    for spaced, piece in _pieces(plain(text)):
        gap = " " if spaced and not fresh else ""
        if not fresh and display_width(current + gap + piece) > width:
            lines.append(current)
            current, gap = rest, ""
        current, fresh = current + gap + piece, False
    lines.append(current.rstrip() if fresh else current)
    return lines


def progress_line(item: ProgressItem) -> list[str]:
    """``… Reading order QH-1001.``: the case's own sentence (it says until when a wait lasts), cut at
    :data:`PROGRESS_CHARS` and wrapped at :data:`WIDTH`."""
    text = plain(item.text)
    if len(text) > PROGRESS_CHARS:
        text = text[: PROGRESS_CHARS - 1].rstrip() + "…"
    return wrap(text, first="… ", rest="  ")


def shows_as_progress(item: ProgressItem) -> bool:
    """A reply is printed whole after the progress lines (from the turn's answer), not as one of them."""
    return item.kind is not ProgressKind.REPLY


def reply_lines(entry: ConversationEntry, language: Language = Language.EN) -> list[str]:
    """``service: …`` and the reply wrapped at :data:`WIDTH`, its own line breaks kept."""
    label = f"{line(Line.SERVICE, language)}: "
    indent = " " * display_width(label)
    lines: list[str] = []
    for number, paragraph in enumerate(plain(entry.text, keep_newlines=True).split("\n")):
        lines += wrap(paragraph, first=label if number == 0 else indent, rest=indent)
    return [text.rstrip() for text in lines]


def sentence_lines(*sentences: str) -> list[str]:
    """The command line's own sentences, each wrapped at :data:`WIDTH` (a command is never wrapped)."""
    return [text for sentence in sentences for text in wrap(sentence, rest="  ")]


def say_command(starter: str, case_id: str) -> str:
    return f"{starter} say {shlex.quote(case_id)} " + '"…"'


def chat_command(starter: str, case_id: str) -> str:
    return f"{starter} chat --case {shlex.quote(case_id)}"


def continue_lines(case_id: str, starter: str, language: Language = Language.EN) -> list[str]:
    """How to carry on a case that goes on without this command."""
    return [
        line(Line.CONTINUE_WITH, language),
        f"  {say_command(starter, case_id)}",
        f"  {chat_command(starter, case_id)}",
    ]


def after_turn_lines(
    answer: TurnReply,
    starter: str,
    language: Language = Language.EN,
    *,
    until: datetime | None = None,
    chat: bool = False,
) -> list[str]:
    """What follows a reply: the customer's turn (until when, and how to answer outside ``chat``), a
    proposal waiting for a reviewer (and what the customer may still write), or the end of the case."""
    case_id, status = answer.case_id, answer.status
    if status is CaseStatus.WAITING_CUSTOMER:
        lines = sentence_lines(line(Line.WAITS_FOR_ANSWER, language, case=case_id, until=until_text(until, language)))
        if not chat:
            lines += [line(Line.ANSWER_WITH, language), f"  {say_command(starter, case_id)}"]
        return lines
    if status is CaseStatus.WAITING_APPROVAL:
        return sentence_lines(line(Line.WAITS_FOR_REVIEWER, language, case=case_id), line(Line.STILL_WRITE, language))
    if status in TERMINAL_STATUSES:
        ended = line(Line.CASE_ENDED, language, case=case_id, status=status_sentence(status, language))
        return sentence_lines(ended, *([line(Line.NEXT_STARTS_NEW, language)] if chat else []))
    return sentence_lines(line(Line.GOES_ON, language, case=case_id, status=status_sentence(status, language)))

"""Plain-text layout for the audit's terminal form: prose wrapped at word boundaries to 80 columns (an
id is never cut), repeated blocks collapsed, tool results in a few words, times in UTC, and text from the
history made printable (a control character becomes ``?``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from rich.cells import cell_len

WIDTH = 80
INDENT = " " * 12
_FIRST_KEYS = ("order_id", "status", "eligible", "reason", "amount_cents", "currency", "name", "ticket_id")


def collapsed(blocks: Iterable[list[str]]) -> list[str]:
    """The blocks' lines; a run of blocks that differ only in their time is shown once and counted."""
    lines: list[str] = []
    previous: list[str] | None = None
    repeats = 0
    for block in [*blocks, []]:
        key = [block[0][len(INDENT) :], *block[1:]] if block else None
        if key is not None and key == previous:
            repeats += 1
            continue
        if repeats:
            lines.append(f"{INDENT}... and {repeats} more like it")
        lines += block
        previous, repeats = key, 0
    return lines


def wrap(text: str, first: str = "  ", indent: str | None = None) -> list[str]:
    """``text`` in lines of at most :data:`WIDTH` columns, the first starting with ``first``, the rest
    with ``indent`` (by default ``first``'s leading spaces and two more), broken between words only: a
    word wider than a line goes on a line of its own (an id is never cut), unless it is wide text."""
    if indent is None:
        indent = " " * (len(first) - len(first.lstrip(" ")) + 2)
    lines: list[str] = []
    line, fresh = first, True
    for word in _words(text, WIDTH - cell_len(indent)):
        candidate = line + ("" if fresh else " ") + word
        if cell_len(candidate) <= WIDTH or (fresh and not line.strip()):
            line, fresh = candidate, False
            continue
        lines.append(line)
        line, fresh = indent + word, False
    return [*lines, line]


def _words(text: str, room: int) -> list[str]:
    words: list[str] = []
    for word in text.split():
        if cell_len(word) <= room or word.isascii():
            words.append(word)
            continue
        piece = ""
        for char in word:  # text without spaces (Chinese): broken between characters
            if piece and cell_len(piece + char) > room:
                words.append(piece)
                piece = ""
            piece += char
        words.append(piece)
    return words


def brief(result: dict[str, Any], limit: int = 7) -> str:
    """A tool result in a few ``key=value`` words: the telling keys first, a list as its items' ids."""
    keys = sorted(result, key=lambda key: _FIRST_KEYS.index(key) if key in _FIRST_KEYS else len(_FIRST_KEYS))
    words: list[str] = []
    for key in keys:
        value = result[key]
        if isinstance(value, dict):
            words.append(f"{key}: {brief(value, limit=5)}")
        elif isinstance(value, list):
            ids = [_item_id(item) for item in value]
            shown = [item for item in ids if item][:4]
            more = f" +{len(value) - len(shown)}" if len(value) > len(shown) else ""
            words.append(f"{key}=[{' '.join(shown)}{more}]")
        else:
            words.append(f"{key}={brief_value(value)}")
    return " ".join(words[:limit]) + (" ..." if len(words) > limit else "")


def _item_id(item: Any) -> str:
    if not isinstance(item, dict):
        return ""
    return next((clean(str(value)) for key, value in item.items() if key.endswith("_id")), "")


def brief_value(value: Any) -> str:
    text = clean(str(value))
    if len(text.split()) > 1:  # prose: its first words (the whole value is in --json and the history)
        return '"' + (text if len(text) <= 40 else text[:37].rstrip() + "...") + '"'
    return text


def clean(text: str) -> str:
    """Text from the history, printable: a control character (an escape sequence's start) becomes ``?``."""
    return "".join(char if char.isprintable() or char in "\n\t" else "?" for char in text)


def at(moment: datetime) -> str:
    """A timeline's time column: ``  HH:MM:SS  `` in UTC."""
    return f"  {_utc(moment).strftime('%H:%M:%S')}  "


def stamp(moment: datetime) -> str:
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)

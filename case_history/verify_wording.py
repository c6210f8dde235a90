"""The wording :mod:`case_history.verify` reports its links in: every value read from a history is made
printable and short, since anyone who can write the history may have chosen it."""

from __future__ import annotations

from datetime import datetime

from case_history.trail import CaseTrail
from contracts.credentials import CredentialRefused


def refusal_text(refused: CredentialRefused) -> str:
    """A refused credential in one line: its code and message."""
    return f"{refused.code}: {refused.message}"


def where_the_case_is(trail: CaseTrail) -> str:
    """How far the case got, for a link that is absent: how it ended, or that it still runs."""
    if trail.final_status is not None:
        reason = f": {printable(trail.final_reason)}" if trail.final_reason else ""
        return f"the case ended {trail.final_status.value}{reason}"
    if trail.run_end is not None:
        return f"this run {trail.run_end}"
    return "the case is still running"


def moment(when: datetime) -> str:
    """A moment to the second, ISO 8601."""
    return when.isoformat(timespec="seconds")


def short(digest: str) -> str:
    """A digest's first 16 characters (printable: it may come from anyone)."""
    return f"{digest[:16]}…" if len(digest) > 16 else printable(digest)


def printable(value: object) -> str:
    """A value from the history as one short, printable piece of text (it may come from anyone)."""
    text = str(value)
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= 60 else text[:57] + "..."

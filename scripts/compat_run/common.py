"""What every part of the compat run shares: the run's start time and the timestamped progress line.

``STARTED`` is taken once, when this module is first imported, so that every progress line, the run's
time budget and the report's run time count from the same moment; ``_short`` trims text for table cells.
"""

from __future__ import annotations

import time

STARTED = time.monotonic()


def say(message: str) -> None:
    print(f"compat [{time.monotonic() - STARTED:6.0f}s] {message}", flush=True)


def _short(text: str | None, limit: int = 70) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

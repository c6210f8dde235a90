"""The case's log lines, through Temporal's workflow logger (contracts/logs.py formats them).

Workflow code: the workflow logger writes nothing while a task replays, so a refusal is logged once,
by the worker that judged it, as one line with its code; the formatter adds the case id from the
workflow id. Only codes: never a payload, and never a reviewer name a token merely claims.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.logs import log_fields

MAX_CODE_CHARS = 60


def review_refused(code: str, *, via: str) -> None:
    """A review the case refused (a forged or stale approval, a reviewer of another tenant)."""
    shown = code.split(":", 1)[0][:MAX_CODE_CHARS]
    workflow.logger.warning("review refused: %s (via %s)", shown, via, extra=log_fields(code=shown))

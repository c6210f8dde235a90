"""What ``starter.py usage`` sums and prints, as pure functions of the cases' memos (no Temporal here).

Each case's workflow keeps its model usage in its memo under ``usage`` (a
:class:`contracts.usage.CaseUsage`, tokens and cost by request kind). A case whose memo has none (a
case of a release before 0.5, or one that received no model reply yet), or one that cannot be read
as a ``CaseUsage``, counts as a case whose cost is unknown: never as zero. Cost is summed exactly in
pico-dollars over the cases whose cost is known; the unknown ones are counted beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pydantic import ValidationError
from rich import box
from rich.table import Table

from contracts.usage import PICO_PER_USD, UNKNOWN_COST, CaseUsage, format_usd

USAGE_MEMO_KEY = "usage"
"""The memo key under which a case's workflow keeps its :class:`CaseUsage`."""


@dataclass(frozen=True)
class CaseCost:
    """One case's row: what its memo says it used (``usage`` None: nothing readable)."""

    case_id: str
    started: datetime
    status: str | None
    usage: CaseUsage | None

    @property
    def cost_pico_usd(self) -> int | None:
        """The case's exact cost, or None when it is unknown."""
        if self.usage is None or not self.usage.cost_known:
            return None
        return self.usage.cost_pico_usd


def memo_usage(value: Any) -> CaseUsage | None:
    """The memo's ``usage`` value as a CaseUsage; None when absent or of another shape."""
    if value is None:
        return None
    try:
        return CaseUsage.model_validate(value)
    except ValidationError:
        return None


def latest_per_case(rows: Iterable[CaseCost]) -> list[CaseCost]:
    """One row per case: its latest run (a case that continued as new is listed once per run, and
    the latest run's memo carries the earlier runs' usage), oldest case first."""
    latest: dict[str, CaseCost] = {}
    for row in rows:
        kept = latest.get(row.case_id)
        if kept is None or row.started > kept.started:
            latest[row.case_id] = row
    return sorted(latest.values(), key=lambda row: (row.started, row.case_id))


@dataclass(frozen=True)
class UsageTotals:
    cases: int
    replies: int
    """Model replies of the cases whose memo says (a case without a usage memo adds none)."""
    prompt_tokens: int
    completion_tokens: int
    cost_pico_usd: int
    """The exact sum over the cases whose cost is known."""
    priced_cases: int
    unknown_cases: int

    @property
    def cost_usd(self) -> Decimal:
        return Decimal(self.cost_pico_usd) / PICO_PER_USD

    def cost_line(self) -> str:
        """``cost: 0.004210 USD over 2 cases; 1 case unknown``."""
        line = f"cost: {format_usd(self.cost_usd)} USD over {_cases(self.priced_cases)}"
        return line + (f"; {_cases(self.unknown_cases)} unknown" if self.unknown_cases else "")

    def tokens_line(self) -> str:
        return (
            f"tokens: {self.prompt_tokens} prompt + {self.completion_tokens} completion "
            f"in {self.replies} replies of {_cases(self.cases)}"
        )


def summed(rows: Sequence[CaseCost]) -> UsageTotals:
    """The totals of ``rows`` (one per case: see :func:`latest_per_case`)."""
    known = [row.cost_pico_usd for row in rows if row.cost_pico_usd is not None]
    usages = [row.usage for row in rows if row.usage is not None]
    return UsageTotals(
        cases=len(rows),
        replies=sum(usage.replies for usage in usages),
        prompt_tokens=sum(usage.prompt_tokens for usage in usages),
        completion_tokens=sum(usage.completion_tokens for usage in usages),
        cost_pico_usd=sum(known),
        priced_cases=len(known),
        unknown_cases=len(rows) - len(known),
    )


def cost_text(row: CaseCost) -> str:
    """A row's cost in US dollars, six decimals, or ``unknown``."""
    pico = row.cost_pico_usd
    return UNKNOWN_COST if pico is None else format_usd(Decimal(pico) / PICO_PER_USD)


def usage_json(tenant: str, since: datetime | None, rows: Sequence[CaseCost], totals: UsageTotals) -> dict[str, Any]:
    """``usage --json``: the per-case rows and the totals. Costs are strings of six decimals (or
    ``unknown``) beside the exact ``cost_pico_usd`` integers (null when unknown)."""
    return {
        "tenant": tenant,
        "since": since.isoformat() if since else None,
        "cases": [
            {
                "case_id": row.case_id,
                "started": row.started.isoformat(),
                "status": row.status,
                "replies": row.usage.replies if row.usage else None,
                "prompt_tokens": row.usage.prompt_tokens if row.usage else None,
                "completion_tokens": row.usage.completion_tokens if row.usage else None,
                "cost_usd": cost_text(row),
                "cost_pico_usd": row.cost_pico_usd,
                "by_kind": row.usage.model_dump(mode="json")["by_kind"] if row.usage else None,
            }
            for row in rows
        ],
        "totals": {
            "cases": totals.cases,
            "replies": totals.replies,
            "prompt_tokens": totals.prompt_tokens,
            "completion_tokens": totals.completion_tokens,
            "cost_usd": format_usd(totals.cost_usd),
            "cost_pico_usd": totals.cost_pico_usd,
            "priced_cases": totals.priced_cases,
            "unknown_cost_cases": totals.unknown_cases,
        },
    }


def usage_table(title: str, rows: Sequence[CaseCost]) -> Table:
    """The per-case table; a case id and a figure are never cut or wrapped (the start time and the
    status wrap instead, in a narrow terminal)."""
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("case", no_wrap=True)
    table.add_column("started (UTC)", min_width=10)
    table.add_column("status", overflow="fold")
    for header in ("replies", "prompt", "completion", "USD"):
        table.add_column(header, justify="right", no_wrap=True)
    for row in rows:
        usage = row.usage
        counts = [str(usage.replies), str(usage.prompt_tokens), str(usage.completion_tokens)] if usage else ["-"] * 3
        started = row.started.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
        table.add_row(row.case_id, started, row.status or "-", *counts, cost_text(row))
    return table


def _cases(count: int) -> str:
    return f"{count} case" if count == 1 else f"{count} cases"

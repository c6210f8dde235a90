"""``starter.py usage``: a reviewer's view of what their tenant's cases used of the model and what it
cost at the operator's prices (docs/usage.md). Registered on :data:`cli.app.app` when imported.

The tenant is always the verified reviewer's own (``--profile``, as the directory lists them):
``--tenant`` only states it, and another tenant's name is refused before anything is read. The cases
come from Temporal visibility (``Tenant`` and ``StartTime``), each one's usage from its memo; the sums
are :mod:`cli.usage_report`'s.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, date, datetime
from typing import Annotated

import typer
from temporalio.client import WorkflowExecution

from case_client import CaseClient, TemporalTarget, listing_query
from cli.app import app, settings_of
from cli.codes import CliErrorCode
from cli.render import console
from cli.usage_report import (
    USAGE_MEMO_KEY,
    CaseCost,
    latest_per_case,
    memo_usage,
    summed,
    usage_json,
    usage_table,
)
from contracts import search_attributes as sa
from contracts.approval_claims import CredentialCode
from contracts.errors import AuthorizationError, ContractError
from contracts.identity import Identity, Role
from contracts.names import case_id_of


def usage_reviewer(identity: Identity) -> Identity:
    """Only a reviewer sees a tenant's cases; anyone else is told so before anything is read."""
    if identity.role is not Role.REVIEWER:
        raise AuthorizationError(
            CredentialCode.NOT_A_REVIEWER,
            f"profile {identity.subject} is a {identity.role.value}; usage shows a tenant's cases to the "
            "tenant's reviewers (e.g. --profile chen)",
        )
    return identity


def checked_tenant(tenant: str | None, reviewer: Identity) -> str:
    """The reviewer's own tenant; ``--tenant`` naming another is refused (a reviewer sees their own only)."""
    if tenant is not None and tenant != reviewer.tenant:
        raise AuthorizationError(
            CliErrorCode.OTHER_TENANT,
            f"--tenant {tenant[:40]!r} is not your tenant: {reviewer.subject} may see the usage of tenant "
            f"{reviewer.tenant!r} only",
        )
    return reviewer.tenant


def parse_since(value: str | None) -> datetime | None:
    """``--since``: a date (midnight UTC) or an ISO 8601 time (UTC unless it names an offset)."""
    if value is None:
        return None
    text = value.strip()
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ContractError(
            CliErrorCode.INVALID_SINCE,
            f"--since {value[:40]!r} is not a date or time: give e.g. 2026-12-01 (UTC) or 2026-12-01T08:00:00+08:00",
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def usage_query(reviewer: Identity, since: datetime | None) -> str:
    """The visibility query of the reviewer's tenant's cases, started at or after ``since``."""
    query = listing_query(reviewer)
    if since is not None:
        query += f' AND StartTime >= "{since.astimezone(UTC).isoformat().replace("+00:00", "Z")}"'
    return query


async def case_cost(execution: WorkflowExecution) -> CaseCost:
    """One listed run as a row: its case id, start, status and the usage its memo holds."""
    return CaseCost(
        case_id=case_id_of(execution.id),
        started=execution.start_time,
        status=execution.typed_search_attributes.get(sa.CASE_STATUS),
        usage=memo_usage(await execution.memo_value(USAGE_MEMO_KEY, None)),
    )


@app.command()
def usage(
    ctx: typer.Context,
    tenant: Annotated[
        str | None, typer.Option(help="Your tenant (checked: a reviewer sees their own tenant's usage only).")
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Only cases started at or after this date (2026-12-01, UTC) or ISO time.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object: the cases and the totals.")] = False,
) -> None:
    """Model tokens and cost of your tenant's cases, as each case recorded them (a reviewer's command).

    A case of unknown cost (a model without a price, a reply without usage, an older release) is counted apart.
    """
    reviewer = usage_reviewer(settings_of(ctx).identity)
    own = checked_tenant(tenant, reviewer)
    start = parse_since(since)
    query = usage_query(reviewer, start)

    async def run() -> list[CaseCost]:
        cases = await CaseClient.connect(TemporalTarget.from_env())
        return [await case_cost(execution) async for execution in cases.temporal.list_workflows(query)]

    rows = latest_per_case(asyncio.run(run()))
    totals = summed(rows)
    if as_json:
        print(json.dumps(usage_json(own, start, rows, totals), indent=2))
        return
    since_text = f" since {start.isoformat()}" if start else ""
    console.print(usage_table(f"model usage of tenant {own}{since_text}", rows))
    if not rows:
        console.print("(no cases)")
    console.print(totals.tokens_line())
    console.print(totals.cost_line())

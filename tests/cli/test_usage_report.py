"""``starter.py usage`` without Temporal: the exact sums, the ``unknown`` rule, one row per case, the
JSON and text forms, and the input a reviewer may give (tenant, since)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from rich.console import Console

from cli.usage_command import checked_tenant, parse_since, usage_query, usage_reviewer
from cli.usage_report import CaseCost, latest_per_case, memo_usage, summed, usage_json, usage_table
from contracts.errors import AuthorizationError, ContractError
from contracts.usage import CaseUsage, ModelPrice
from keystore import demo_identity

PRICE = ModelPrice(prompt_micro_usd_per_mtok=150_000, completion_micro_usd_per_mtok=600_000)
T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def _usage(*replies: tuple[int | None, int | None, ModelPrice | None]) -> CaseUsage:
    usage = CaseUsage()
    for prompt, completion, price in replies:
        usage.add("plan_case", prompt, completion, price)
    return usage


def _row(case_id: str, usage: CaseUsage | None, minutes: int = 0) -> CaseCost:
    return CaseCost(case_id=case_id, started=T0 + timedelta(minutes=minutes), status="completed", usage=usage)


PRICED_A = _row("qa", _usage((1000, 100, PRICE), (2000, 300, PRICE)))  # 3000*0.15 + 400*0.60 = 690 micro
PRICED_B = _row("qb", _usage((7, 3, PRICE)), 1)  # 7*0.15 + 3*0.60 = 2.85 micro-dollars
UNPRICED = _row("qc", _usage((500, 50, PRICE), (400, 40, None)), 2)
NO_USAGE_REPORTED = _row("qd", _usage((None, None, PRICE)), 3)
OLDER_RELEASE = _row("qe", None, 4)


def test_the_cost_is_the_exact_sum_over_priced_cases_and_unknown_ones_are_counted_apart() -> None:
    totals = summed([PRICED_A, PRICED_B, UNPRICED, NO_USAGE_REPORTED, OLDER_RELEASE])
    assert totals.cost_pico_usd == 690_000_000 + 2_850_000  # exact, though 2.85 micro-dollars prints as 0.000003
    assert (totals.priced_cases, totals.unknown_cases, totals.cases) == (2, 3, 5)
    # tokens count wherever the provider reported them, priced or not
    assert (totals.prompt_tokens, totals.completion_tokens, totals.replies) == (3907, 493, 6)
    assert totals.cost_line() == "cost: 0.000693 USD over 2 cases; 3 cases unknown"
    assert summed([PRICED_A, OLDER_RELEASE]).cost_line() == "cost: 0.000690 USD over 1 case; 1 case unknown"
    assert summed([PRICED_A]).cost_line() == "cost: 0.000690 USD over 1 case"
    assert summed([]).cost_line() == "cost: 0.000000 USD over 0 cases"


def test_a_memo_without_usage_or_of_another_shape_is_unknown_never_zero() -> None:
    assert memo_usage(None) is None
    assert memo_usage({"by_kind": {"plan_case": {"replies": "many"}}}) is None
    assert memo_usage({"tokens": 12}) is None  # extra keys: another release's shape
    read = memo_usage(PRICED_A.usage.model_dump(mode="json") if PRICED_A.usage else None)
    assert read == PRICED_A.usage
    assert _row("x", memo_usage(None)).cost_pico_usd is None


def test_a_case_that_continued_as_new_is_counted_once_by_its_latest_run() -> None:
    first_run = _row("qa", _usage((10, 1, PRICE)))
    latest_run = _row("qa", _usage((10, 1, PRICE), (20, 2, PRICE)), 30)
    rows = latest_per_case([latest_run, PRICED_B, first_run])
    assert rows == [PRICED_B, latest_run]
    assert summed(rows).replies == 3


def test_the_json_has_each_case_and_the_totals() -> None:
    rows = [PRICED_A, UNPRICED, OLDER_RELEASE]
    document = json.loads(json.dumps(usage_json("qinghe", T0, rows, summed(rows))))
    assert document["tenant"] == "qinghe" and document["since"] == "2026-12-01T08:00:00+00:00"
    first, unpriced, older = document["cases"]
    assert first == {
        "case_id": "qa",
        "started": "2026-12-01T08:00:00+00:00",
        "status": "completed",
        "replies": 2,
        "prompt_tokens": 3000,
        "completion_tokens": 400,
        "cost_usd": "0.000690",
        "cost_pico_usd": 690_000_000,
        "by_kind": {
            "plan_case": {
                "replies": 2,
                "prompt_tokens": 3000,
                "completion_tokens": 400,
                "usage_unknown": 0,
                "unpriced": 0,
                "cost_pico_usd": 690_000_000,
            }
        },
    }
    assert (unpriced["cost_usd"], unpriced["cost_pico_usd"], unpriced["prompt_tokens"]) == ("unknown", None, 900)
    assert (older["cost_usd"], older["replies"], older["by_kind"]) == ("unknown", None, None)
    assert document["totals"] == {
        "cases": 3,
        "replies": 4,
        "prompt_tokens": 3900,
        "completion_tokens": 490,
        "cost_usd": "0.000690",
        "cost_pico_usd": 690_000_000,
        "priced_cases": 1,
        "unknown_cost_cases": 2,
    }


def test_the_table_keeps_each_case_id_whole_in_80_columns() -> None:
    long_id = "q0123456789abcde"
    rows = [_row(long_id, PRICED_A.usage), OLDER_RELEASE]
    console = Console(width=80, record=True, markup=False)
    console.print(usage_table("model usage of tenant qinghe", rows))
    text = console.export_text()
    assert long_id in text and "unknown" in text and "0.000690" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_only_a_reviewer_of_the_tenant_is_answered() -> None:
    chen = demo_identity("chen")
    assert usage_reviewer(chen) == chen
    with pytest.raises(AuthorizationError, match="profile alice is a customer"):
        usage_reviewer(demo_identity("alice"))
    assert checked_tenant(None, chen) == checked_tenant(chen.tenant, chen) == chen.tenant
    with pytest.raises(AuthorizationError) as refused:
        checked_tenant("east", chen)
    assert refused.value.code == "other_tenant"
    assert str(refused.value) == (
        f"other_tenant: --tenant 'east' is not your tenant: chen may see the usage of tenant {chen.tenant!r} only"
    )


def test_since_is_a_date_or_a_time_and_narrows_the_visibility_query() -> None:
    assert parse_since(None) is None
    assert parse_since("2026-12-01") == datetime(2026, 12, 1, tzinfo=UTC)
    assert parse_since("2026-12-01T08:30:00") == datetime(2026, 12, 1, 8, 30, tzinfo=UTC)
    eight = timezone(timedelta(hours=8))
    assert parse_since("2026-12-01T08:00:00+08:00") == datetime(2026, 12, 1, 8, 0, tzinfo=eight)
    for bad in ("yesterday", "2026-13-01", "12/01/2026"):
        with pytest.raises(ContractError, match="is not a date or time"):
            parse_since(bad)
    chen = demo_identity("chen")
    query = usage_query(chen, parse_since("2026-12-01T08:00:00+08:00"))
    assert query.endswith(' AND StartTime >= "2026-12-01T00:00:00Z"')
    assert f'Tenant="{chen.tenant}"' in query
    assert "StartTime" not in usage_query(chen, None)

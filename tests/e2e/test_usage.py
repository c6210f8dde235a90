"""``starter.py usage`` after real cases: each case's tokens and cost as the provider reported them and
the operator's table priced them, ``unknown`` for a model the table does not price, and nothing of
them for another tenant's reviewer.

The model is the scripted OpenAI-compatible endpoint of tests/adversarial answering as the rehearsal
model would, but with token usage on every reply (the rehearsal model reports none). The worker
reads its prices from a ``SUPPORT_MODEL_PRICES`` table that prices one model; the third case is
answered under another model name, which the table does not price.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

import rehearsal
from contracts.case import CaseView
from contracts.names import ActivityName
from contracts.usage import PICO_PER_USD, format_usd
from tests.adversarial.adversary import ScriptedWorld, scripted_world
from tests.adversarial.provider import Reply, Request, ScriptedProvider

ROOT = Path(__file__).resolve().parents[2]
PRICED, UNPRICED = "priced-model", "unpriced-model"
PRICES = f"""
[openai-compatible."{PRICED}"]
prompt_usd_per_mtok = "0.15"
completion_usd_per_mtok = "0.60"
"""
PRICE_PICO = (150_000, 600_000)
"""The table's price in micro-dollars per million tokens: pico-dollars per token."""
TOKENS = {"plan": (1200, 80), "investigate": (900, 40), "compose": (2000, 300), "review": (1500, 60)}
"""What the endpoint reports for each reply of a request kind: (prompt, completion) tokens."""
ACTIVITY = {
    "plan": ActivityName.PLAN_CASE,
    "investigate": ActivityName.INVESTIGATE_TURN,
    "compose": ActivityName.COMPOSE_ANSWER,
    "review": ActivityName.REVIEW_ANSWER,
}


KIND_FIELDS = ("replies", "prompt_tokens", "completion_tokens", "usage_unknown", "unpriced", "cost_pico_usd")


def rehearsed_with_usage(request: Request) -> Reply:
    """The rehearsal model's answer to ``request``, with the usage of :data:`TOKENS`."""
    assert request.kind is not None
    choice = rehearsal.respond(request.body)["choices"][0]
    prompt, completion = TOKENS[request.kind]
    return Reply(
        content=choice["message"]["content"],
        tool_calls=tuple(choice["message"].get("tool_calls") or ()),
        finish_reason=choice["finish_reason"],
        usage={"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    )


def expected_by_kind(requests: list[Request], priced: bool) -> dict[str, dict[str, int]]:
    """What the case's memo must say of ``requests`` (the replies of one case), by request kind."""
    by_kind: dict[str, dict[str, int]] = {}
    for request in requests:
        assert request.kind is not None and request.status == 200
        prompt, completion = TOKENS[request.kind]
        entry = by_kind.setdefault(
            ACTIVITY[request.kind].value,
            dict.fromkeys(KIND_FIELDS, 0),
        )
        entry["replies"] += 1
        entry["prompt_tokens"] += prompt
        entry["completion_tokens"] += completion
        if priced:
            entry["cost_pico_usd"] += prompt * PRICE_PICO[0] + completion * PRICE_PICO[1]
        else:
            entry["unpriced"] += 1
    return by_kind


async def _starter(world: ScriptedWorld, address: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TEMPORAL_ADDRESS": address, "SUPPORT_TASK_QUEUE": world.world.task_queue, "COLUMNS": "200"}
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(world.world.state_dir), *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


async def _listed_usage(client: Client, case_id: str, replies: int) -> None:
    """Wait until visibility lists the case with the usage memo of all its ``replies`` (it may lag the query)."""
    for _ in range(100):
        async for execution in client.list_workflows(f'WorkflowId="case-{case_id}"'):
            usage = await execution.memo_value("usage", None)
            if usage and sum(kind["replies"] for kind in usage["by_kind"].values()) == replies:
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"case {case_id} is not listed with its usage memo")


@pytest.fixture
def provider() -> Any:
    with ScriptedProvider(model=PRICED) as scripted:
        yield scripted.default_all(rehearsed_with_usage)


async def test_usage_shows_each_cases_tokens_and_cost_and_unknown_for_an_unpriced_model(
    temporal_server, temporal_client: Client, tmp_path: Path, provider: ScriptedProvider, monkeypatch
) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES, encoding="utf-8")
    monkeypatch.setenv("SUPPORT_MODEL_PRICES", str(prices))
    questions = [
        (PRICED, "Where is my order QH-1005? Can I still change the delivery address?"),
        (PRICED, "Please refund QH-1002"),
        (UNPRICED, "Where is my order QH-1006?"),
    ]
    cases: list[tuple[CaseView, list[Request], bool]] = []
    async with scripted_world(temporal_client, tmp_path / "state", provider) as world:
        for model, question in questions:
            provider.model = model  # the name the endpoint reports in its replies
            before = len(provider.requests)
            _, view = await world.run(question)
            cases.append((view, provider.requests[before:], model == PRICED))
        for view, requests, _ in cases:
            await _listed_usage(temporal_client, view.case_id, len(requests))

        chen = await _starter(world, temporal_server.address, "--profile", "chen", "usage", "--json")
        assert chen.returncode == 0, chen.stderr
        document = json.loads(chen.stdout)
        rows = {row["case_id"]: row for row in document["cases"]}
        for view, requests, priced in cases:
            row = rows[view.case_id]
            by_kind = expected_by_kind(requests, priced)
            assert row["by_kind"] == by_kind
            prompt = sum(kind["prompt_tokens"] for kind in by_kind.values())
            completion = sum(kind["completion_tokens"] for kind in by_kind.values())
            counts = (row["replies"], row["prompt_tokens"], row["completion_tokens"])
            assert counts == (len(requests), prompt, completion)
            cost = sum(kind["cost_pico_usd"] for kind in by_kind.values())
            if priced:
                assert (row["cost_pico_usd"], row["cost_usd"]) == (cost, format_usd(Decimal(cost) / PICO_PER_USD))
                assert view.cost == f"{row['cost_usd']} USD"
            else:
                assert (row["cost_pico_usd"], row["cost_usd"], view.cost) == (None, "unknown", "unknown")
        totals = document["totals"]
        listed = document["cases"]
        assert totals["cases"] == len(listed) >= 3
        assert totals["cost_pico_usd"] == sum(row["cost_pico_usd"] or 0 for row in listed)
        assert totals["priced_cases"] + totals["unknown_cost_cases"] == totals["cases"]
        assert totals["prompt_tokens"] == sum(row["prompt_tokens"] or 0 for row in listed)

        text = await _starter(world, temporal_server.address, "--profile", "chen", "usage")
        assert text.returncode == 0, text.stderr
        assert all(view.case_id in text.stdout for view, _, _ in cases)
        assert text.stdout.splitlines()[-1].startswith("cost: ") and "unknown" in text.stdout.splitlines()[-1]

        since = ("--since", "2999-01-01")
        later = await _starter(world, temporal_server.address, "--profile", "chen", "usage", "--json", *since)
        assert later.returncode == 0 and json.loads(later.stdout)["cases"] == [], later.stderr

        mei = await _starter(world, temporal_server.address, "--profile", "mei", "usage", "--json")
        assert mei.returncode == 0, mei.stderr
        assert {row["case_id"] for row in json.loads(mei.stdout)["cases"]}.isdisjoint(rows)
        asked_for = await _starter(world, temporal_server.address, "--profile", "mei", "usage", "--tenant", "qinghe")
        assert asked_for.returncode == 2 and asked_for.stdout == ""
        [line] = asked_for.stderr.strip().splitlines()
        assert line.startswith("error: other_tenant: --tenant 'qinghe' is not your tenant: mei may see")

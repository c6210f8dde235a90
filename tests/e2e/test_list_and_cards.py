"""What ``list`` and the case card tell a person: every case id whole in 80 columns, JSON for scripts,
the facts the refund rule rests on beside the refund, and on a decided case who decided, how and when.

starter.py runs as a subprocess against the test dev server and the production worker; the Web UI's
current details are read with the real Temporal CLI (``temporal workflow metadata``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from contracts.case import CaseView
from contracts.names import workflow_id
from devstack.temporal_cli import temporal_cli
from tests.case_world import CaseWorld

ROOT = Path(__file__).resolve().parents[2]
REFUND_QUESTION = "Please refund QH-1001 and explain the amount and the policy"


async def _starter(world: CaseWorld, address: str, *args: str, columns: int = 200) -> subprocess.CompletedProcess:
    env = {**os.environ, "TEMPORAL_ADDRESS": address, "SUPPORT_TASK_QUEUE": world.task_queue}
    env["COLUMNS"] = str(columns)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_API_KEY", "SUPPORT_RETRY_WINDOW_SECONDS"):
        env.pop(name, None)
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(world.state_dir), *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


def _case_id(stdout: str) -> str:
    return stdout.split("case ", 1)[1].split()[0]


async def test_list_shows_whole_case_ids_in_80_columns_and_json_for_scripts(shared_world, temporal_server) -> None:
    asked = []
    for profile, question in (("alice", "Where is my order QH-1006?"), ("bob", "Where is my order QH-2005?")):
        done = await _starter(shared_world, temporal_server.address, "--profile", profile, "ask", question)
        assert done.returncode == 0, done.stdout + done.stderr
        asked.append(_case_id(done.stdout))
    address = temporal_server.address
    refund = "Please refund QH-1002"
    keyed = await _starter(shared_world, address, "--profile", "alice", "ask", refund, "--request-key", "a")
    assert keyed.returncode == 0, keyed.stdout + keyed.stderr
    asked.append(_case_id(keyed.stdout))
    assert max(len(case_id) for case_id in asked) == 16

    listed = await _starter(shared_world, temporal_server.address, "--profile", "chen", "list", columns=80)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    first_words = {line.split()[0] for line in lines if line.strip()}
    assert set(asked) <= first_words, listed.stdout  # each id whole, at the start of its own row

    as_json = await _starter(shared_world, temporal_server.address, "--profile", "chen", "list", "--json", columns=80)
    assert as_json.returncode == 0, as_json.stderr
    rows = json.loads(as_json.stdout)
    assert set(asked) <= {row["case_id"] for row in rows}
    waiting = next(row for row in rows if row["case_id"] == asked[2])
    assert (waiting["status"], waiting["order_id"], waiting["refund_cents"]) == ("waiting_approval", "QH-1002", 17900)

    own = await _starter(shared_world, temporal_server.address, "--profile", "bob", "list", "--json")
    assert {row["case_id"] for row in json.loads(own.stdout)} & set(asked) == {asked[1]}  # a customer: their own


def _rows(stdout: str, label: str) -> list[str]:
    """Each card row of ``label``, its wrapped continuation lines joined to it."""
    rows: list[str] = []
    following = False
    for line in stdout.splitlines():
        if line.startswith(f"  {label:<10}  "):
            rows.append(" ".join(line.split()))
            following = True
        elif following and line.startswith(" " * 14) and line.strip():
            rows[-1] += " " + line.strip()
        else:
            following = False
    return rows


async def _current_details(address: str, case_id: str) -> str:
    done = await asyncio.to_thread(
        subprocess.run,
        [temporal_cli(), "workflow", "metadata", "--workflow-id", workflow_id(case_id), "--address", address],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout


async def test_the_card_shows_the_warehouse_receipt_the_invoice_total_and_who_approved_how_and_when(
    world, temporal_server
) -> None:
    asked = await _starter(world, temporal_server.address, "--profile", "alice", "ask", REFUND_QUESTION)
    assert asked.returncode == 0 and "waiting_approval" in asked.stdout, asked.stdout + asked.stderr
    case_id = _case_id(asked.stdout)
    assert _rows(asked.stdout, "refund") == ["refund 12900 cents (CNY 129.00) for QH-1001, SIMULATED payment"]
    assert _rows(asked.stdout, "invoice") == [
        "invoice total 14100 cents (CNY 141.00); the refund is the item balance, not the invoice total"
    ]
    assert _rows(asked.stdout, "return") == ["return received at the returns warehouse (order record)"]
    assert _rows(asked.stdout, "approved") == []
    waiting = await _current_details(temporal_server.address, case_id)
    assert "**invoice:** total 14100 cents (CNY 141.00)" in waiting
    assert "**return:** received at the returns warehouse" in waiting

    digest = asked.stdout.split("--digest ", 1)[1].split()[0]
    reviewed = await _starter(
        world, temporal_server.address, "--profile", "chen", "review", case_id, "--digest", digest, "--approve"
    )
    assert reviewed.returncode == 0, reviewed.stdout + reviewed.stderr
    done = await _starter(world, temporal_server.address, "--profile", "alice", "status", case_id, "--wait")
    assert done.returncode == 0 and "completed" in done.stdout, done.stdout + done.stderr
    [approved] = _rows(done.stdout, "approved")
    assert approved.startswith("approved by chen at 20"), approved
    assert approved.endswith(" (signed approval token, sent as an update)"), approved
    decided_at = approved.split(" at ", 1)[1].split()[0]
    result = await world.client.get_workflow_handle(workflow_id(case_id), result_type=CaseView).result()
    assert result.effect is not None and result.effect.decided is not None
    assert result.effect.decided.at.isoformat(timespec="seconds") == decided_at
    completed = (await _current_details(temporal_server.address, case_id)).replace("\\", "")  # as rendered
    assert f"**approved:** by chen at {decided_at} (signed approval token, sent as an update)" in completed

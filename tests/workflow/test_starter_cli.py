"""starter.py as a user runs it: a real subprocess against the test server and a test worker."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from contracts.case import CaseView
from contracts.identity import resolve_profile
from starter import case_id_for

ROOT = Path(__file__).resolve().parents[2]


async def _starter(world, temporal_server, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_server.address, "SUPPORT_TASK_QUEUE": world.task_queue}
    env["COLUMNS"] = "200"
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_API_KEY"):
        env.pop(name, None)
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(world.state_dir), *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


async def test_the_same_request_key_returns_the_existing_case_and_never_reruns_it(
    shared_world, temporal_server
) -> None:
    key = f"cli-{os.getpid()}-{id(shared_world)}"
    question = "Where is my order QH-1005? Can I still change the delivery address?"
    first = await _starter(shared_world, temporal_server, "--profile", "alice", "ask", question, "--request-key", key)
    assert first.returncode == 0, first.stderr
    case_id = case_id_for(key, resolve_profile("alice"))
    assert f"case {case_id}" in first.stdout and "completed" in first.stdout
    second = await _starter(shared_world, temporal_server, "--profile", "alice", "ask", question, "--request-key", key)
    assert second.returncode == 0, second.stderr
    assert "already used" in second.stderr and f"case {case_id}" in second.stdout
    runs = [w async for w in shared_world.client.list_workflows(f'WorkflowId="case-{case_id}"')]
    assert len(runs) == 1


async def test_ask_prints_the_review_commands_and_a_wrong_reviewer_gets_one_line(shared_world, temporal_server) -> None:
    asked = await _starter(shared_world, temporal_server, "--profile", "alice", "ask", "Please refund QH-1002")
    assert asked.returncode == 0, asked.stderr
    assert "waiting_approval" in asked.stdout
    signal_line = next(line for line in asked.stdout.splitlines() if "temporal workflow signal" in line)
    digest = signal_line.split('"digest": "')[1].split('"')[0]
    case_id = signal_line.split("--workflow-id case-")[1].split()[0]
    assert f"review {case_id} --digest {digest} --approve" in asked.stdout

    refused = await _starter(
        shared_world, temporal_server, "--profile", "bob", "review", case_id, "--digest", digest, "--approve"
    )
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines() == [
        "error: review_refused: not_a_reviewer (recorded in the case events)"
    ]
    assert "Traceback" not in refused.stderr

    info = await _starter(shared_world, temporal_server, "--profile", "chen", "review-info", case_id)
    assert info.returncode == 0 and digest in info.stdout.replace("\n", "")


async def test_bad_input_gets_one_clear_line_and_a_nonzero_exit(shared_world, temporal_server) -> None:
    unknown = await _starter(shared_world, temporal_server, "--profile", "zed", "status", "x")
    assert unknown.returncode == 2 and "unknown_profile" in unknown.stderr and "Traceback" not in unknown.stderr
    both = await _starter(shared_world, temporal_server, "review", "x", "--digest", "d", "--approve", "--reject")
    assert both.returncode == 2 and "exactly one of --approve or --reject" in both.stderr
    no_consent = await _starter(shared_world, temporal_server, "remember", "--language", "zh")
    assert no_consent.returncode == 2 and "consent" in no_consent.stderr
    missing = await _starter(shared_world, temporal_server, "status", "no-such-case")
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


async def test_one_customer_cannot_see_another_customers_case(shared_world, temporal_server) -> None:
    asked = await _starter(shared_world, temporal_server, "--profile", "alice", "ask", "Please refund QH-1002")
    case_id = asked.stdout.split("case ", 1)[1].split()[0]
    for profile in ("bob", "mei", "lin"):
        peek = await _starter(shared_world, temporal_server, "--profile", profile, "status", case_id)
        missing = await _starter(shared_world, temporal_server, "--profile", profile, "status", "no-such-case")
        assert peek.returncode == missing.returncode == 2
        assert (
            peek.stderr == missing.stderr == "error: case_not_accessible: No such case is available to this profile.\n"
        )
        assert "QH-1002" not in peek.stdout + peek.stderr
        listed = await _starter(shared_world, temporal_server, "--profile", profile, "list")
        assert case_id not in listed.stdout
    reviewer = await _starter(shared_world, temporal_server, "--profile", "chen", "status", case_id)
    assert reviewer.returncode == 0 and "QH-1002" in reviewer.stdout
    own_list = await _starter(shared_world, temporal_server, "--profile", "alice", "list")
    assert case_id in own_list.stdout


async def test_a_request_key_names_a_case_per_applicant(shared_world, temporal_server) -> None:
    key = f"shared-key-{id(shared_world)}"
    question = "Where is my order QH-1005?"
    alice = await _starter(shared_world, temporal_server, "--profile", "alice", "ask", question, "--request-key", key)
    assert alice.returncode == 0, alice.stderr
    bob = await _starter(
        shared_world, temporal_server, "--profile", "bob", "ask", "Where is my order QH-2005?", "--request-key", key
    )
    assert bob.returncode == 0, bob.stderr
    assert case_id_for(key, resolve_profile("alice")) != case_id_for(key, resolve_profile("bob"))
    assert "QH-1005" not in bob.stdout and "already used" not in bob.stderr
    reused = await _starter(
        shared_world, temporal_server, "--profile", "alice", "ask", "Please refund QH-1001", "--request-key", key
    )
    assert reused.returncode == 2 and "request_key_reused" in reused.stderr


async def test_a_remembered_language_applies_to_new_cases(shared_world, temporal_server) -> None:
    remembered = await _starter(
        shared_world, temporal_server, "--profile", "bob", "remember", "--language", "zh", "--consent"
    )
    assert remembered.returncode == 0, remembered.stderr
    asked = await _starter(shared_world, temporal_server, "--profile", "bob", "ask", "我的订单 QH-2005 到哪里了？")
    assert asked.returncode == 0, asked.stderr
    case_id = asked.stdout.split("case ", 1)[1].split()[0]
    as_json = await _starter(shared_world, temporal_server, "--profile", "bob", "status", case_id, "--json")
    view = CaseView.model_validate_json(as_json.stdout)
    assert view.language.value == "zh" and view.citations and all(":zh:" in c for c in view.citations)

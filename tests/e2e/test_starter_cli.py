"""starter.py as a user runs it: a real subprocess against the test server and a test worker."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from case_client import case_id_for
from contracts.case import CaseView
from contracts.case_input import CaseInput
from contracts.credentials import verify_approval_token
from contracts.directory import Directory
from contracts.knowledge import Language
from contracts.names import WORKFLOW_NAME
from keystore import demo_identity, directory_location, load_directory
from tests.credentials_support import use_test_keys

ROOT = Path(__file__).resolve().parents[2]


def use_test_keys_directory() -> Directory:
    return load_directory(directory_location(use_test_keys().state_dir, {}))


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
    case_id = case_id_for(key, demo_identity("alice"))
    assert f"case {case_id}" in first.stdout and "completed" in first.stdout
    second = await _starter(shared_world, temporal_server, "--profile", "alice", "ask", question, "--request-key", key)
    assert second.returncode == 0, second.stderr
    assert "already used" in second.stderr and f"case {case_id}" in second.stdout
    runs = [w async for w in shared_world.client.list_workflows(f'WorkflowId="case-{case_id}"')]
    assert len(runs) == 1


def _review_line(stdout: str) -> tuple[str, str]:
    """The case id and digest of the ``review ... --approve`` command that ask and review-info print."""
    line = next(line for line in stdout.splitlines() if " review " in line and "--approve" in line)
    return line.split(" review ")[1].split()[0], line.split("--digest ")[1].split()[0]


async def test_ask_prints_the_review_commands_and_a_wrong_reviewer_gets_one_line(shared_world, temporal_server) -> None:
    asked = await _starter(shared_world, temporal_server, "--profile", "alice", "ask", "Please refund QH-1002")
    assert asked.returncode == 0, asked.stderr
    assert "waiting_approval" in asked.stdout
    case_id, digest = _review_line(asked.stdout)
    assert f"--profile chen review {case_id} --digest {digest} --approve" in asked.stdout
    assert f"--profile chen review-info {case_id} --approve" in asked.stdout
    # a payload that merely names a reviewer is refused by the workflow, so none is ever printed
    assert '"reviewer"' not in asked.stdout and "workflow signal" not in asked.stdout

    refused = await _starter(
        shared_world, temporal_server, "--profile", "alice", "review", case_id, "--digest", digest, "--approve"
    )
    assert refused.returncode == 2
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("error: not_a_reviewer: profile alice is a customer and holds no reviewer key")
    assert "Traceback" not in refused.stderr
    events = await shared_world.client.get_workflow_handle(f"case-{case_id}").query("events")
    assert not [e for e in events if e["kind"] == "review_refused"]  # nothing was sent

    info = await _starter(shared_world, temporal_server, "--profile", "chen", "review-info", case_id)
    assert info.returncode == 0
    assert "approval_token" not in info.stdout  # a token is printed only when asked for
    # ask, status and review-info show the same computed-effect card, in 80 columns, the digest whole
    status = await _starter(shared_world, temporal_server, "--profile", "alice", "status", case_id)
    cards = [_card(out.stdout) for out in (asked, info, status)]
    assert cards[0] == cards[1] == cards[2]
    assert f"  digest      {digest}" in cards[0]
    assert "  refund      17900 cents (CNY 179.00) for QH-1002, SIMULATED payment" in cards[0]
    wide = [line for out in (asked, info, status) for line in _card_and_prose(out.stdout) if len(line) > 80]
    assert wide == []


def _card(stdout: str) -> list[str]:
    """The computed-effect rows of a printed case card."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  what approving does"))
    return lines[start : next(i for i, line in enumerate(lines) if line.startswith("  expires")) + 1]


def _card_and_prose(stdout: str) -> list[str]:
    """Every printed line but the ready-to-run commands and lone paths (copied whole, never wrapped)."""
    return [line for line in stdout.splitlines() if "starter.py" not in line and " " in line.strip()]


async def test_review_info_prints_signed_temporal_cli_and_web_ui_forms_that_work(shared_world, temporal_server) -> None:
    asked = await _starter(shared_world, temporal_server, "--profile", "alice", "ask", "Please refund QH-1009")
    assert asked.returncode == 0, asked.stderr
    case_id, digest = _review_line(asked.stdout)
    info = await _starter(shared_world, temporal_server, "--profile", "chen", "review-info", case_id, "--approve")
    assert info.returncode == 0, info.stderr
    lines = info.stdout.splitlines()
    update = next(line.strip() for line in lines if "workflow update execute" in line)
    signal = next(line.strip() for line in lines if "workflow signal" in line)
    where = f"--address {temporal_server.address} --namespace default --workflow-id case-{case_id} --name review"
    assert where in update and where in signal
    payload = update.split("--input '")[1].removesuffix("'")
    assert payload in signal and f"  {payload}" in lines  # the Web UI's input is the same JSON
    assert f"chen signed an approval of case {case_id}, digest {digest}" in info.stdout
    token = json.loads(payload)["approval_token"]
    claims = verify_approval_token(token, use_test_keys_directory())
    assert (claims.sub, claims.case_id, claims.digest, claims.decision) == ("chen", case_id, digest, "approve")
    assert claims.expires_at - claims.issued_at == timedelta(minutes=10)

    ran = await asyncio.to_thread(subprocess.run, ["bash", "-c", update], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    done = await _starter(shared_world, temporal_server, "--profile", "alice", "status", case_id, "--wait")
    assert done.returncode == 0 and "completed" in done.stdout and "SIM-" in done.stdout, done.stdout + done.stderr
    again = await asyncio.to_thread(subprocess.run, ["bash", "-c", signal], capture_output=True, text=True, timeout=120)
    assert again.returncode != 0  # the case has ended: the same token decides nothing twice
    settled = await _starter(shared_world, temporal_server, "--profile", "chen", "review-info", case_id, "--reject")
    assert settled.returncode == 2 and "case_not_waiting" in settled.stderr


async def test_bad_input_gets_one_clear_line_and_a_nonzero_exit(shared_world, temporal_server) -> None:
    unknown = await _starter(shared_world, temporal_server, "--profile", "zed", "status", "x")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert unknown.stderr == "error: unknown_person: 'zed' is not in the support directory.\n"
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
    assert case_id_for(key, demo_identity("alice")) != case_id_for(key, demo_identity("bob"))
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


async def _starter_on(
    queue: str, temporal_server, state_dir: Path, *args: str
) -> tuple[subprocess.CompletedProcess, float]:
    """starter.py pointed at ``queue`` (nobody polls it unless a test says so), and how long it took."""
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_server.address, "SUPPORT_TASK_QUEUE": queue, "COLUMNS": "200"}
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(state_dir), *args]
    started = time.monotonic()
    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)
    return done, time.monotonic() - started


async def _workflows_on(client, queue: str) -> list:
    return [w async for w in client.list_workflows(f'TaskQueue="{queue}"')]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["ask", ""], "invalid_question: the question is empty"),
        (["ask", "   \t  "], "invalid_question: the question is empty"),
        (["ask", "x" * 5000], "invalid_question: the question has 5000 characters; the limit is 2000"),
        (["ask", "--ttl-seconds", "0", "Where is QH-1005?"], "--ttl-seconds must be from 1 to 604800"),
        (["ask", "--ttl-seconds", "abc", "Where is QH-1005?"], "Invalid value for '--ttl-seconds'"),
        (["ask", "--language", "fr", "Where is QH-1005?"], "Invalid value for '--language'"),
        (["ask", "--request-key", "k" * 201, "Where is QH-1005?"], "--request-key must be 1 to 200 characters"),
        (["no-such-command"], "No such command"),
        (["--profile", "chen", "review", "x", "--digest", "abc", "--approve"], "invalid_digest: --digest must be"),
        (["--profile", "bob", "review", "x", "--digest", "a" * 64, "--approve"], "not_a_reviewer: profile bob"),
        (["--profile", "chen", "review", "x", "--digest", "a" * 64, "--approve"], "signing_key_missing"),
        (["--profile", "chen", "review-info", "x", "--approve", "--reject"], "exactly one of --approve or --reject"),
        (["--profile", "alice", "review-info", "x", "--approve"], "not_a_reviewer: profile alice"),
        (["verify", "x", "--history", "/nonexistent/history.json"], "history_unreadable: cannot read"),
    ],
)
async def test_bad_input_is_one_line_exit_2_and_starts_nothing(
    temporal_server, temporal_client, tmp_path: Path, args: list[str], says: str
) -> None:
    queue = f"bad-input-{uuid.uuid4().hex[:8]}"
    done, _ = await _starter_on(queue, temporal_server, tmp_path, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and says in line and "unexpected" not in line
    assert done.stdout == ""
    assert await _workflows_on(temporal_client, queue) == []


async def test_ask_without_the_issuer_key_says_so_and_starts_nothing(
    shared_world, temporal_server, tmp_path: Path
) -> None:
    key = f"no-issuer-key-{uuid.uuid4().hex[:8]}"
    done, _ = await _starter_on(
        shared_world.task_queue, temporal_server, tmp_path, "ask", "Where is my order QH-1005?", "--request-key", key
    )
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: signing_key_missing: No private key at") and "issuer.pem" in line
    case_id = case_id_for(key, demo_identity("alice"))
    assert [w async for w in shared_world.client.list_workflows(f'WorkflowId="case-{case_id}"')] == []


async def test_ask_and_status_without_a_worker_say_so_within_ten_seconds(
    temporal_server, temporal_client, tmp_path: Path
) -> None:
    queue = f"unpolled-{uuid.uuid4().hex[:8]}"
    asked, asked_seconds = await _starter_on(queue, temporal_server, tmp_path, "ask", "Where is my order QH-1005?")
    assert asked.returncode == 5, asked.stderr
    [line] = asked.stderr.strip().splitlines()
    assert f"no worker polls task queue '{queue}'" in line and "worker.py --state-dir" in line
    assert asked_seconds < 10, asked_seconds
    assert await _workflows_on(temporal_client, queue) == []  # nothing was started

    # A case already running whose worker is gone: status says so too, instead of a query timeout.
    case = CaseInput(
        case_id=f"noworker{uuid.uuid4().hex[:8]}",
        question="Where is my order QH-1005?",
        language=Language.EN,
        applicant=demo_identity("alice"),
    )
    await temporal_client.start_workflow(WORKFLOW_NAME, case, id=f"case-{case.case_id}", task_queue=queue)
    shown, shown_seconds = await _starter_on(queue, temporal_server, tmp_path, "status", case.case_id)
    assert shown.returncode == 5, shown.stderr
    [line] = shown.stderr.strip().splitlines()
    assert f"no worker polls task queue '{queue}'" in line and shown_seconds < 10, (line, shown_seconds)
    await temporal_client.get_workflow_handle(f"case-{case.case_id}").terminate("test cleanup")


async def test_exit_status_says_whether_the_case_reached_a_decision(shared_world, temporal_server) -> None:
    decided = await _starter(shared_world, temporal_server, "--profile", "alice", "ask", "Where is my order QH-1005?")
    assert decided.returncode == 0 and "completed" in decided.stdout, decided.stderr
    needs_input = await _starter(shared_world, temporal_server, "--profile", "alice", "ask", "Please refund QH-2001")
    assert needs_input.returncode == 3 and "waiting_customer" in needs_input.stdout, needs_input.stderr
    case_id = needs_input.stdout.split("case ", 1)[1].split()[0]
    status = await _starter(shared_world, temporal_server, "--profile", "alice", "status", case_id)
    assert status.returncode == 3


async def test_review_tells_another_tenants_reviewer_nothing_about_the_case(shared_world, temporal_server) -> None:
    asked = await _starter(shared_world, temporal_server, "--profile", "alice", "ask", "Please refund QH-1002")
    case_id, digest = _review_line(asked.stdout)
    foreign = await _starter(
        shared_world, temporal_server, "--profile", "mei", "review", case_id, "--digest", digest, "--approve"
    )
    missing = await _starter(
        shared_world, temporal_server, "--profile", "mei", "review", "no-such-case", "--digest", digest, "--approve"
    )
    assert foreign.returncode == missing.returncode == 2
    assert (
        foreign.stderr == missing.stderr == "error: case_not_accessible: No such case is available to this profile.\n"
    )
    events = await shared_world.client.get_workflow_handle(f"case-{case_id}").query("events")
    assert not [e for e in events if e["kind"] == "review_refused"]  # the refusal happened before the case

"""A canary API key goes to the provider and nowhere else: not history, records, logs or CLI output.

The worker is pointed at the scripted provider with ``OPENAI_API_KEY`` set to a fresh canary. The
provider checks that every request carried it (so the canary really was the key in use); then a full
case runs to a settled refund and every place an operator or auditor can read is searched for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.client import Client

from contracts.case import CaseStatus, CaseView, ReviewOutcome
from devstack.servers import DevServer
from tests.adversarial.adversary import scripted_world
from tests.adversarial.provider import ScriptedProvider
from tests.case_world import history_text
from tests.credentials_support import signed_review

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


async def _starter(env: dict[str, str], state_dir: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(state_dir), *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


async def test_the_api_key_appears_nowhere_but_in_the_requests_to_the_provider(
    temporal_client: Client,
    temporal_server: DevServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    canary = "sk-canary-" + secrets.token_hex(16)
    caplog.set_level(logging.DEBUG)  # every logger of the worker, the SDK and httpx2, at its most verbose
    state_dir = tmp_path / "state"
    with ScriptedProvider(api_key=canary) as provider:
        async with scripted_world(temporal_client, state_dir, provider) as adversary:
            handle, view = await adversary.run("Please refund QH-1001 and explain the amount and the policy")
            assert view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None
            approval = signed_review("chen", view.case_id, view.digest)
            outcome = await handle.execute_update("review", approval, result_type=ReviewOutcome)
            assert outcome.accepted
            final: CaseView = await handle.result()
            history = history_text(await handle.fetch_history())

    # the canary really was the key in use: every request the provider received carried it
    assert provider.count() >= 6
    assert {r.authorization for r in provider.requests} == {f"Bearer {canary}"}
    assert final.status is CaseStatus.COMPLETED and final.receipt is not None

    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": temporal_server.address,
        "OPENAI_API_KEY": canary,
        "OPENAI_BASE_URL": provider.base_url,
        "SUPPORT_MODEL": provider.model,
    }
    cli = [
        await _starter(env, state_dir, "status", final.case_id),
        await _starter(env, state_dir, "status", final.case_id, "--json"),
        await _starter(env, state_dir, "review-info", final.case_id),
    ]
    for run in cli:
        assert run.returncode == 0, run.stderr
        assert final.case_id in run.stdout and "completed" in run.stdout

    captured = capfd.readouterr()
    logs = caplog.text + captured.out + captured.err
    records = [path for path in state_dir.rglob("*") if path.is_file()]
    case_records = [path for path in records if path.suffix == ".json"]

    # the places searched are not empty: they hold this case and its model traffic
    assert final.receipt.receipt_id in history and final.case_id in history
    assert len(case_records) >= 2 and all(final.case_id in p.read_text(encoding="utf-8") for p in case_records)
    assert provider.base_url.removesuffix("/v1") in caplog.text  # the HTTP client's request lines
    loggers = {record.name for record in caplog.records}
    assert {"openai._base_client", "temporalio.worker._worker", "activities.commerce.commerce_sessions"} <= loggers

    places = {
        "workflow history": history,
        "case view": final.model_dump_json(),
        "logs": logs,
        **{f"CLI {' '.join(run.args[3:])}": run.stdout + run.stderr for run in cli},
    }
    for where, text in places.items():
        assert canary not in text, f"the API key appears in the {where}"
        assert canary.removeprefix("sk-") not in text, f"part of the API key appears in the {where}"
    for path in records:  # case records and every other file the worker wrote, databases included
        assert canary.encode() not in path.read_bytes(), f"the API key appears in {path}"

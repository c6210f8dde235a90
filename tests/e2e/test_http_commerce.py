"""A worker that reaches the commerce server as its own service, over Streamable HTTP with tokens."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from activities.commerce.commerce_http import COMMERCE_URL_ENV, CommerceHttpCaller
from activities.model.model_settings import load_model_settings
from case_worker import build_worker
from commerce_server.db import make_engine
from commerce_server.tokens import TOKEN_SECRET_ENV
from contracts.case import CaseStatus, CaseView, ReviewOutcome
from contracts.knowledge import Language
from keystore import DIRECTORY_ENV
from keystore.directory_file import DirectorySource
from tests.case_world import CaseWorld, stress_options
from tests.commerce_service import start_http_commerce
from tests.conftest import DemoKeys
from tests.credentials_support import signed_review
from workflows.customer_notice import status_notice

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def http_commerce(tmp_path: Path):
    service = start_http_commerce(tmp_path / "commerce-service")
    try:
        yield service.url, service.secret, service.state_dir
    finally:
        service.process.terminate()
        service.process.wait(timeout=10)


async def test_a_refund_settles_through_the_http_commerce_service(
    temporal_client, http_commerce, tmp_path, monkeypatch
) -> None:
    url, secret, service_dir = http_commerce
    monkeypatch.setenv(COMMERCE_URL_ENV, url)
    monkeypatch.setenv(TOKEN_SECRET_ENV, secret)
    worker_dir = tmp_path / "worker"
    task_queue = f"http-commerce-{uuid.uuid4().hex[:8]}"
    worker, cleanup = build_worker(
        temporal_client, worker_dir, task_queue=task_queue, model_settings=load_model_settings({}), **stress_options()
    )
    world = CaseWorld(temporal_client, worker_dir, task_queue, make_engine(f"sqlite:///{service_dir / 'commerce.db'}"))
    try:
        async with worker:
            handle = await world.start("Please refund QH-1001 and explain the amount and the policy")
            view = await world.settled(handle)
            assert view.status is CaseStatus.WAITING_APPROVAL
            assert view.proposal is not None and view.proposal.amount_cents == 12900
            assert view.digest is not None
            outcome = await handle.execute_update(
                "review", signed_review("chen", view.case_id, view.digest), result_type=ReviewOutcome
            )
            assert outcome.accepted
            final: CaseView = await handle.result()
    finally:
        await cleanup()
        world.engine.dispose()
    assert final.status is CaseStatus.COMPLETED
    assert final.receipt is not None and final.receipt.receipt_id.startswith("SIM-")
    assert [(r.order_id, r.amount_cents) for r in world.refund_records()] == [("QH-1001", 12900)]
    assert not (worker_dir / "commerce.db").exists()


def test_http_mode_without_a_token_secret_is_a_configuration_error(demo_keys: DemoKeys) -> None:
    from activities.commerce.commerce_http import CommerceHttpCaller
    from contracts.errors import ConfigurationError

    directory = DirectorySource(str(demo_keys.directory_path))
    with pytest.raises(ConfigurationError, match=TOKEN_SECRET_ENV):
        CommerceHttpCaller.from_env(directory, {COMMERCE_URL_ENV: "http://127.0.0.1:1/mcp"})
    assert CommerceHttpCaller.from_env(directory, {}) is None


async def test_a_worker_whose_token_secret_differs_refuses_to_start_with_one_line(
    http_commerce, temporal_server, tmp_path
) -> None:
    url, _, _ = http_commerce
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "DEEPSEEK", "SUPPORT_"))}
    env.update(
        {
            DIRECTORY_ENV: os.environ[DIRECTORY_ENV],  # the worker refuses to start without a directory
            COMMERCE_URL_ENV: url,
            TOKEN_SECRET_ENV: secrets.token_urlsafe(32),
            "TEMPORAL_ADDRESS": temporal_server.address,
        }
    )
    started = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(ROOT / "worker.py"), "--state-dir", str(tmp_path / "w"), "--task-queue", "never-polled"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )
    assert started.returncode == 2, started.stdout + started.stderr
    [line] = started.stderr.strip().splitlines()
    assert line.startswith("worker: configuration error: commerce_token_rejected:")
    assert "COMMERCE_TOKEN_SECRET differs" in line and "polling task queue" not in started.stdout


async def test_a_token_the_server_refuses_mid_case_fails_the_case_with_the_reason(
    temporal_client, http_commerce, tmp_path, demo_keys: DemoKeys
) -> None:
    """A worker that got past its start check (the server's secret rotated since): the refusal is a
    configuration fault that ends the case failed, never 'I could not find order QH-1001'."""
    url, _, service_dir = http_commerce
    task_queue = f"http-wrong-secret-{uuid.uuid4().hex[:8]}"
    commerce = CommerceHttpCaller(url, secrets.token_urlsafe(32), DirectorySource(str(demo_keys.directory_path)))
    worker, cleanup = build_worker(
        temporal_client,
        tmp_path / "worker",
        task_queue=task_queue,
        model_settings=load_model_settings({}),
        commerce=commerce,
        **stress_options(),
    )
    world = CaseWorld(
        temporal_client, tmp_path / "worker", task_queue, make_engine(f"sqlite:///{service_dir / 'commerce.db'}")
    )
    try:
        async with worker:
            handle = await world.start("Please refund QH-1001 and explain the amount and the policy")
            view = await world.settled(handle)
    finally:
        await cleanup()
        world.engine.dispose()
    assert view.status is CaseStatus.FAILED, (view.status, view.reason)
    assert view.reason is not None and view.reason.startswith("tool_configuration:commerce_token_rejected:")
    assert view.answer == status_notice(CaseStatus.FAILED, Language.EN)
    assert "could not find" not in (view.answer or "")
    assert view.budgets.model_requests == 2  # plan + the investigation turn whose tool call failed: no answer drafted

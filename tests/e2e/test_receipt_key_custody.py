"""Who holds the receipt key, in each documented deployment (docs/approving.md, docs/threat-model.md).

- stdio (the default, ``make demo``): the commerce server is the worker's child process. It reads
  ``COMMERCE_SIGNING_KEY`` itself; the worker's own code never opens the file (checked with an audit hook
  on every ``open`` of this process while a refund is paid and its receipt signed). The file is on the
  worker's machine, readable by the worker's OS user: that is what the docs say, precisely.
- HTTP (``COMMERCE_MCP_URL``; docker-compose, the cluster): the worker runs without the variable and
  without any private key in its state dir, and the refund is still paid with a receipt that verifies.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.commerce.commerce_http import COMMERCE_URL_ENV
from activities.model.model_settings import load_model_settings
from case_worker import build_worker
from commerce_server.db import make_engine
from commerce_server.tokens import SIGNING_KEY_ENV, TOKEN_SECRET_ENV
from contracts.case import CaseStatus, CaseView
from contracts.credentials import verify_receipt
from tests.case_world import CaseWorld, stress_options
from tests.commerce_service import start_http_commerce
from tests.conftest import DemoKeys
from tests.credentials_support import signed_review

QUESTION = "Please refund QH-1001 and explain the amount and the policy"
_opened: list[str] | None = None


def _record_opens(event: str, args: tuple) -> None:
    if _opened is not None and event == "open" and args and isinstance(args[0], str | bytes | Path):
        _opened.append(str(args[0]))


sys.addaudithook(_record_opens)  # audit hooks cannot be removed: it records only inside opens_of_this_process


@contextmanager
def opens_of_this_process() -> Iterator[list[str]]:
    """Every path this process opens while the block runs (the worker and its activities run here, and
    so does the test, which signs as the login service and as the reviewer)."""
    global _opened
    _opened = []
    try:
        yield _opened
    finally:
        _opened = None


async def _paid(world: CaseWorld) -> CaseView:
    handle = await world.start(QUESTION)
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None
    await handle.execute_update("review", signed_review("chen", view.case_id, view.digest))
    final: CaseView = await handle.result()
    assert final.status is CaseStatus.COMPLETED and final.receipt is not None and final.receipt.signature
    return final


async def test_over_stdio_the_worker_never_opens_the_receipt_key_its_commerce_server_signs_with(
    world: CaseWorld, demo_keys: DemoKeys
) -> None:
    key = demo_keys.commerce_key_path.resolve()
    with opens_of_this_process() as opened:
        final = await _paid(world)
    assert final.receipt is not None and final.receipt.signature is not None
    verify_receipt(final.receipt.signature, demo_keys.public_keys())  # signed, by the child process
    assert opened, "the audit hook saw no open at all"
    assert not [path for path in opened if Path(path).name == key.name or Path(path).resolve() == key]


async def test_over_http_the_worker_runs_without_any_private_key(
    temporal_client: Client, demo_keys: DemoKeys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = start_http_commerce(tmp_path / "commerce-service")  # given the receipt key by the environment
    try:
        monkeypatch.delenv(SIGNING_KEY_ENV)
        monkeypatch.setenv(COMMERCE_URL_ENV, service.url)
        monkeypatch.setenv(TOKEN_SECRET_ENV, service.secret)
        worker_dir = tmp_path / "worker"
        task_queue = f"custody-{uuid.uuid4().hex[:8]}"
        worker, cleanup = build_worker(
            temporal_client,
            worker_dir,
            task_queue=task_queue,
            model_settings=load_model_settings({}),
            **stress_options(),
        )
        engine = make_engine(f"sqlite:///{service.state_dir / 'commerce.db'}")
        world = CaseWorld(temporal_client, worker_dir, task_queue, engine)
        try:
            async with worker:
                with opens_of_this_process() as opened:
                    final = await _paid(world)
        finally:
            await cleanup()
            engine.dispose()
        assert final.receipt is not None and final.receipt.signature is not None
        verify_receipt(final.receipt.signature, demo_keys.public_keys())
        # The test itself signs as the login service (issuer.pem) and as chen (reviewer-chen.pem) in this
        # process; nothing else here may open a private key.
        keys = {Path(path).name for path in opened if path.endswith(".pem")}
        assert keys <= {"issuer.pem", "reviewer-chen.pem"}, keys
        assert not list(worker_dir.rglob("*.pem")), "the worker's state dir holds a private key"
    finally:
        service.process.terminate()
        service.process.wait(timeout=10)

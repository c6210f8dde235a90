"""One merchant's world for the directory tests: a state dir that ``starter.py init`` made, a worker built
on it (the production one, on its own task queue) and ``starter.py`` run as the merchant would run it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from sqlmodel import Session, SQLModel, select
from temporalio.client import Client

from activities.commerce.commerce_client import open_stdio_client
from case_client import CaseClient
from case_client.deployment import release
from case_worker import build_worker
from commerce_server.db import (
    CoApprovalUseRow,
    RefundRow,
    make_engine,
)
from contracts.case import CaseView
from contracts.commerce import RefundApproval
from contracts.errors import SupportError
from contracts.identity import Identity
from contracts.tools import ToolName
from keystore import directory_location, load_directory
from keystore.signers import KeyFileSigner
from tests.case_world import RoutedWorker, stress_options

Row = TypeVar("Row", bound=SQLModel)
ROOT = Path(__file__).resolve().parents[2]
Completed = subprocess.CompletedProcess[str]
ISOLATED = ("SUPPORT_DIRECTORY", "COMMERCE_DIRECTORY", "COMMERCE_SIGNING_KEY", "COMMERCE_DATABASE_URL")


@dataclass
class Merchant:
    """One merchant's state dir, its worker's task queue and the dev server, driven by starter.py."""

    state_dir: Path
    task_queue: str
    address: str
    client: Client

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {name: value for name, value in os.environ.items() if name not in ISOLATED}
        env |= {"TEMPORAL_ADDRESS": self.address, "SUPPORT_TASK_QUEUE": self.task_queue, "COLUMNS": "200"}
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_API_KEY"):
            env.pop(name, None)
        command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(self.state_dir), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=180, env=env, cwd=ROOT)
        if check:
            assert done.returncode == 0, (args, done.returncode, done.stdout[-1500:], done.stderr[-1500:])
        return done

    def cases(self) -> CaseClient:
        signer = KeyFileSigner(self.state_dir)
        return CaseClient.for_client(self.client, task_queue=self.task_queue, issuer=signer.applicant_token)

    def identity(self, subject: str) -> Identity:
        return load_directory(directory_location(self.state_dir, {})).identity(subject)

    def refunds(self) -> list[RefundRow]:
        return self._rows(RefundRow)

    def co_approvals(self) -> list[CoApprovalUseRow]:
        return self._rows(CoApprovalUseRow)

    def _rows(self, model: type[Row]) -> list[Row]:
        engine = make_engine(f"sqlite:///{self.state_dir / 'commerce.db'}")
        try:
            with Session(engine) as session:
                return list(session.exec(select(model)).all())
        finally:
            engine.dispose()

    async def ask(self, profile: str, question: str) -> CaseView:
        handle = await self.cases().start(self.identity(profile), question, ttl_seconds=900)
        return await handle.settled(timeout=90, poll_seconds=0.2)

    async def review(self, profile: str, view: CaseView, decision: str = "--approve") -> Completed:
        assert view.digest is not None
        return await asyncio.to_thread(
            self.run, "--profile", profile, "review", view.case_id, "--digest", view.digest, decision, check=False
        )

    async def view(self, case_id: str, timeout: float = 60) -> CaseView:
        return await self.cases().open(f"case-{case_id}").settled(timeout=timeout, poll_seconds=0.2)

    async def refused_straight(self, view: CaseView, approval_token: str, *, applicant: str = "alice") -> SupportError:
        """The commerce server's refusal of ``view``'s proposal approved by ``approval_token``, sent straight
        to it (stdio, as ``applicant``) with the issuer's applicant token, as a settlement would; a
        payment fails the test."""
        assert view.proposal is not None and view.digest is not None
        approval = RefundApproval(
            approval_id=f"direct-{uuid.uuid4().hex[:12]}",
            proposal=view.proposal,
            digest=view.digest,
            reviewer="chen",
            approved_at=datetime.now(UTC),
            approval_token=approval_token,
            applicant_token=KeyFileSigner(self.state_dir).applicant_token(self.identity(applicant), view.case_id),
        )
        async with open_stdio_client(applicant, self.state_dir) as commerce:
            try:
                receipt = await commerce.call(ToolName.EXECUTE_REFUND, {"approval": approval.model_dump(mode="json")})
            except SupportError as refused:
                return refused
        raise AssertionError(f"the commerce server paid {receipt}")

    async def events(self, case_id: str) -> list[str]:
        events = await self.client.get_workflow_handle(f"case-{case_id}").query("events")
        return [f"{event['kind']}: {event['detail']}" for event in events]


@asynccontextmanager
async def running_merchant(temporal_server, temporal_client: Client, state_dir: Path) -> AsyncIterator[Merchant]:
    """A merchant's state dir made by ``starter.py init`` and a worker built on it, with the environment
    as it is now (an outside issuer is read from it when the worker is built)."""
    shop = Merchant(state_dir, f"support-directory-{uuid.uuid4().hex[:8]}", temporal_server.address, temporal_client)
    await asyncio.to_thread(shop.run, "init")
    worker, cleanup = build_worker(
        temporal_client, state_dir, task_queue=shop.task_queue, deployment=release().version, **stress_options()
    )
    async with RoutedWorker(worker):
        yield shop
    await cleanup()

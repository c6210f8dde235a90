"""A customer confirms an action through the channel (issue 48), against the real worker, dev server and
commerce server over HTTP, with qinghe allowing cancellations on the customer's confirmation alone.

alice asks the channel to cancel QH-1006; her conversation names the digest that waits for her yes; "yes"
without a confirmation agrees to nothing; the demo sign-in signs her confirmation of that digest, and
"yes" with it executes the cancellation once. A confirmation bob's sign-in signed is refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from temporalio.client import Client

from commerce_server.tokens import DIRECTORY_ENV
from contracts.action_policy import ActionKind, ActionRule
from contracts.case_status import CaseStatus
from contracts.commerce import OrderStatus
from contracts.conversation import MessageRefusal
from customer_channel import ChannelConfig, TemporalConversations, build_app
from keystore import directory_location, load_directory, write_directory
from keystore.directory_edit import set_action
from keystore.directory_file import DirectorySource
from tests.case_world import CaseWorld, open_world
from tests.channel.channel_server import serving
from tests.channel.test_channel_e2e import bearer
from tests.credentials_support import use_test_keys

pytestmark = pytest.mark.slow

CASE = "ch4tcancel01"


@pytest.fixture
async def allowing_world(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[CaseWorld, Path]]:
    directory = tmp_path / "directory.json"
    rule = ActionRule(reviewers=0, max_per_customer_per_day=3)
    keys = load_directory(directory_location(use_test_keys().state_dir, {}))
    allowed = set_action(keys, "qinghe", ActionKind.CANCEL_ORDER, rule)
    write_directory(directory, allowed)
    monkeypatch.setenv(DIRECTORY_ENV, str(directory))
    case_world, worker, cleanup = await open_world(temporal_client, tmp_path / "state", directory=str(directory))
    async with worker:
        yield case_world, directory
    await cleanup()
    case_world.engine.dispose()


async def _until(
    http: httpx2.AsyncClient, headers: dict[str, str], done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The conversation once ``done`` holds for it (read every 0.2 s, for at most a minute)."""
    seen: dict[str, Any] = {}
    for _ in range(300):
        seen = (await http.get(f"/v1/conversations/{CASE}", headers=headers)).json()
        if done(seen):
            return seen
        await asyncio.sleep(0.2)
    raise AssertionError(f"the conversation never got there: {seen}")


async def test_a_customer_confirms_a_cancellation_through_the_channel(
    allowing_world: tuple[CaseWorld, Path],
) -> None:
    world, directory = allowing_world
    conversations = TemporalConversations(world.client, world.task_queue)
    app = build_app(
        conversations, DirectorySource(str(directory)), ChannelConfig(demo_sign_in=True), signer=use_test_keys()
    )
    alice = bearer("alice", CASE)
    async with serving(app) as origin, httpx2.AsyncClient(base_url=origin, timeout=60) as http:
        started = await http.post("/v1/conversations", json={"text": "Please cancel my order QH-1006"}, headers=alice)
        assert started.status_code == 201, started.text
        waiting = await _until(http, alice, lambda view: view["awaiting_confirmation"] is not None)
        digest = waiting["awaiting_confirmation"]
        words = await http.post(f"/v1/conversations/{CASE}/messages", json={"text": "yes"}, headers=alice)
        answered = await _until(http, alice, lambda view: len(view["entries"]) >= 4)
        bobs = await http.post("/demo/confirmation", json={"subject": "bob", "case_id": CASE, "digest": digest})
        forged = await http.post(
            f"/v1/conversations/{CASE}/messages",
            json={"text": "yes", "confirmation": bobs.json()["token"]},
            headers=alice,
        )
        hers = await http.post("/demo/confirmation", json={"subject": "alice", "case_id": CASE, "digest": digest})
        signed = await http.post(
            f"/v1/conversations/{CASE}/messages",
            json={"text": "yes", "confirmation": hers.json()["token"]},
            headers=alice,
        )
        done = await _until(http, alice, lambda view: view["status"] == CaseStatus.COMPLETED.value)
    assert words.status_code == 202 and answered["status"] == CaseStatus.WAITING_APPROVAL.value
    assert answered["awaiting_confirmation"] == digest  # words alone agreed to nothing
    assert forged.status_code == 403 and forged.json()["refusal"] == MessageRefusal.CONFIRMATION_INVALID.value, (
        forged.text
    )
    assert hers.status_code == 200 and hers.headers["cache-control"] == "no-store"
    assert signed.status_code == 202, signed.text
    assert done["awaiting_confirmation"] is None and "was cancelled" in done["entries"][-1]["text"]
    assert world.order("QH-1006").status == OrderStatus.CANCELLED

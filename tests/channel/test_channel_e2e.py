"""The channel against the real worker, dev server and commerce server (rehearsal model), over HTTP.

alice starts a conversation with "I want a refund for my lamp" (the case id is her token's); the
service asks which order, and the progress stream says it waits for her; she answers "QH-1001" and the
refund proposal waits for a reviewer. Her stream, dropped and resumed with Last-Event-ID, carries every
item once, in order. bob and lin (another tenant) find no such conversation, a forged credential is
refused, and none of their words reach the case. alice withdraws: the stream ends with ``withdrawn``,
nothing is paid, and a message after that is 409 with the closed sentence.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from temporalio.client import Client

from contracts.case_status import CaseStatus
from contracts.conversation import MessageRefusal, ProgressKind, Speaker, refusal_sentence
from customer_channel import ChannelConfig, TemporalConversations, build_app
from keystore import create_demo_directory, demo_identity, directory_location
from keystore.directory_file import DirectorySource
from keystore.signers import KeyFileSigner
from tests.case_world import CaseWorld, open_world
from tests.channel.channel_server import EventReader, serving
from tests.credentials_support import use_test_keys

pytestmark = pytest.mark.slow

CASE = "ch4tlamp0001"


@pytest.fixture
async def world(temporal_client: Client, tmp_path: Path) -> AsyncIterator[CaseWorld]:
    case_world, worker, cleanup = await open_world(temporal_client, tmp_path / "state")
    async with worker:
        yield case_world
    await cleanup()
    case_world.engine.dispose()


def bearer(who: str, case_id: str = CASE, signer: KeyFileSigner | None = None) -> dict[str, str]:
    token = (signer or use_test_keys()).applicant_token(demo_identity(who), case_id)
    return {"Authorization": f"Bearer {token}"}


async def test_a_conversation_over_http_with_the_stream_resumed(world: CaseWorld, tmp_path: Path) -> None:
    conversations = TemporalConversations(world.client, world.task_queue)
    directory = DirectorySource(directory_location(use_test_keys().state_dir, {}))
    app = build_app(conversations, directory, ChannelConfig())
    events = f"/v1/conversations/{CASE}/events"
    async with serving(app) as origin, httpx2.AsyncClient(base_url=origin, timeout=60) as http:
        started = await http.post(
            "/v1/conversations", json={"text": "I want a refund for my lamp"}, headers=bearer("alice")
        )
        assert started.status_code == 201, started.text
        assert (started.json()["case_id"], started.json()["events_url"]) == (CASE, events)

        stream = EventReader()
        await stream.read(http, events, bearer("alice"), until=ProgressKind.WAITING_FOR_CUSTOMER.value)
        assert stream.events[-1].data["status"] == CaseStatus.WAITING_CUSTOMER.value
        transcript = (await http.get(f"/v1/conversations/{CASE}", headers=bearer("alice"))).json()
        asked = transcript["entries"][-1]
        assert asked["speaker"] == Speaker.SERVICE.value and "order" in asked["text"].lower()
        assert transcript["waiting_until"] is not None

        # Nobody else reads or writes it: another customer, another tenant, a forged credential.
        create_demo_directory(tmp_path / "forger")
        forged = bearer("alice", signer=KeyFileSigner(tmp_path / "forger"))
        assert (await http.get(f"/v1/conversations/{CASE}", headers=bearer("bob"))).status_code == 404
        assert (await http.get(events, headers=bearer("lin"))).status_code == 404
        intruder = await http.post(
            f"/v1/conversations/{CASE}/messages", json={"text": "withdraw"}, headers=bearer("bob")
        )
        assert intruder.status_code == 404
        forgery = await http.post(f"/v1/conversations/{CASE}/messages", json={"text": "withdraw"}, headers=forged)
        assert (forgery.status_code, forgery.json()["refusal"]) == (403, MessageRefusal.NOT_VERIFIED.value)

        answered = await http.post(
            f"/v1/conversations/{CASE}/messages", json={"text": "QH-1001"}, headers=bearer("alice")
        )
        assert answered.status_code == 202, answered.text
        assert answered.json()["turn"] == 2
        await stream.read(http, events, bearer("alice"), until=ProgressKind.WAITING_FOR_REVIEWER.value)
        waiting = stream.events[-1].data
        assert waiting["status"] == CaseStatus.WAITING_APPROVAL.value and waiting["until"]

        # The stream was dropped twice and resumed after its last id: every item once, in order.
        assert stream.offsets == list(range(len(stream.offsets)))
        fresh = EventReader()
        await fresh.read(http, events, bearer("alice"), until=ProgressKind.WAITING_FOR_REVIEWER.value)
        assert fresh.offsets == stream.offsets  # read from the start, the same items at the same offsets

        withdrawn = await http.post(
            f"/v1/conversations/{CASE}/messages", json={"text": "Please withdraw my request"}, headers=bearer("alice")
        )
        assert withdrawn.status_code == 202, withdrawn.text
        await stream.read(http, events, bearer("alice"), until="never")
        assert stream.events[-1].name == "end"
        assert stream.events[-1].data == {"case_id": CASE, "status": CaseStatus.WITHDRAWN.value}
        assert ProgressKind.WITHDRAWN.value in stream.kinds()
        assert stream.offsets == list(range(len(stream.offsets)))
        assert world.refund_records() == []

        closed = await http.post(f"/v1/conversations/{CASE}/messages", json={"text": "hello?"}, headers=bearer("alice"))
        assert closed.status_code == 409, closed.text
        assert closed.json() == {
            "refusal": MessageRefusal.CASE_CLOSED.value,
            "message": refusal_sentence(MessageRefusal.CASE_CLOSED),
        }
        final = (await http.get(f"/v1/conversations/{CASE}", headers=bearer("alice"))).json()
        said = [entry["text"] for entry in final["entries"] if entry["speaker"] == Speaker.CUSTOMER.value]
        assert said == ["I want a refund for my lamp", "QH-1001", "Please withdraw my request"]
        assert final["status"] == CaseStatus.WITHDRAWN.value

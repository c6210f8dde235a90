"""The progress stream as Server-Sent Events (ids are offsets, Last-Event-ID resumes after one, the end
is said), the OpenAPI description generated from the route table, the demo sign-in only when asked
for, and the chat page: text only, its own script and style only."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from case_client._conversation import Progress
from contracts.case_status import CaseStatus
from contracts.conversation import ProgressKind
from contracts.credentials import verify_applicant_token
from customer_channel import ChannelConfig, build_app
from customer_channel.app import STATIC
from keystore import demo_identity, directory_location, load_directory
from keystore.directory_file import DirectorySource
from keystore.signers import KeyFileSigner
from tests.channel.channel_double import ConversationsDouble, item, view_of

CASE = "c0ffee000001"


def alice(signer: KeyFileSigner, case_id: str = CASE) -> dict[str, str]:
    return {"Authorization": f"Bearer {signer.applicant_token(demo_identity('alice'), case_id)}"}


def events_of(text: str) -> list[dict[str, str]]:
    """The stream's events as dicts of their fields (comments and ``retry`` left out)."""
    found = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":"))
        fields.pop("retry", None)
        if fields:
            found.append(fields)
    return found


@pytest.fixture
def followed(cases: ConversationsDouble) -> str:
    cases.views[CASE] = view_of(CASE)
    cases.items[CASE] = [
        item(ProgressKind.MESSAGE_RECEIVED, "We received your message."),
        item(ProgressKind.PLANNING, "Planning what to look up."),
        item(ProgressKind.READING_ORDER, "Reading order QH-1001."),
        item(ProgressKind.WAITING_FOR_REVIEWER, "A reviewer decides.", CaseStatus.WAITING_APPROVAL),
    ]
    return CASE


async def test_the_stream_carries_each_item_once_with_its_offset_and_ends(
    client: httpx2.AsyncClient, signer: KeyFileSigner, followed: str
) -> None:
    answer = await client.get(f"/v1/conversations/{followed}/events", headers=alice(signer))
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers["cache-control"] == "no-cache"
    events = events_of(answer.text)
    assert [event.get("id") for event in events] == ["0", "1", "2", "3", None]
    assert [event["event"] for event in events] == ["progress"] * 4 + ["end"]
    assert json.loads(events[2]["data"])["text"] == "Reading order QH-1001."
    assert json.loads(events[-1]["data"]) == {"case_id": followed, "status": "waiting_approval"}


async def test_last_event_id_resumes_after_it(client: httpx2.AsyncClient, signer: KeyFileSigner, followed: str) -> None:
    answer = await client.get(f"/v1/conversations/{followed}/events", headers={**alice(signer), "Last-Event-ID": "1"})
    assert [event.get("id") for event in events_of(answer.text)] == ["2", "3", None]
    for bad in ("-1", "one", "1.5", "9" * 40):
        refused = await client.get(
            f"/v1/conversations/{followed}/events", headers={**alice(signer), "Last-Event-ID": bad}
        )
        assert (refused.status_code, refused.json()["refusal"]) == (422, "message_malformed"), bad


async def test_an_idle_stream_sends_keep_alive_comments(
    state_dir: Path, cases: ConversationsDouble, signer: KeyFileSigner, followed: str
) -> None:
    class Slow(ConversationsDouble):
        async def progress(self, case_id: str, from_offset: int) -> AsyncIterator[Progress]:
            await asyncio.sleep(0.3)  # nothing happens for a while, then the case ends
            nothing: list[Progress] = []
            for entry in nothing:
                yield entry

    slow = Slow(views=cases.views)
    app = build_app(slow, DirectorySource(directory_location(state_dir)), ChannelConfig(keep_alive_seconds=0.05))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as http:
        answer = await http.get(f"/v1/conversations/{followed}/events", headers=alice(signer))
    assert ": keep-alive" in answer.text


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if "$ref" in node else []
        return own + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


@pytest.mark.parametrize("demo", [False, True], ids=["plain", "demo-sign-in"])
async def test_the_openapi_description_lists_every_route_from_the_code(
    state_dir: Path, cases: ConversationsDouble, signer: KeyFileSigner, demo: bool
) -> None:
    app = build_app(
        cases, DirectorySource(directory_location(state_dir)), ChannelConfig(demo_sign_in=demo), signer=signer
    )
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as http:
        answer = await http.get("/openapi.json")
    assert answer.status_code == 200
    document = json.loads(answer.text)
    assert document["openapi"] == "3.1.0"
    served = {
        (method.lower(), route.path)
        for route in app.routes
        if isinstance(route, Route)
        for method in (route.methods or set()) - {"HEAD"}
    }
    described = {(method, path) for path, operations in document["paths"].items() for method in operations}
    assert described == served
    assert ("post", "/demo/token") in described if demo else ("post", "/demo/token") not in described
    schemas = document["components"]["schemas"]
    for name in ("ConversationView", "MessageAccepted", "SendMessage", "StartConversation", "Refusal"):
        jsonschema.Draft202012Validator.check_schema(schemas[name])
    assert {ref.removeprefix("#/components/schemas/") for ref in _refs(document)} <= set(schemas)
    message = document["paths"]["/v1/conversations/{case_id}/messages"]["post"]
    assert set(message["responses"]) >= {"202", "401", "403", "404", "409", "413", "422", "429"}
    assert message["security"] == [{"bearer": []}]
    assert schemas["SendMessage"]["properties"]["text"]["maxLength"] == 2000


async def test_the_demo_sign_in_is_404_without_the_flag(client: httpx2.AsyncClient) -> None:
    for method, path, body in [
        ("GET", "/demo/customers", None),
        ("POST", "/demo/sign-in", {"subject": "alice"}),
        ("POST", "/demo/token", {"subject": "alice"}),
    ]:
        answer = await client.request(method, path, json=body)
        assert answer.status_code == 404, path
        assert answer.json()["message"] == "There is nothing at this address."
        assert "token" not in answer.json()


@pytest.fixture
def demo_app(state_dir: Path, cases: ConversationsDouble, signer: KeyFileSigner) -> Starlette:
    return build_app(
        cases, DirectorySource(directory_location(state_dir)), ChannelConfig(demo_sign_in=True), signer=signer
    )


async def test_the_demo_sign_in_signs_tokens_for_the_directorys_customers_only(
    demo_app: Starlette, state_dir: Path
) -> None:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=demo_app), base_url="http://t") as http:
        listed = (await http.get("/demo/customers")).json()["customers"]
        signed_in = await http.post("/demo/sign-in", json={"subject": "lin"})
        reviewer = await http.post("/demo/sign-in", json={"subject": "chen"})
        unknown = await http.post("/demo/token", json={"subject": "mallory"})
        fresh = (await http.post("/demo/token", json={"subject": "alice"})).json()
        bound = (await http.post("/demo/token", json={"subject": "alice", "case_id": CASE})).json()
        bad_case = await http.post("/demo/token", json={"subject": "alice", "case_id": "../x"})
    assert [customer["subject"] for customer in listed] == ["alice", "bob", "lin"]
    assert signed_in.json() == {"subject": "lin", "display_name": "Lin", "tenant": "south"}
    assert (reviewer.status_code, unknown.status_code, bad_case.status_code) == (404, 404, 422)
    assert reviewer.json()["message"] == "The demo directory lists no customer of that name."
    directory = load_directory(directory_location(state_dir))
    assert bound["case_id"] == CASE and fresh["case_id"] != CASE
    for issued in (fresh, bound):
        identity = verify_applicant_token(issued["token"], directory, case_id=issued["case_id"], now=datetime.now(UTC))
        assert identity.subject == "alice"


async def test_the_chat_page_is_text_only_with_its_own_script_and_style(client: httpx2.AsyncClient) -> None:
    page = await client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy and "unsafe-inline" not in policy
    assert "demo sign-in" in page.text.lower()
    assert "<script>" not in page.text  # no inline script
    assert re.search(r"<[^>]*\son\w+\s*=", page.text) is None  # no inline event handler
    scripts = {path.name: path.read_text(encoding="utf-8") for path in STATIC.glob("*.js")}
    assert set(scripts) == {"chat.js", "words.js"}
    for name, script in scripts.items():
        for markup in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert markup not in script, (name, markup)
    assert scripts["chat.js"].count("textContent") >= 5
    served = await client.get("/static/chat.js")
    assert served.status_code == 200 and "Last-Event-ID" in served.text
    health = await client.get("/healthz")
    assert health.json() == {"status": "ok", "demo_sign_in": False}

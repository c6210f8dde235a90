"""A real refund case on the session dev server, its large payloads compressed by the case codec, read
back the four ways a person reads it: the auditor (``audit_from_history`` through the history payload
converter), the secret-leak grep (``history_text``), the codec server as a real process, and the real
Temporal CLI with and without ``--codec-endpoint``."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import History
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter

import case_history.trail as trail
from case_history.audit import audit_from_history
from contracts.case import CaseStatus
from contracts.payload_codec import COMPRESS_AT, ENCODING, HISTORY_PAYLOAD_CONVERTER, decode_payload_sync
from devstack.servers import DevServer, LocalServer, start_codec_server
from devstack.temporal_cli import temporal_cli
from tests.case_world import history_text, json_texts, open_world
from tests.payloads.history_payloads import decoded_history, payloads_of

pytestmark = pytest.mark.slow

QUESTION = "Please refund QH-1001 and explain the amount and the policy"


@dataclass(frozen=True)
class WaitingCase:
    workflow_id: str
    history: WorkflowHistory


@pytest.fixture(scope="module")
async def waiting_case(temporal_client: Client, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[WaitingCase]:
    """One refund case run to waiting_approval by the production worker with the rehearsal model."""
    world, worker, cleanup = await open_world(temporal_client, tmp_path_factory.mktemp("payloads") / "state")
    async with worker:
        handle = await world.start(QUESTION)
        view = await world.settled(handle)
        assert view.status is CaseStatus.WAITING_APPROVAL, view.reason
        yield WaitingCase(handle.id, await handle.fetch_history())
    await cleanup()
    world.engine.dispose()


@pytest.fixture(scope="module")
def codec_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    server = start_codec_server(tmp_path_factory.mktemp("codec") / "codec-server.log")
    yield server
    server.stop()


def _compressed(history: WorkflowHistory) -> list[Payload]:
    return [p for p in payloads_of(history) if p.metadata.get("encoding") == ENCODING.encode()]


def test_the_waiting_case_history_is_compressed_and_smaller(waiting_case: WaitingCase) -> None:
    compressed = _compressed(waiting_case.history)
    assert len(compressed) >= 5  # transcripts, evidence for compose and review, the case record
    stored = History(events=waiting_case.history.events).ByteSize()
    raw = History(events=decoded_history(waiting_case.history).events).ByteSize()
    assert stored < raw * 0.75, (stored, raw)
    assert stored <= 48 * 1024, f"{stored} bytes at waiting_approval: the goal is 48 KiB"
    for payload in payloads_of(waiting_case.history):  # every payload under the threshold stays JSON
        if payload.metadata.get("encoding") != ENCODING.encode():
            assert payload.ByteSize() < COMPRESS_AT or payload.metadata.get("encoding") != b"json/plain"


def test_the_audit_reads_the_compressed_history(waiting_case: WaitingCase, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trail, "_CONVERTER", pydantic_data_converter.payload_converter)
    blind = audit_from_history(waiting_case.history)
    assert blind.problems, "without the codec the compressed payloads would not read: the test would be vacuous"

    monkeypatch.setattr(trail, "_CONVERTER", HISTORY_PAYLOAD_CONVERTER)  # what trail.py uses (integration)
    audit = audit_from_history(waiting_case.history)
    assert audit.problems == []
    case = audit.trail.case.value
    assert case is not None and case.question == QUESTION
    assert audit.view is not None and audit.view.status is CaseStatus.WAITING_APPROVAL
    assert audit.proposal is not None and audit.recomputed_digest == audit.view.digest
    assert len(audit.model_requests) >= 5 and len(audit.tool_calls) >= 3


def test_history_text_finds_what_only_a_compressed_payload_holds(waiting_case: WaitingCase) -> None:
    needle = _only_in_compressed(waiting_case.history)
    base64_only = "\n".join(p.data.decode("utf-8", "replace") for p in payloads_of(waiting_case.history))
    assert needle not in base64_only  # what history_text saw before it decompressed
    assert needle in history_text(waiting_case.history)


def test_the_codec_server_process_decodes_a_payload_of_the_history(
    waiting_case: WaitingCase, codec_server: LocalServer
) -> None:
    payload = max(_compressed(waiting_case.history), key=lambda p: p.ByteSize())
    original = decode_payload_sync(payload)
    body = json.dumps({"payloads": [json_format.MessageToDict(payload)]}).encode()
    for path in ("/decode", "/default/decode"):  # the CLI's {namespace} template: only the last segment counts
        request = urllib.request.Request(codec_server.endpoint + path, data=body, method="POST")
        for name, value in {"Content-Type": "application/json", "X-Namespace": "default"}.items():
            request.add_header(name, value)
        request.add_header("Origin", "http://localhost:8233")
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.headers["Access-Control-Allow-Origin"] == "http://localhost:8233"
            [returned] = json.loads(answer.read())["payloads"]
        assert base64.b64decode(returned["metadata"]["encoding"]) == b"json/plain"
        assert json.loads(base64.b64decode(returned["data"])) == json.loads(original.data)
        assert QUESTION in base64.b64decode(returned["data"]).decode()


def test_the_codec_server_answers_the_web_ui_preflight(codec_server: LocalServer) -> None:
    request = urllib.request.Request(codec_server.endpoint + "/decode", method="OPTIONS")
    request.add_header("Origin", "http://127.0.0.1:8233")
    request.add_header("Access-Control-Request-Method", "POST")
    request.add_header("Access-Control-Request-Headers", "content-type,x-namespace")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 204
        assert answer.headers["Access-Control-Allow-Origin"] == "http://127.0.0.1:8233"
        assert answer.headers["Access-Control-Allow-Credentials"] == "true"
        allowed = {h.strip().lower() for h in answer.headers["Access-Control-Allow-Headers"].split(",")}
        assert {"content-type", "x-namespace", "authorization"} <= allowed
        assert "POST" in answer.headers["Access-Control-Allow-Methods"]


async def test_the_temporal_cli_shows_the_payloads_decoded_only_through_the_codec_server(
    waiting_case: WaitingCase, codec_server: LocalServer, temporal_server: DevServer
) -> None:
    needle = _only_in_compressed(waiting_case.history)
    without = _cli_texts(await _show(temporal_server, waiting_case.workflow_id))
    decoding = ("--codec-endpoint", codec_server.endpoint)
    through = _cli_texts(await _show(temporal_server, waiting_case.workflow_id, *decoding))
    assert needle not in without and needle in through
    assert through.count(QUESTION) > without.count(QUESTION) >= 1  # the transcripts repeat the question
    assert ENCODING not in through and ENCODING in without


async def _show(server: DevServer, workflow_id: str, *extra: str) -> dict[str, Any]:
    command = [temporal_cli(), "workflow", "show", "--address", server.address, "-w", workflow_id]
    done = await asyncio.to_thread(
        subprocess.run, [*command, "--output", "json", *extra], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _cli_texts(shown: Any) -> str:
    """Every string of the CLI's JSON, payload data and metadata base64-decoded where it is base64."""
    return json_texts(
        shown,
        lambda payload: [_b64_text(payload["data"]), *(_b64_text(v) for v in (payload.get("metadata") or {}).values())],
    )


def _b64_text(text: str) -> str:
    try:
        return base64.b64decode(text, validate=True).decode("utf-8", "replace")
    except ValueError:
        return text


def _only_in_compressed(history: WorkflowHistory) -> str:
    """A string that a compressed payload of ``history`` holds and no plain payload does."""
    plain = "\n".join(p.data.decode("utf-8", "replace") for p in payloads_of(history))
    for payload in _compressed(history):
        for text in _strings(json.loads(decode_payload_sync(payload).data)):
            if len(text) >= 24 and text not in plain and json.dumps(text) == f'"{text}"':  # no escapes in JSON
                return text
    raise AssertionError("every string of the compressed payloads is also in a plain one")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)

"""The case codec on its own: what it compresses, what it leaves alone, what it refuses to decode, and
the places that must use it (the worker's client check, history readers, the committed histories)."""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import History, HistoryEvent
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter

from case_worker import build_worker
from contracts.case import Budgets
from contracts.errors import ConfigurationError
from contracts.payload_codec import (
    CASE_CODEC,
    CASE_DATA_CONVERTER,
    COMPRESS_AT,
    ENCODING,
    HISTORY_PAYLOAD_CONVERTER,
    MAX_DECODED_BYTES,
    CaseCompressionCodec,
    PayloadDecodeError,
    decode_payload_sync,
    encode_payload,
    uses_case_codec,
)
from tests.case_world import history_text
from tests.payloads.history_payloads import payloads_of
from tests.release_code import all_histories

ROOT = Path(__file__).resolve().parents[2]
HISTORIES = all_histories()


def _json_payload(value: Any, **metadata: bytes) -> Payload:
    payload = pydantic_data_converter.payload_converter.to_payloads([value])[0]
    for key, data in metadata.items():
        payload.metadata[key] = data
    return payload


def _sized(size: int) -> Payload:
    """A compressible json/plain payload whose serialized size is exactly ``size`` bytes."""
    for pad in range(3):  # a length prefix that grows by a byte may skip ``size``: a metadata entry fills it
        payload = _json_payload("", **({"pad": b"p" * pad} if pad else {}))
        base = payload.ByteSize()
        for length in range(max(size - base, 0), -1, -1):
            payload.data = b'"' + b"a" * length + b'"'
            if payload.ByteSize() <= size:
                break
        if payload.ByteSize() == size:
            return payload
    raise AssertionError(f"no payload of {size} bytes")


def _encoding(payload: Payload) -> str:
    return payload.metadata["encoding"].decode()


async def test_a_large_payload_round_trips_compressed_with_its_metadata_inside() -> None:
    original = _json_payload({"transcript": ["Please refund QH-1001 and explain the amount"] * 200}, note=b"kept")
    [encoded] = await CASE_CODEC.encode([original])
    assert _encoding(encoded) == ENCODING and list(encoded.metadata) == ["encoding"]
    assert encoded.ByteSize() < original.ByteSize() / 5
    assert Payload.FromString(zlib.decompress(encoded.data)) == original  # the whole serialized payload
    [decoded] = await CASE_CODEC.decode([encoded])
    assert decoded == original and decoded.metadata["note"] == b"kept"


async def test_the_threshold_is_the_serialized_size() -> None:
    below, at = _sized(COMPRESS_AT - 1), _sized(COMPRESS_AT)
    assert encode_payload(below) is below  # under the threshold: the very same plain payload
    assert _encoding(encode_payload(at)) == ENCODING
    smaller = CaseCompressionCodec(threshold=256)
    [under, over] = await smaller.encode([_sized(255), _sized(256)])
    assert (_encoding(under), _encoding(over)) == ("json/plain", ENCODING)


async def test_a_small_payload_is_left_as_plain_json() -> None:
    review = _json_payload({"approval_token": "eyJhbGciOiJFZERTQSJ9.e30.c2ln"})
    [encoded] = await CASE_CODEC.encode([review])
    assert encoded is review and _encoding(encoded) == "json/plain"
    assert json.loads(encoded.data) == {"approval_token": "eyJhbGciOiJFZERTQSJ9.e30.c2ln"}


def test_a_payload_that_would_not_shrink_is_left_as_it_is() -> None:
    noise = Payload(metadata={"encoding": b"binary/plain"}, data=os.urandom(COMPRESS_AT * 2))
    assert encode_payload(noise) is noise


def test_a_compressed_payload_is_not_compressed_twice() -> None:
    once = encode_payload(_sized(COMPRESS_AT * 3))
    assert encode_payload(once) is once


def test_decoding_passes_plain_and_unknown_payloads_through() -> None:
    for payload in (
        _json_payload({"a": 1}),
        _sized(COMPRESS_AT * 2),  # large but never compressed: written before the codec
        Payload(metadata={"encoding": b"binary/encrypted"}, data=b"\x00\x01"),
        Payload(metadata={"encoding": b"binary/null"}),
        Payload(),
    ):
        assert decode_payload_sync(payload) is payload


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"not zlib at all", "is not zlib data"),
        (zlib.compress(b"\xff\xff\xff not a protobuf"), "does not hold a serialized payload"),
        (zlib.compress(_sized(COMPRESS_AT).SerializeToString())[:-20], "is truncated"),
        (zlib.compress(b"\x00" * (MAX_DECODED_BYTES + 1)), "inflates past"),
    ],
)
def test_a_bad_compressed_payload_is_refused_in_one_line(data: bytes, problem: str) -> None:
    with pytest.raises(PayloadDecodeError, match=problem) as raised:
        decode_payload_sync(Payload(metadata={"encoding": ENCODING.encode()}, data=data))
    assert "\n" not in str(raised.value)


async def test_the_case_data_converter_is_pydantic_json_with_the_codec() -> None:
    assert uses_case_codec(CASE_DATA_CONVERTER) and not uses_case_codec(pydantic_data_converter)
    assert CASE_DATA_CONVERTER.payload_converter_class is pydantic_data_converter.payload_converter_class
    long_reason = "r" * (COMPRESS_AT * 2)
    [encoded] = await CASE_DATA_CONVERTER.encode([{"reason": long_reason}])
    assert _encoding(encoded) == ENCODING
    assert await CASE_DATA_CONVERTER.decode([encoded], [dict]) == [{"reason": long_reason}]
    [plain] = await CASE_DATA_CONVERTER.encode([Budgets()])
    assert _encoding(plain) == "json/plain"
    assert await CASE_DATA_CONVERTER.decode([plain], [Budgets]) == [Budgets()]


def test_the_history_converter_reads_compressed_and_plain_payloads() -> None:
    value = {"question": "Please refund QH-1001", "padding": "x" * COMPRESS_AT}
    compressed = encode_payload(_json_payload(value))
    assert _encoding(compressed) == ENCODING
    assert HISTORY_PAYLOAD_CONVERTER.from_payload(compressed, dict) == value
    assert HISTORY_PAYLOAD_CONVERTER.from_payload(_json_payload(Budgets()), Budgets) == Budgets()
    assert HISTORY_PAYLOAD_CONVERTER.from_payload(_json_payload([1, 2])) == [1, 2]
    with pytest.raises(PayloadDecodeError):
        HISTORY_PAYLOAD_CONVERTER.from_payload(Payload(metadata={"encoding": ENCODING.encode()}, data=b"x"), dict)


def test_a_worker_refuses_a_client_without_the_case_codec(tmp_path: Path) -> None:
    for converter in (pydantic_data_converter, CASE_DATA_CONVERTER.__class__()):
        client = cast(Client, SimpleNamespace(data_converter=converter))
        with pytest.raises(ConfigurationError, match="CASE_DATA_CONVERTER") as raised:
            build_worker(client, tmp_path)
        assert raised.value.code == "data_converter"


def test_history_text_sees_inside_a_compressed_payload() -> None:
    """What the secret-leak tests grep: a string inside a compressed payload must be found."""
    secret = "sk-live-never-in-a-history-0123456789"
    payload = encode_payload(_json_payload({"transcript": [secret] + ["padding"] * COMPRESS_AT}))
    assert _encoding(payload) == ENCODING and secret.encode() not in payload.data
    event = HistoryEvent(event_id=1)
    event.workflow_execution_started_event_attributes.input.payloads.append(payload)
    history = WorkflowHistory.from_json("wf", json_format.MessageToJson(History(events=[event])))
    assert secret not in history.to_json()
    assert secret in history_text(history)


def test_every_committed_history_payload_decodes_and_the_old_ones_pass_through() -> None:
    """Histories recorded before the codec hold no compressed payload, and decoding returns each of their
    payloads as it is (test_replay.py replays them all with the codec); newer ones inflate."""
    assert HISTORIES
    for path in HISTORIES:
        history = WorkflowHistory.from_json(path.stem, path.read_text(encoding="utf-8"))
        for payload in payloads_of(history):
            decoded = decode_payload_sync(payload)
            if payload.metadata.get("encoding") != ENCODING.encode():
                assert decoded is payload
            else:
                assert decoded.metadata.get("encoding") != ENCODING.encode()

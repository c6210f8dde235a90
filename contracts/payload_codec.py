"""The case payload codec: large payloads travel zlib-compressed, small ones stay plain JSON.

Every client, worker and replayer of the service uses :data:`CASE_DATA_CONVERTER`: the pydantic data
converter with :class:`CaseCompressionCodec`. A payload whose serialized ``Payload`` message is at
least :data:`COMPRESS_AT` bytes is replaced by a payload with metadata ``encoding: binary/zlib`` whose
data is the zlib-compressed serialized original (metadata included, as the Temporal samples'
encryption codec wraps a payload), when that is smaller. Everything else is left as it is, so what a
reviewer sends and reads with the Temporal CLI (a review, the ``status``, ``proposal``, ``events`` and
``budgets`` queries, the memo, the summaries) stays readable without the codec server
(``python -m codec_server``, docs/payloads.md).

Decoding passes through every payload that is not ``binary/zlib``: histories written before the codec
(tests/histories) replay unchanged, and a payload someone sent as plain JSON (the CLI, the Web UI)
reads as before. Compression is not encryption: anyone who can read the history can decompress it.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence
from typing import Any, TypeVar, overload

from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, PayloadCodec

from contracts.failures import CaseFailureConverter

T = TypeVar("T")
ENCODING = "binary/zlib"
"""The ``encoding`` metadata of a compressed payload (its data: zlib of the serialized original)."""
COMPRESS_AT = 4096
"""Payloads of at least this many bytes (serialized) are compressed. In a refund case the payloads
from 4 KiB up (investigation transcripts, evidence for compose and review, case records, tool results
with policy pages) are 78 % of the payload bytes and compress to about a third; everything a reviewer
reads from the CLI is below it (the ``status`` query 3.1 KiB waiting, 3.8 KiB completed; ``proposal``
1.1 KiB, ``events`` 1.3-1.6 KiB, a signed review 0.5 KiB, the memo and the summaries smaller still). A
1 KiB threshold would save only 2.7 KiB more per case (docs/payloads.md)."""
LEVEL = 6
"""zlib's default level: level 9 saves under 0.5 % more on these payloads."""
MAX_DECODED_BYTES = 16 * 1024 * 1024
"""A compressed payload that inflates past this is refused (a decompression bomb posted to the codec
server); the largest payload of a case spending every budget is under 100 KiB."""


class PayloadDecodeError(ValueError):
    """A ``binary/zlib`` payload that is not zlib data of a serialized payload, or inflates too far."""


def encode_payload(payload: Payload, *, threshold: int = COMPRESS_AT, level: int = LEVEL) -> Payload:
    """``payload`` compressed when it is at least ``threshold`` bytes and compressing saves bytes; else
    ``payload`` itself. An already compressed payload is returned as it is."""
    if _encoding(payload) == ENCODING:
        return payload
    raw = payload.SerializeToString(deterministic=True)
    if len(raw) < threshold:
        return payload
    compressed = Payload(metadata={"encoding": ENCODING.encode()}, data=zlib.compress(raw, level))
    return compressed if compressed.ByteSize() < len(raw) else payload


def decode_payload_sync(payload: Payload) -> Payload:
    """The original of a ``binary/zlib`` payload; any other payload unchanged (synchronous, for history
    readers). Raises :class:`PayloadDecodeError` for a compressed payload that does not decode."""
    if _encoding(payload) != ENCODING:
        return payload
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(payload.data, MAX_DECODED_BYTES)
    except zlib.error as error:
        raise PayloadDecodeError(f"a {ENCODING} payload is not zlib data ({error})") from None
    if inflater.unconsumed_tail:
        raise PayloadDecodeError(f"a {ENCODING} payload inflates past {MAX_DECODED_BYTES} bytes")
    if not inflater.eof:
        raise PayloadDecodeError(f"a {ENCODING} payload is truncated")
    original = Payload()
    try:
        original.ParseFromString(raw)
    except DecodeError as error:
        raise PayloadDecodeError(f"a {ENCODING} payload does not hold a serialized payload ({error})") from None
    return original


class CaseCompressionCodec(PayloadCodec):
    """zlib for payloads of at least ``threshold`` bytes (:func:`encode_payload`); decoding passes
    through anything not ``binary/zlib`` (:func:`decode_payload_sync`)."""

    def __init__(self, threshold: int = COMPRESS_AT, level: int = LEVEL) -> None:
        self.threshold = threshold
        self.level = level

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [encode_payload(p, threshold=self.threshold, level=self.level) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [decode_payload_sync(p) for p in payloads]


class HistoryPayloadConverter:
    """What history readers (``case_client.trail``) decode payloads with: the case codec's decoding,
    then the pydantic payload converter. Synchronous: a fetched or exported history is already here."""

    def __init__(self) -> None:
        self._converter = pydantic_data_converter.payload_converter

    @overload
    def from_payload(self, payload: Payload) -> Any: ...

    @overload
    def from_payload(self, payload: Payload, type_hint: type[T]) -> T: ...

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        """``payload`` decompressed when the case codec compressed it, then converted to ``type_hint``;
        raises :class:`PayloadDecodeError` or the converter's error (e.g. pydantic's ValidationError)."""
        decoded = decode_payload_sync(payload)
        if type_hint is None:
            return self._converter.from_payload(decoded)
        return self._converter.from_payload(decoded, type_hint)


CASE_CODEC = CaseCompressionCodec()
CASE_DATA_CONVERTER: DataConverter = dataclasses.replace(
    pydantic_data_converter, payload_codec=CASE_CODEC, failure_converter_class=CaseFailureConverter
)
"""The data converter of every client, worker and replayer: pydantic JSON, large payloads compressed,
refusals without a stack trace (:mod:`contracts.failures`)."""
HISTORY_PAYLOAD_CONVERTER = HistoryPayloadConverter()


def uses_case_codec(converter: DataConverter) -> bool:
    """Whether ``converter`` compresses and decompresses as :data:`CASE_DATA_CONVERTER` does."""
    return isinstance(converter.payload_codec, CaseCompressionCodec)


def _encoding(payload: Payload) -> str:
    return payload.metadata.get("encoding", b"").decode("utf-8", "replace")

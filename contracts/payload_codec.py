"""The case payload codec: large payloads travel zlib-compressed, small ones stay plain JSON.

Every client, worker and replayer of the service uses :data:`CASE_DATA_CONVERTER`: the pydantic data
converter with :class:`CaseCompressionCodec`. What a reviewer sends and reads with the Temporal CLI
stays readable without the codec server (``python -m codec_server``, docs/payloads.md), and histories
written before the codec (tests/histories) replay unchanged. Compression is not encryption: anyone
who can read the history can decompress it. Inflating is bounded, so a zlib bomb is never fully
inflated in memory.
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
MAX_DECODED_BYTES = 4 * 1024 * 1024
"""No compressed payload inflates past this (Temporal's own limit per payload is 2 MiB; the largest
payload of a case spending every budget is under 100 KiB)."""
MAX_RATIO = 100
"""Nor past this many times its compressed size (a case's payloads compress 3 to 20 times; a zlib bomb
reaches 1000)."""
RATIO_FLOOR = 64 * 1024
"""The ratio cap never limits a payload below this many inflated bytes."""
CALL_BUDGET = 16 * 1024 * 1024
"""What one decode call may inflate in all (the payloads of one job of a workflow activation, or one
client call); the codec server has its own per-request budget."""
UNDECODABLE = "binary/undecodable"
"""The ``encoding`` of the marker that the worker's codec puts in place of a compressed payload it
cannot decode; its data is the reason, in one line. No payload converter knows the encoding, so any
typed conversion of it fails, and the workflow records a review carrying it as malformed."""


class PayloadDecodeError(ValueError):
    """A ``binary/zlib`` payload that is not zlib data of a serialized payload, or inflates too far."""


class DecodeBudgetExceeded(PayloadDecodeError):
    """The payloads of one decode call (or codec server request) would inflate past their total budget."""


class DecodeBudget:
    """What is left to inflate for one decode call or one codec server request."""

    def __init__(self, total: int = CALL_BUDGET) -> None:
        self.total = total
        self.left = total

    def limit(self, compressed_size: int) -> tuple[int, bool]:
        """How far the next payload may inflate, and whether that limit is this budget's (not the
        payload's own cap)."""
        own = min(MAX_DECODED_BYTES, max(RATIO_FLOOR, MAX_RATIO * compressed_size))
        return (self.left, True) if self.left < own else (own, False)


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


def decode_payload_sync(payload: Payload, budget: DecodeBudget | None = None) -> Payload:
    """The original of a ``binary/zlib`` payload; any other payload unchanged (synchronous, for history
    readers). Raises :class:`PayloadDecodeError` for a compressed payload that does not decode or would
    inflate past its caps, :class:`DecodeBudgetExceeded` past what is left of ``budget`` (which it
    charges; a fresh :class:`DecodeBudget` when None). Never holds more than the limit inflated."""
    if _encoding(payload) != ENCODING:
        return payload
    budget = budget if budget is not None else DecodeBudget()
    size = len(payload.data)
    limit, budget_bound = budget.limit(size)
    if limit <= 0:  # zlib reads a max_length of 0 as "no limit"
        raise DecodeBudgetExceeded(f"{ENCODING} payloads inflate past their total budget of {budget.total} bytes")
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(payload.data, limit)
        over = bool(inflater.unconsumed_tail) or (not inflater.eof and bool(inflater.decompress(b"", 1)))
    except zlib.error as error:
        raise PayloadDecodeError(f"a {ENCODING} payload of {size} bytes is not zlib data ({error})") from None
    if over and budget_bound:
        budget.left = 0  # spent: the rest of the call is refused without inflating anything more
        raise DecodeBudgetExceeded(f"{ENCODING} payloads inflate past their total budget of {budget.total} bytes")
    if over:
        raise PayloadDecodeError(
            f"a {ENCODING} payload of {size} bytes inflates past {limit} bytes"
            f" (at most {MAX_DECODED_BYTES} bytes, {MAX_RATIO} times its size)"
        )
    if not inflater.eof:
        raise PayloadDecodeError(f"a {ENCODING} payload of {size} bytes is truncated")
    budget.left -= len(raw)
    original = Payload()
    try:
        original.ParseFromString(raw)
    except DecodeError as error:
        raise PayloadDecodeError(
            f"a {ENCODING} payload of {size} bytes does not hold a serialized payload ({error})"
        ) from None
    return original


def undecodable_payload(reason: str) -> Payload:
    """The :data:`UNDECODABLE` marker for a payload that did not decode, carrying ``reason``."""
    return Payload(metadata={"encoding": UNDECODABLE.encode()}, data=" ".join(reason.split())[:300].encode())


def undecodable_reason(payload: Payload) -> str | None:
    """Why the codec could not decode the payload this marker replaced; None for any other payload."""
    if _encoding(payload) != UNDECODABLE:
        return None
    return payload.data.decode("utf-8", "replace")


def decode_or_mark(payloads: Sequence[Payload], budget: DecodeBudget | None = None) -> list[Payload]:
    """Every payload decoded, or replaced by an :data:`UNDECODABLE` marker when it does not decode or
    ``budget`` (one fresh :data:`CALL_BUDGET` when None) is spent: never raises, so one hostile payload
    cannot fail the workflow task that carries it."""
    budget = budget if budget is not None else DecodeBudget()
    decoded = []
    for payload in payloads:
        try:
            decoded.append(decode_payload_sync(payload, budget))
        except PayloadDecodeError as error:
            decoded.append(undecodable_payload(str(error)))
        except Exception as error:  # whatever else a crafted payload provokes must not fail the task either
            decoded.append(undecodable_payload(f"a {ENCODING} payload does not decode ({type(error).__name__})"))
    return decoded


class CaseCompressionCodec(PayloadCodec):
    """zlib for payloads of at least ``threshold`` bytes (:func:`encode_payload`); decoding passes
    through anything not ``binary/zlib`` and marks what does not decode (:func:`decode_or_mark`, one
    :data:`CALL_BUDGET` per call).

    A payload whose serialized ``Payload`` message is at least :data:`COMPRESS_AT` bytes is replaced
    by a payload with metadata ``encoding: binary/zlib`` whose data is the zlib-compressed serialized
    original (metadata included, as the Temporal samples' encryption codec wraps a payload), when that
    is smaller. Everything else is left as it is, so what a reviewer sends and reads with the Temporal
    CLI (a review, the ``status``, ``proposal``, ``events`` and ``budgets`` queries, the memo, the
    summaries) stays readable. Decoding passes through every payload that is not ``binary/zlib``, so
    histories written before the codec replay unchanged and a payload someone sent as plain JSON (the
    CLI, the Web UI) reads as before.

    Inflating is bounded: a payload inflates to at most :data:`MAX_DECODED_BYTES` and at most
    :data:`MAX_RATIO` times its compressed size (never below :data:`RATIO_FLOOR`), and one decode call
    (all the payloads of one signal, update, query, activity result or start input) to at most
    :data:`CALL_BUDGET` in all. In a worker the codec never raises: a compressed payload it cannot
    decode becomes an :data:`UNDECODABLE` marker that no type converts to, so the workflow records it
    as a malformed review instead of failing its workflow task (which would wedge the case: every retry
    fails the same way). History readers and the codec server use :func:`decode_payload_sync`, which
    raises :class:`PayloadDecodeError` in one line.
    """

    def __init__(self, threshold: int = COMPRESS_AT, level: int = LEVEL) -> None:
        self.threshold = threshold
        self.level = level

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [encode_payload(p, threshold=self.threshold, level=self.level) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return decode_or_mark(payloads)


class HistoryPayloadConverter:
    """What history readers (``case_history.trail``) decode payloads with: the case codec's decoding,
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

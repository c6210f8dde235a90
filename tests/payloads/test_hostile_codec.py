"""Hostile ``binary/zlib`` payloads against the case codec itself: junk and bombs become a marker that no
type converts to (never an exception that would fail a workflow task), a bomb is never inflated past its
caps (measured with tracemalloc), and one decode call is held to its total budget. The workflow's side
(``decode_review``) names the codec's reason. Real worker and server: tests/e2e/test_hostile_payloads.py."""

from __future__ import annotations

import random
import tracemalloc
import zlib

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.credentials import SignedReview
from contracts.payload_codec import (
    CALL_BUDGET,
    CASE_CODEC,
    CASE_DATA_CONVERTER,
    ENCODING,
    MAX_DECODED_BYTES,
    MAX_RATIO,
    UNDECODABLE,
    DecodeBudget,
    DecodeBudgetExceeded,
    PayloadDecodeError,
    decode_payload_sync,
    encode_payload,
    undecodable_reason,
)
from workflows.approval_gate import decode_review

MiB = 1024 * 1024


def _compressed(data: bytes) -> Payload:
    return Payload(metadata={"encoding": ENCODING.encode()}, data=data)


def _bomb(inflated: int) -> Payload:
    """A ``binary/zlib`` payload of a serialized payload with ``inflated`` zero bytes of data."""
    original = Payload(metadata={"encoding": b"json/plain"}, data=b"\x00" * inflated)
    return _compressed(zlib.compress(original.SerializeToString(), 9))


AB = bytes(b"ab"[byte & 1] for byte in range(256))
"""Maps random bytes to random ``a``s and ``b``s: one bit of entropy per byte."""


def _moderate(inflated: int, seed: int) -> Payload:
    """A legitimate-looking compressed payload that compresses about 4.5 times (under the ratio cap).
    zlib's fastest level: the codec reads any level, and these megabytes are made in milliseconds."""
    text = random.Random(seed).randbytes(inflated).translate(AB)
    payload = encode_payload(Payload(metadata={"encoding": b"json/plain"}, data=text), level=1)
    assert payload.metadata["encoding"] == ENCODING.encode()
    assert len(text) / len(payload.data) < MAX_RATIO
    return payload


JUNK = _compressed(b"not zlib at all")  # 15 bytes of text
BOMB = _bomb(16 * MiB)  # about 16 KB that would inflate to 16 MiB


def test_the_bombs_are_what_the_issue_describes() -> None:
    assert len(JUNK.data) == 15
    assert 10_000 < len(BOMB.data) < 20_000


async def test_junk_and_a_bomb_decode_to_the_marker_never_an_exception() -> None:
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'{"a": 1}')
    junk, bomb, same = await CASE_CODEC.decode([JUNK, BOMB, plain])
    assert same is plain
    for marker, says in ((junk, "is not zlib data"), (bomb, "inflates past")):
        assert marker.metadata["encoding"] == UNDECODABLE.encode()
        reason = undecodable_reason(marker)
        assert reason is not None and says in reason and "\n" not in reason and len(reason) <= 300
    assert undecodable_reason(plain) is None


async def test_no_type_converts_the_marker() -> None:
    [marker] = await CASE_CODEC.decode([JUNK])
    for type_hint in (dict, SignedReview, str):
        with pytest.raises(Exception, match=UNDECODABLE):
            pydantic_data_converter.payload_converter.from_payload(marker, type_hint)
    with pytest.raises(Exception, match=UNDECODABLE):
        await CASE_DATA_CONVERTER.decode([JUNK], [dict])


async def test_the_workflow_reads_the_marker_as_a_malformed_review_with_the_reason() -> None:
    converter = pydantic_data_converter.payload_converter
    for hostile, says in ((JUNK, "is not zlib data"), (BOMB, "inflates past")):
        [marker] = await CASE_CODEC.decode([hostile])
        problem = decode_review(converter, marker)
        assert isinstance(problem, str) and problem.startswith("(undecodable): ") and says in problem


def test_a_bomb_is_never_inflated_past_its_ratio_cap() -> None:
    tracemalloc.start()
    try:
        with pytest.raises(PayloadDecodeError, match="inflates past") as raised:
            decode_payload_sync(BOMB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MiB, peak  # the old cap inflated it to 16 MiB before refusing
    assert f"{MAX_RATIO} times its size" in str(raised.value)


def test_a_payload_is_capped_at_4_mib_even_within_the_ratio() -> None:
    assert 4 * MiB == MAX_DECODED_BYTES
    with pytest.raises(PayloadDecodeError, match=f"inflates past {MAX_DECODED_BYTES} bytes"):
        decode_payload_sync(_moderate(MAX_DECODED_BYTES + 1024, seed=1))
    ok = _moderate(MAX_DECODED_BYTES - 1024, seed=2)
    assert len(decode_payload_sync(ok).data) == MAX_DECODED_BYTES - 1024


async def test_one_decode_call_is_held_to_its_total_budget() -> None:
    payloads = [_moderate(3 * MiB, seed=seed) for seed in range(6)]  # 18 MiB in all, each under its own caps
    budget = DecodeBudget()
    for payload in payloads[:5]:
        decode_payload_sync(payload, budget)
    assert 0 < budget.left <= CALL_BUDGET - 5 * 3 * MiB  # each charged its serialized size
    with pytest.raises(DecodeBudgetExceeded, match=f"total budget of {CALL_BUDGET} bytes"):
        decode_payload_sync(payloads[5], budget)
    decoded = await CASE_CODEC.decode(payloads)
    assert [len(p.data) for p in decoded[:5]] == [3 * MiB] * 5
    assert undecodable_reason(decoded[5]) is not None and "total budget" in str(undecodable_reason(decoded[5]))
    small = encode_payload(Payload(metadata={"encoding": b"json/plain"}, data=b"a" * 8192))
    assert undecodable_reason((await CASE_CODEC.decode([*payloads, small]))[-1]) is not None  # spent stays spent
    # the next call has a budget of its own
    assert len((await CASE_CODEC.decode(payloads[5:]))[0].data) == 3 * MiB


def test_a_spent_budget_never_means_no_limit() -> None:
    budget = DecodeBudget(0)
    with pytest.raises(DecodeBudgetExceeded):
        decode_payload_sync(BOMB, budget)

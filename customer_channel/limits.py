"""The channel's limits: requests per verified customer (an in-memory token bucket per subject and
kind) and the size of a request body (refused before it is parsed).

The buckets live in this process: several channel processes behind one balancer each count on their
own (the case's own limits, :data:`contracts.conversation.MIN_MESSAGE_INTERVAL_SECONDS` and
:data:`~contracts.conversation.MAX_PENDING_MESSAGES`, hold whatever the channel counts).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request

MAX_TRACKED = 10_000
"""Buckets kept at most; the least recently used is forgotten first (a forgotten bucket is full)."""


class BodyTooLarge(Exception):
    """A request body over the limit: not read further, never parsed."""


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class RateLimiter:
    """``per_minute`` requests a minute for each key, in bursts of up to ``per_minute``."""

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute < 1:
            raise ValueError("per_minute must be at least 1")
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def take(self, key: str) -> int:
        """Take one request for ``key``: 0 when allowed, else the whole seconds to wait (at least 1)."""
        now = self.clock()
        bucket = self._buckets.pop(key, None) or _Bucket(self.capacity, now)
        bucket.tokens = min(self.capacity, bucket.tokens + (now - bucket.stamp) * self.rate)
        bucket.stamp = now
        self._buckets[key] = bucket
        while len(self._buckets) > MAX_TRACKED:
            self._buckets.popitem(last=False)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0
        return max(1, math.ceil((1.0 - bucket.tokens) / self.rate))


async def bounded_body(request: Request, limit: int) -> bytes:
    """The request's body, refused (:class:`BodyTooLarge`) as soon as it is known to exceed ``limit``
    bytes: by its ``Content-Length``, else while it streams in."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise BodyTooLarge
    received = bytearray()
    async for chunk in request.stream():
        received += chunk
        if len(received) > limit:
            raise BodyTooLarge
    return bytes(received)

"""One HTTP(S) GET with a total deadline and a byte cap: how the outside issuer's key set and an https
support directory are fetched.

A socket timeout bounds each read, not the request: a server that trickles a byte every few seconds
never trips it, and ``read()`` takes whatever length it is sent. :func:`fetch_bounded` instead

* gives the whole request (connect, TLS, headers, body, redirects) one deadline: the caller waits in
  another thread for at most ``deadline_seconds`` and is then refused with :class:`FetchTooSlow`; the
  connection's socket is shut down at that moment, so the abandoned fetch ends too (it also checks the
  deadline between reads, and no single read outlasts the socket timeout, which is the deadline);
* streams the body in reads of at most 64 KiB and stops at ``max_bytes + 1`` with
  :class:`FetchTooLarge`, so at most that much is ever held, whatever ``Content-Length`` says or
  whether it is there (a declared length over the cap is refused before any of the body is read).

Anything else (a refused connection, an HTTP error status, a broken response) is raised as urllib and
http.client raise it: :class:`OSError` (``URLError`` and ``HTTPError`` are ones) or
:class:`http.client.HTTPException`. Callers turn each into their own typed, one-line error.
"""

from __future__ import annotations

import contextlib
import http.client
import math
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

__all__ = ["FetchRefused", "FetchTooLarge", "FetchTooSlow", "fetch_bounded"]

READ_CHUNK_BYTES = 64 * 1024


class FetchRefused(Exception):
    """The fetch was stopped on purpose; ``str()`` is one line saying why."""


class FetchTooSlow(FetchRefused):
    """The whole request did not finish within its deadline."""


class FetchTooLarge(FetchRefused):
    """The body is (or says it is) over the byte cap."""


class _Watch:
    """The sockets of one fetch, shut down when its deadline passes (the blocked read then returns)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._expired = False

    @property
    def expired(self) -> bool:
        return self._expired or time.monotonic() >= self.deadline

    def remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.001)

    def attach(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            expired = self._expired
        if expired:
            _shut(sock)

    def expire(self) -> None:
        with self._lock:
            self._expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed, or never connected: nothing left to wake
        sock.shutdown(socket.SHUT_RDWR)


def _watched(base: type[http.client.HTTPConnection], watch: _Watch) -> Any:
    """``base`` whose connected socket (after TLS, for https) is handed to ``watch``."""

    class Watched(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            watch.attach(self.sock)

    return Watched


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, watch: _Watch) -> None:
        super().__init__()
        self._watch = watch

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPConnection, self._watch), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, watch: _Watch) -> None:
        super().__init__()
        self._watch = watch

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPSConnection, self._watch), req)


class _NoRedirectHandler(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as the error status it is (as PyJWT's own key set client does)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def fetch_bounded(
    url: str,
    *,
    deadline_seconds: float,
    max_bytes: int,
    headers: Mapping[str, str] | None = None,
    follow_redirects: bool = True,
) -> bytes:
    """The body ``url`` answers a GET with, read within ``deadline_seconds`` in all and at most
    ``max_bytes`` long; :class:`FetchTooSlow` or :class:`FetchTooLarge` otherwise (see the module docs)."""
    if not (math.isfinite(deadline_seconds) and deadline_seconds > 0) or max_bytes < 0:
        raise ValueError("fetch_bounded needs a positive, finite deadline and a byte cap of 0 or more")
    watch = _Watch(time.monotonic() + deadline_seconds)
    outcome: list[tuple[bytes | None, BaseException | None]] = []

    def fetch() -> None:
        try:
            outcome.append((_fetch(url, watch, deadline_seconds, max_bytes, headers, follow_redirects), None))
        except BaseException as error:  # handed to the caller, who raises it
            outcome.append((None, error))

    worker = threading.Thread(target=fetch, name="bounded-fetch", daemon=True)
    worker.start()
    worker.join(deadline_seconds)
    if not outcome:
        watch.expire()  # wakes the abandoned fetch: its read returns and it ends
        raise FetchTooSlow(f"no complete answer within {deadline_seconds:g} s")
    body, error = outcome[0]
    if error is not None:
        if watch.expired and not isinstance(error, FetchTooLarge):
            raise FetchTooSlow(f"no complete answer within {deadline_seconds:g} s") from None
        raise error
    assert body is not None
    return body


def _fetch(
    url: str,
    watch: _Watch,
    deadline_seconds: float,
    max_bytes: int,
    headers: Mapping[str, str] | None,
    follow_redirects: bool,
) -> bytes:
    handlers: list[Any] = [_HTTPHandler(watch), _HTTPSHandler(watch)]
    if not follow_redirects:
        handlers.append(_NoRedirectHandler())
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        response = opener.open(request, timeout=deadline_seconds)
    except urllib.error.HTTPError as error:
        error.close()  # its body is never read
        raise
    with response:
        declared = response.headers.get("Content-Length", "").strip()
        if declared.isascii() and declared.isdigit() and int(declared) > max_bytes:
            raise FetchTooLarge(f"the answer says it is {int(declared)} bytes, over the {max_bytes}-byte limit")
        body = bytearray()
        while True:
            if watch.expired:
                raise FetchTooSlow(f"no complete answer within {deadline_seconds:g} s")
            chunk = response.read1(min(READ_CHUNK_BYTES, max_bytes + 1 - len(body)))
            if not chunk:
                break
            body += chunk
            if len(body) > max_bytes:
                raise FetchTooLarge(f"the answer is over the {max_bytes}-byte limit")
    if watch.expired:  # the read ended because the deadline shut the socket, not at the end of the body
        raise FetchTooSlow(f"no complete answer within {deadline_seconds:g} s")
    return bytes(body)

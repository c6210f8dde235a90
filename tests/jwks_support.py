"""A key set served over real local HTTP, as an identity provider's JWKS URL serves it."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class JwksServer:
    """The served key set's URL and the paths requested of it so far."""

    url: str
    server: ThreadingHTTPServer
    requests: list[str] = field(default_factory=list)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def serve_jwks(jwks: dict[str, Any]) -> Iterator[JwksServer]:
    """Serve ``jwks`` at ``http://127.0.0.1:<port>/jwks`` until the block ends (or ``stop()``)."""
    body = json.dumps(jwks).encode()
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    running = JwksServer(url=f"http://127.0.0.1:{server.server_address[1]}/jwks", server=server, requests=requests)
    try:
        yield running
    finally:
        if thread.is_alive():
            running.stop()
        thread.join(timeout=5)


@dataclass
class RawServer:
    """A server that answers with raw bytes as a misbehaving identity provider would: ``sent`` counts the
    bytes its handler has written so far, ``finished`` is set once the handler stopped writing (the
    answer ran out or the client went away)."""

    url: str
    total: int
    sent: list[int]
    finished: threading.Event


@contextmanager
def serve_raw(chunks: list[bytes], *, pause: float = 0.0, tls: ssl.SSLContext | None = None) -> Iterator[RawServer]:
    """Answer every GET at ``http://127.0.0.1:<port>/jwks`` with ``chunks`` written one by one, status
    line and headers included, ``pause`` seconds apart: a trickle with one-byte chunks, a flood with
    large ones. The handler stops at the first write that fails, and when the block ends. With ``tls``
    (a server context) the URL is ``https://``."""
    stop = threading.Event()
    finished = threading.Event()
    sent = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            try:
                for index, chunk in enumerate(chunks):
                    if stop.is_set() or (index and pause and stop.wait(pause)):
                        return
                    self.wfile.write(chunk)
                    sent[0] += len(chunk)
            except OSError:  # the client hung up: what it refused is not sent
                self.close_connection = True
            finally:
                finished.set()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    url = f"{'https' if tls is not None else 'http'}://127.0.0.1:{server.server_address[1]}/jwks"
    try:
        yield RawServer(url=url, total=sum(map(len, chunks)), sent=sent, finished=finished)
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def http_head(*, content_length: int | None = None, chunked: bool = False) -> bytes:
    """A 200 status line and headers for a JSON answer (no length: the body ends when the connection does)."""
    lines = ["HTTP/1.1 200 OK", "Content-Type: application/json", "Connection: close"]
    if content_length is not None:
        lines.append(f"Content-Length: {content_length}")
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()

"""A key set served over real local HTTP, as an identity provider's JWKS URL serves it."""

from __future__ import annotations

import json
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

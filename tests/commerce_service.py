"""The commerce server as its own service for tests: ``python -m commerce_server --http`` on loopback.

One launcher for every test that needs the service (the HTTP-commerce e2e tests, the cluster test, the
tracing test): a free port, a fresh token secret, no ``COMMERCE_DATABASE_URL`` and no ``OTEL_*`` from
the test's own environment unless given, and a wait until the port answers. Stopping it stays with the
caller, which knows whether it started its own process group.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from commerce_server.tokens import TOKEN_SECRET_ENV
from contracts.errors import ConfigurationError
from devstack.servers import free_port, wait_for_port

PROJECT_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class HttpCommerce:
    process: subprocess.Popen
    url: str
    secret: str
    state_dir: Path


def start_http_commerce(
    state_dir: Path,
    *,
    database_url: str | None = None,
    env: dict[str, str] | None = None,
    stdout: int | IO[bytes] | IO[str] = subprocess.DEVNULL,
    stderr: int | IO[bytes] | None = subprocess.DEVNULL,
    new_session: bool = False,
) -> HttpCommerce:
    """Start the service with its state dir (SQLite there unless ``database_url``) and ``env`` added to
    a copy of this process's environment; return once its port answers. A service that never answers
    is killed and the wait's :class:`ConfigurationError` raised."""
    state_dir.mkdir(parents=True, exist_ok=True)
    port, secret = free_port(), secrets.token_urlsafe(32)
    environ = {k: v for k, v in os.environ.items() if k != "COMMERCE_DATABASE_URL" and not k.startswith("OTEL_")}
    environ |= {TOKEN_SECRET_ENV: secret, **(env or {})}
    argv = [sys.executable, "-m", "commerce_server", "--http", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--state-dir", str(state_dir), "--log-level", "WARNING"]
    argv += ["--database-url", database_url] if database_url else []
    process = subprocess.Popen(
        argv,
        cwd=PROJECT_ROOT,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        start_new_session=new_session,
    )
    try:
        wait_for_port("127.0.0.1", port, timeout=60, process=process)
    except ConfigurationError:
        process.kill()
        process.wait(timeout=10)
        raise
    return HttpCommerce(process, f"http://127.0.0.1:{port}/mcp", secret, state_dir)

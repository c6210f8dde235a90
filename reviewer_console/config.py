"""The console's settings: its origin decides the WebAuthn relying party (its host) and whether the
session cookie is ``Secure`` (served over https)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from contracts.errors import ConfigurationError
from keystore.enrollment import DEFAULT_CONSOLE_ORIGIN
from reviewer_console.codes import ConsoleErrorCode

DEFAULT_ORIGIN = DEFAULT_CONSOLE_ORIGIN
RP_NAME = "Qinghe reviewer console (fictional)"


@dataclass(frozen=True)
class ConsoleConfig:
    origin: str
    """``scheme://host[:port]``, exactly as the browser reports it in ``clientDataJSON``."""
    rp_id: str
    secure: bool
    start_hint: str = "start the worker: python worker.py"

    @classmethod
    def for_origin(cls, origin: str) -> ConsoleConfig:
        """The settings for ``origin``; a configuration error names a bad one (WebAuthn needs https, or
        http on ``localhost``: a secure context)."""
        parts = urlsplit(origin)
        host = parts.hostname or ""
        if parts.scheme not in ("http", "https") or not host or parts.path not in ("", "/") or parts.query:
            raise ConfigurationError(
                ConsoleErrorCode.CONSOLE_ORIGIN_INVALID, f"--origin {origin!r} is not scheme://host[:port]."
            )
        if parts.scheme == "http" and host != "localhost" and not host.endswith(".localhost"):
            raise ConfigurationError(
                ConsoleErrorCode.CONSOLE_ORIGIN_INSECURE,
                f"--origin {origin!r}: passkeys need https, or http on localhost (a browser's secure context).",
            )
        port = f":{parts.port}" if parts.port else ""
        return cls(origin=f"{parts.scheme}://{host}{port}", rp_id=host, secure=parts.scheme == "https")

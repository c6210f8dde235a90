"""The channel's settings: its limits, and whether the demo sign-in is on."""

from __future__ import annotations

from dataclasses import dataclass

MAX_BODY_BYTES = 16 * 1024
"""A request body over this is refused before it is parsed."""
MESSAGES_PER_MINUTE = 20
"""Conversations started and messages sent, per verified customer."""
READS_PER_MINUTE = 120
"""Transcript reads and progress streams opened, per verified customer."""
KEEP_ALIVE_SECONDS = 15.0
"""A comment on an idle progress stream this often, so that proxies keep it open."""
REPLY_WAIT_SECONDS = 5.0
"""How long starting a conversation waits for its first reply before it answers without it."""


@dataclass(frozen=True)
class ChannelConfig:
    demo_sign_in: bool = False
    """Serve ``/demo/*`` (a customer of the demo directory signs in by name): only with ``--demo-sign-in``."""
    max_body_bytes: int = MAX_BODY_BYTES
    messages_per_minute: int = MESSAGES_PER_MINUTE
    reads_per_minute: int = READS_PER_MINUTE
    keep_alive_seconds: float = KEEP_ALIVE_SECONDS
    reply_wait_seconds: float = REPLY_WAIT_SECONDS

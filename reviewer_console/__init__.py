"""The reviewer console: a small server-rendered web app where a reviewer of one tenant sees the
refunds waiting for them and approves or rejects one with a passkey (WebAuthn), the assertion bound to
the exact proposal (case id, digest, decision, a fresh nonce).

``python -m reviewer_console`` serves it; :func:`build_app` builds it for a test. The console holds
no private key: it reads the directory (and writes a newly enrolled passkey's public key into it),
reads cases through Temporal as the signed-in reviewer, and forwards the reviewer's assertion as the
case's ``review`` update, which the workflow verifies and the commerce server verifies again.
"""

from reviewer_console.app import build_app
from reviewer_console.config import DEFAULT_ORIGIN, ConsoleConfig
from reviewer_console.store import ConsoleStore

__all__ = ["DEFAULT_ORIGIN", "ConsoleConfig", "ConsoleStore", "build_app"]

"""The commerce server's own keys: the public key set it checks approvals with, and its receipt key.

The commerce server trusts no one's word that a reviewer approved: it reads its own copy of the
public key set (``COMMERCE_PUBLIC_KEYS``: a JWKS file path or an https URL; default
``<state dir>/keys/public-keys.json``, the file ``starter.py init`` writes) and signs each receipt
with its own private key (``COMMERCE_SIGNING_KEY``: a PEM file readable by its owner only; default
``<state dir>/keys/commerce.pem``). Both are read on the first refund, not at start-up, so a server
that only answers reads runs without them; once read they are kept for the life of the process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from commerce_server.tokens import PUBLIC_KEYS_ENV, SIGNING_KEY_ENV
from contracts.credentials import COMMERCE_KID, PublicKeys
from contracts.errors import CommerceErrorCode, ConfigurationError, SupportError
from keystore import load_private_key, load_public_keys, private_key_path, public_keys_location

_T = TypeVar("_T")

KEYS_UNAVAILABLE = CommerceErrorCode.COMMERCE_KEYS_UNAVAILABLE
"""The one code a refund gets when the server cannot read its keys (a configuration error)."""


class CommerceKeys:
    """Where the commerce server's keys are, and the keys once read (thread-safe, read once)."""

    def __init__(self, public_keys_location: str, signing_key_path: Path) -> None:
        self.public_keys_location = public_keys_location
        self.signing_key_path = Path(signing_key_path)
        self._lock = threading.Lock()
        self._public: PublicKeys | None = None
        self._signing: Ed25519PrivateKey | None = None

    @classmethod
    def from_environment(
        cls, state_dir: str | Path = ".state", environ: Mapping[str, str] = os.environ
    ) -> CommerceKeys:
        """``COMMERCE_PUBLIC_KEYS`` and ``COMMERCE_SIGNING_KEY``, else the demo keys under ``state_dir``."""
        location = public_keys_location(Path(state_dir), environ, env=PUBLIC_KEYS_ENV)
        signing = environ.get(SIGNING_KEY_ENV) or str(private_key_path(Path(state_dir), COMMERCE_KID))
        return cls(location, Path(signing))

    def public_keys(self) -> PublicKeys:
        """The public key set approvals are checked with; a :class:`ConfigurationError` if unreadable."""
        with self._lock:
            if self._public is None:
                self._public = _configured(
                    lambda: load_public_keys(self.public_keys_location),
                    f"the public key set at {self.public_keys_location}",
                    PUBLIC_KEYS_ENV,
                )
            return self._public

    def signing_key(self) -> Ed25519PrivateKey:
        """The private key receipts are signed with; a :class:`ConfigurationError` if unreadable."""
        with self._lock:
            if self._signing is None:
                self._signing = _configured(
                    lambda: load_private_key(self.signing_key_path),
                    f"the receipt signing key at {self.signing_key_path}",
                    SIGNING_KEY_ENV,
                )
            return self._signing


def _configured(load: Callable[[], _T], what: str, env: str) -> _T:
    """Run ``load``; any failure to read a key becomes one configuration error with one clear line."""
    try:
        return load()
    except SupportError as error:
        raise ConfigurationError(KEYS_UNAVAILABLE, f"{error.code}: {error.message} (set by {env})") from None
    except (OSError, ValueError, TypeError) as error:
        raise ConfigurationError(
            KEYS_UNAVAILABLE, f"The commerce server cannot read {what} (set by {env}): {type(error).__name__}."
        ) from None

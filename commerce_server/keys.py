"""The commerce server's own keys: the directory it checks approvals with, and its receipt key.

The commerce server trusts no one's word that a reviewer approved: it reads its own copy of the
support directory (``COMMERCE_DIRECTORY``: a file path or an https URL; default
``<state dir>/keys/directory.json``, the file ``starter.py init`` writes), reloaded when the file
changes (an https URL every :data:`keystore.directory_file.URL_CACHE_SECONDS`), so a removed or
re-keyed reviewer is refused from the next refund on. It signs each receipt with its own private key
(``COMMERCE_SIGNING_KEY``: a PEM file readable by its owner only; default
``<state dir>/keys/commerce.pem``), read on the first refund and kept for the life of the process.
Applicant tokens of an outside identity provider are checked as ``SUPPORT_APPLICANT_*`` configure
(:mod:`keystore.outside_issuer`), as the worker does.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from commerce_server.tokens import DIRECTORY_ENV, SIGNING_KEY_ENV
from contracts.credentials import COMMERCE_KID, PublicKeys, key_set
from contracts.directory import Directory
from contracts.errors import CommerceErrorCode, ConfigurationError, SupportError
from keystore import directory_location, load_private_key, private_key_path
from keystore.directory_file import DirectorySource
from keystore.outside_issuer import OutsideIssuer

_T = TypeVar("_T")

KEYS_UNAVAILABLE = CommerceErrorCode.COMMERCE_KEYS_UNAVAILABLE
"""The one code a refund gets when the server cannot read its keys (a configuration error)."""


class CommerceKeys:
    """Where the commerce server's keys are, and the keys once read (thread-safe, read once)."""

    def __init__(
        self, directory_location: str, signing_key_path: Path, environ: Mapping[str, str] = os.environ
    ) -> None:
        self.directory_location = directory_location
        self.signing_key_path = Path(signing_key_path)
        self._source = DirectorySource(directory_location)
        self._environ = dict(environ)
        self._lock = threading.Lock()
        self._signing: Ed25519PrivateKey | None = None
        self._issuer: tuple[OutsideIssuer | None] | None = None

    @classmethod
    def from_environment(
        cls, state_dir: str | Path = ".state", environ: Mapping[str, str] = os.environ
    ) -> CommerceKeys:
        """``COMMERCE_DIRECTORY`` and ``COMMERCE_SIGNING_KEY``, else the demo files under ``state_dir``."""
        location = directory_location(Path(state_dir), environ, env=DIRECTORY_ENV)
        signing = environ.get(SIGNING_KEY_ENV) or str(private_key_path(Path(state_dir), COMMERCE_KID))
        return cls(location, Path(signing), environ)

    def directory(self) -> Directory:
        """The directory as its file (or URL) holds it now; a :class:`ConfigurationError` if unreadable."""
        return _configured(self._source.current, f"the directory at {self.directory_location}", DIRECTORY_ENV)

    def public_keys(self) -> PublicKeys:
        """The directory's public keys (the commerce key among them)."""
        return key_set(self.directory())

    def applicant_issuer(self) -> OutsideIssuer | None:
        """The outside issuer of applicant tokens, if ``SUPPORT_APPLICANT_JWKS_URL`` names one."""
        with self._lock:
            if self._issuer is None:
                self._issuer = (OutsideIssuer.from_environment(self._environ),)
            return self._issuer[0]

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

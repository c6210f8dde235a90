"""Key files: the demo key pairs ``starter.py init`` creates, and the public key set everyone reads.

Private keys are PEM files readable by their owner only (0600, in a 0700 folder); a key file anyone
else may read is refused, never used. The public key set is a JWKS file (or an https URL) that the
workflow (through an activity), the commerce server and ``starter.py verify`` read; it never holds a
private key. In production each person and service keeps its own private key and only the public
key set is shared: point ``SUPPORT_PUBLIC_KEYS`` (and the commerce server's
``COMMERCE_PUBLIC_KEYS``) at it. The worker holds no private key at all.
"""

from __future__ import annotations

import json
import os
import stat
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jwt.algorithms import OKPAlgorithm

from contracts.credentials import ALGORITHM, COMMERCE_KID, ISSUER_KID, PublicKeys, reviewer_kid
from contracts.errors import ConfigurationError
from contracts.identity import PROFILES, Role

PUBLIC_KEYS_ENV = "SUPPORT_PUBLIC_KEYS"
PUBLIC_KEYS_FILE = "public-keys.json"
DEMO_SIGNERS = [ISSUER_KID, COMMERCE_KID] + [
    reviewer_kid(identity.subject) for identity in PROFILES.values() if identity.role is Role.REVIEWER
]


def keys_dir(state_dir: Path) -> Path:
    return Path(state_dir) / "keys"


def private_key_path(state_dir: Path, kid: str) -> Path:
    """``issuer.pem``, ``commerce.pem``, ``reviewer-chen.pem``."""
    return keys_dir(state_dir) / f"{kid.replace(':', '-')}.pem"


def public_jwk(private_key: Ed25519PrivateKey, kid: str) -> dict[str, Any]:
    jwk: dict[str, Any] = json.loads(OKPAlgorithm.to_jwk(private_key.public_key()))
    return {**jwk, "kid": kid, "alg": ALGORITHM, "use": "sig"}


def create_demo_keys(state_dir: Path) -> list[str]:
    """Create the demo key pairs that do not exist yet and (re)write the public key set from all of
    them. Returns the kids created now."""
    folder = keys_dir(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    created: list[str] = []
    public: list[dict[str, Any]] = []
    for kid in DEMO_SIGNERS:
        path = private_key_path(state_dir, kid)
        if path.exists():
            key = load_private_key(path)
        else:
            key = Ed25519PrivateKey.generate()
            pem = key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(pem)
            created.append(kid)
        public.append(public_jwk(key, kid))
    temporary = folder / f".{PUBLIC_KEYS_FILE}.tmp"
    temporary.write_text(json.dumps({"keys": public}, indent=2) + "\n", encoding="utf-8")
    temporary.replace(folder / PUBLIC_KEYS_FILE)
    return created


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """An Ed25519 private key from a PEM file that only its owner can read; else a configuration error."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ConfigurationError(
            "signing_key_missing", f"No private key at {path}; run `starter.py init` for demo keys."
        ) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigurationError(
            "signing_key_exposed", f"{path} is readable by others (mode {stat.filemode(mode)}); chmod 600 it."
        )
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigurationError("signing_key_invalid", f"{path} is not an Ed25519 private key.")
    return key


def public_keys_location(
    state_dir: Path, environ: Mapping[str, str] = os.environ, *, env: str = PUBLIC_KEYS_ENV
) -> str:
    return environ.get(env) or str(keys_dir(state_dir) / PUBLIC_KEYS_FILE)


def load_public_keys(location: str) -> PublicKeys:
    """The public key set at a file path or an https URL; a missing or malformed one is a configuration
    error, and a set that holds any private key is refused."""
    try:
        if location.startswith("https://"):
            with urllib.request.urlopen(location, timeout=10) as response:
                text = response.read().decode("utf-8")
        else:
            text = Path(location).read_text(encoding="utf-8")
        data = json.loads(text)
    except FileNotFoundError:
        raise ConfigurationError(
            "public_keys_missing", f"No public key set at {location}; run `starter.py init` for demo keys."
        ) from None
    except (OSError, ValueError) as error:
        raise ConfigurationError(
            "public_keys_unreadable", f"Cannot read the public key set at {location}: {error}."
        ) from None
    keys = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(keys, list) or not all(isinstance(key, dict) for key in keys):
        raise ConfigurationError("public_keys_malformed", f"{location} is not a JSON Web Key Set.")
    if any("d" in key for key in keys):
        raise ConfigurationError("public_keys_hold_a_private_key", f"{location} holds a private key; refused.")
    for key in keys:
        try:
            jwt.PyJWK.from_dict(key, algorithm=ALGORITHM)
        except jwt.exceptions.PyJWKError as error:
            raise ConfigurationError("public_keys_malformed", f"{location}: key {key.get('kid')!r}: {error}.") from None
    return PublicKeys(keys=keys)

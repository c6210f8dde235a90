"""Key files and the directory file: the demo key pairs ``starter.py init`` creates, and the support
directory (tenants, people, their public keys) everyone reads.

Private keys are PEM files readable by their owner only (0600, in a 0700 folder); a key file anyone
else may read is refused, never used. The directory (:mod:`contracts.directory`) is a JSON file or an
https URL that the worker (through an activity), the commerce server and ``starter.py`` each read; it
never holds a private key. In production each person and service keeps its own private key and only
the directory is shared: point ``SUPPORT_DIRECTORY`` (and the commerce server's
``COMMERCE_DIRECTORY``) at it. The worker holds no private key at all.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jwt.algorithms import OKPAlgorithm

from contracts.directory import COMMERCE_KID, ISSUER_KID, KEY_ALGORITHM, Directory, Person
from contracts.errors import ConfigurationError
from contracts.identity import Identity, Role
from keystore.codes import KeystoreErrorCode
from keystore.directory_file import DIRECTORY_ENV, DIRECTORY_FILE, load_directory, write_directory

__all__ = [
    "DEMO_DIRECTORY_PATH",
    "DIRECTORY_ENV",
    "DIRECTORY_FILE",
    "SERVICE_SIGNERS",
    "create_demo_directory",
    "create_key_pair",
    "demo_identity",
    "directory_identity",
    "directory_location",
    "keys_dir",
    "load_directory",
    "load_private_key",
    "private_key_path",
    "public_jwk",
    "reviewer_kid",
    "write_directory",
]

DEMO_DIRECTORY_PATH = Path(__file__).with_name("demo-directory.json")
"""The demo's tenants and people (data, no keys): what ``starter.py init`` starts a directory from."""
SERVICE_SIGNERS = (ISSUER_KID, COMMERCE_KID)


def reviewer_kid(subject: str, generation: int = 1) -> str:
    """The kid of a reviewer's demo key: ``reviewer:chen``, after a rotation ``reviewer:chen:2``."""
    return f"reviewer:{subject}" if generation == 1 else f"reviewer:{subject}:{generation}"


def keys_dir(state_dir: Path) -> Path:
    return Path(state_dir) / "keys"


def directory_location(state_dir: Path, environ: Mapping[str, str] = os.environ, *, env: str = DIRECTORY_ENV) -> str:
    """``env`` when set, else ``<state dir>/keys/directory.json``."""
    return environ.get(env) or str(keys_dir(state_dir) / DIRECTORY_FILE)


def private_key_path(state_dir: Path, kid: str) -> Path:
    """``issuer.pem``, ``commerce.pem``, ``reviewer-chen.pem``, ``reviewer-chen-2.pem``."""
    return keys_dir(state_dir) / f"{kid.replace(':', '-')}.pem"


def public_jwk(private_key: Ed25519PrivateKey, kid: str) -> dict[str, Any]:
    jwk: dict[str, Any] = json.loads(OKPAlgorithm.to_jwk(private_key.public_key()))
    return {**jwk, "kid": kid, "alg": KEY_ALGORITHM, "use": "sig"}


def create_key_pair(state_dir: Path, kid: str) -> tuple[dict[str, Any], bool]:
    """The public JWK of the private key file for ``kid``, creating the file (0600) when it does not
    exist yet; and whether it was created now."""
    folder = keys_dir(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    path = private_key_path(state_dir, kid)
    if path.exists():
        return public_jwk(load_private_key(path), kid), False
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(pem)
    return public_jwk(key, kid), True


def create_demo_directory(state_dir: Path) -> list[str]:
    """Make sure the state dir holds the service key pairs and a directory, and return the kids created
    now. A directory that exists is kept as it is (people added since stay), with any service key it
    lacks added; a new one is the demo's people (``demo-directory.json``), each reviewer with a key."""
    path = keys_dir(state_dir) / DIRECTORY_FILE
    created: list[str] = []
    existing = load_directory(str(path)) if path.exists() else None
    base = existing or Directory.model_validate_json(DEMO_DIRECTORY_PATH.read_text(encoding="utf-8"))
    keys = {str(entry["kid"]): entry for entry in base.keys}
    people: list[Person] = []
    for person in base.people:
        if existing is None and person.role is Role.REVIEWER:
            person = person.model_copy(update={"kids": [reviewer_kid(person.subject)]})
        people.append(person)
    for kid in [*SERVICE_SIGNERS, *(kid for person in people for kid in person.kids)]:
        if kid in keys and existing is not None:
            continue
        jwk, new = create_key_pair(state_dir, kid)
        keys[kid] = jwk
        if new:
            created.append(kid)
    directory = Directory(tenants=base.tenants, people=people, keys=list(keys.values()))
    if directory != existing:
        write_directory(path, directory)
    return created


def directory_identity(state_dir: Path, subject: str) -> Identity:
    """``subject`` as the directory of ``state_dir`` (or ``SUPPORT_DIRECTORY``) lists them."""
    return load_directory(directory_location(Path(state_dir))).identity(subject)


def demo_identity(subject: str) -> Identity:
    """``subject`` as the demo directory (``demo-directory.json``) lists them: for the demo's evaluation,
    benchmarks, scripts and test fixtures, which act as the demo's people."""
    return Directory.model_validate_json(DEMO_DIRECTORY_PATH.read_text(encoding="utf-8")).identity(subject)


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """An Ed25519 private key from a PEM file that only its owner can read; else a configuration error."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ConfigurationError(
            KeystoreErrorCode.SIGNING_KEY_MISSING, f"No private key at {path}; run `starter.py init` for demo keys."
        ) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigurationError(
            KeystoreErrorCode.SIGNING_KEY_EXPOSED,
            f"{path} is readable by others (mode {stat.filemode(mode)}); chmod 600 it.",
        )
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigurationError(KeystoreErrorCode.SIGNING_KEY_INVALID, f"{path} is not an Ed25519 private key.")
    return key

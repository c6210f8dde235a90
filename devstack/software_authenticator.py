"""A software authenticator, a test double: real P-256 keys and real WebAuthn byte layouts, no hardware.

:class:`SoftwareAuthenticator` answers ``navigator.credentials.create`` and ``navigator.credentials.get``
as a browser with a platform authenticator would, in the JSON form browsers give
(``PublicKeyCredential.toJSON()``): client data, authenticator data (rp id hash, flags, sign count,
attested credential data), a ``none`` attestation object and a COSE_Key, all CBOR-encoded by cbor2,
and an ES256 signature over ``authenticatorData || sha256(clientDataJSON)``. Its knobs (``rp_id``,
``origin``, ``user_verified``, ``user_present``, ``cross_origin``) are plain attributes, so a test can
play a phishing page, another relying party or a careless authenticator. It serves the unit and
workflow tests and the history recording (scripts/record_histories.py); the browser console's tests use
Chromium's real virtual authenticator instead. It lives in devstack, beside the throwaway stacks it serves,
so scripts can import it; no product module does.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import struct
from datetime import UTC, datetime
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from contracts.directory import Passkey

FLAG_USER_PRESENT = 0x01
FLAG_USER_VERIFIED = 0x04
FLAG_ATTESTED_CREDENTIAL = 0x40
COSE_ES256 = -7
NO_AAGUID = bytes(16)


def b64url(data: bytes) -> str:
    """Base64url without padding, as WebAuthn's JSON carries bytes."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class SoftwareAuthenticator:
    """One passkey (a P-256 key pair and a random credential id) scoped to ``rp_id``, used on ``origin``."""

    def __init__(self, rp_id: str, origin: str, *, user_verified: bool = True, user_present: bool = True) -> None:
        self.rp_id = rp_id
        self.origin = origin
        self.user_verified = user_verified
        self.user_present = user_present
        self.cross_origin = False
        self.sign_count = 0
        self.credential_id = secrets.token_bytes(32)
        self.user_handle: bytes | None = None
        self._key = ec.generate_private_key(ec.SECP256R1())

    @property
    def credential_id_b64(self) -> str:
        return b64url(self.credential_id)

    def cose_public_key(self) -> bytes:
        """The credential's public key as a COSE_Key (EC2, P-256, ES256)."""
        numbers = self._key.public_key().public_numbers()
        return cbor2.dumps(
            {1: 2, 3: COSE_ES256, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")}
        )

    def register(self, challenge: bytes, user_id: bytes) -> dict[str, Any]:
        """navigator.credentials.create's JSON for ``challenge`` (attestation ``none``)."""
        self.user_handle = user_id
        attested = NO_AAGUID + struct.pack(">H", len(self.credential_id)) + self.credential_id + self.cose_public_key()
        auth_data = self._authenticator_data(extra_flags=FLAG_ATTESTED_CREDENTIAL) + attested
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return {
            "id": self.credential_id_b64,
            "rawId": self.credential_id_b64,
            "type": "public-key",
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
            "response": {
                "clientDataJSON": b64url(self._client_data("webauthn.create", challenge)),
                "attestationObject": b64url(attestation),
                "transports": ["internal"],
            },
        }

    def assert_(self, challenge: bytes) -> dict[str, Any]:
        """navigator.credentials.get's JSON for ``challenge``; the sign count goes up by one."""
        self.sign_count += 1
        client_data = self._client_data("webauthn.get", challenge)
        auth_data = self._authenticator_data()
        signature = self._key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return {
            "id": self.credential_id_b64,
            "rawId": self.credential_id_b64,
            "type": "public-key",
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
            "response": {
                "clientDataJSON": b64url(client_data),
                "authenticatorData": b64url(auth_data),
                "signature": b64url(signature),
                "userHandle": b64url(self.user_handle) if self.user_handle is not None else None,
            },
        }

    def passkey_record(self, *, enrolled_at: datetime | None = None) -> Passkey:
        """The directory's record of this passkey, as enrollment would publish it."""
        return Passkey(
            credential_id=self.credential_id_b64,
            public_key=b64url(self.cose_public_key()),
            rp_id=self.rp_id,
            origin=self.origin,
            enrolled_at=enrolled_at or datetime.now(UTC),
        )

    def _client_data(self, kind: str, challenge: bytes) -> bytes:
        document = {
            "type": kind,
            "challenge": b64url(challenge),
            "origin": self.origin,
            "crossOrigin": self.cross_origin,
        }
        return json.dumps(document, separators=(",", ":")).encode("utf-8")

    def _authenticator_data(self, *, extra_flags: int = 0) -> bytes:
        flags = extra_flags
        flags |= FLAG_USER_PRESENT if self.user_present else 0
        flags |= FLAG_USER_VERIFIED if self.user_verified else 0
        return hashlib.sha256(self.rp_id.encode("utf-8")).digest() + bytes([flags]) + struct.pack(">I", self.sign_count)

"""The WebAuthn server side of the console's three ceremonies, all done by ``webauthn`` (py_webauthn):
enrollment (registration), sign-in (authentication with a discoverable passkey) and a review
(authentication whose challenge is :func:`contracts.passkey.review_challenge` of the exact decision).

The console chooses every challenge and keeps it (:mod:`reviewer_console.store`); the browser's
answer is checked against what was kept, never against what the browser says it was asked. The
review assertion is not judged here: the workflow verifies it (and records a refusal) and the commerce
server verifies it again before it pays. User verification is required of enrollment and sign-in by
the request and by the check here; of a review by the request and by those two verifiers.
"""

from __future__ import annotations

import json
import secrets
from datetime import datetime
from typing import Any

from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
)
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from contracts.approval_claims import CredentialCode
from contracts.case import Decision
from contracts.credentials import CredentialRefused
from contracts.directory import Directory, Passkey, Person
from contracts.identity import Role
from contracts.passkey import ReviewStatement, review_challenge
from reviewer_console.config import RP_NAME, ConsoleConfig

CEREMONY_TIMEOUT_MS = 120_000
NONCE_BYTES = 24
"""A review nonce: 24 random bytes, 32 base64url characters."""


def _descriptors(passkeys: list[Passkey]) -> list[PublicKeyCredentialDescriptor]:
    return [PublicKeyCredentialDescriptor(id=base64url_to_bytes(passkey.credential_id)) for passkey in passkeys]


def registration_options(config: ConsoleConfig, person: Person) -> tuple[dict[str, Any], bytes]:
    """Registration options for ``person`` (user verification required, resident key preferred, their
    enrolled passkeys excluded) and the challenge to keep."""
    challenge = secrets.token_bytes(32)
    options = generate_registration_options(
        rp_id=config.rp_id,
        rp_name=RP_NAME,
        user_name=person.subject,
        user_id=person.subject.encode("utf-8"),
        user_display_name=person.display_name,
        challenge=challenge,
        timeout=CEREMONY_TIMEOUT_MS,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED,
            user_verification=UserVerificationRequirement.REQUIRED,
        ),
        exclude_credentials=_descriptors(list(person.passkeys)),
    )
    return json.loads(options_to_json(options)), challenge


def signin_options(config: ConsoleConfig) -> tuple[dict[str, Any], bytes]:
    """Authentication options for any discoverable passkey of this relying party (UV required)."""
    challenge = secrets.token_bytes(32)
    options = generate_authentication_options(
        rp_id=config.rp_id,
        challenge=challenge,
        timeout=CEREMONY_TIMEOUT_MS,
        user_verification=UserVerificationRequirement.REQUIRED,
    )
    return json.loads(options_to_json(options)), challenge


def passkey_public_key(passkey: Passkey) -> bytes:
    """The COSE public key a :class:`Passkey` publishes (base64url in the directory)."""
    return base64url_to_bytes(passkey.public_key)


def signed_in_reviewer(config: ConsoleConfig, directory: Directory, credential: object, *, challenge: bytes) -> Person:
    """The reviewer whose listed passkey made ``credential`` over ``challenge`` (rp id, origin, user
    present and verified); :class:`CredentialRefused` otherwise, with one sentence."""
    if not isinstance(credential, dict) or not isinstance(credential.get("id"), str):
        raise CredentialRefused(CredentialCode.MALFORMED_CREDENTIAL, "The browser sent no passkey assertion.")
    held = directory.passkey_holder(credential["id"])
    if held is None:
        raise CredentialRefused(CredentialCode.UNKNOWN_PASSKEY, "This passkey is not enrolled for any reviewer.")
    person, passkey = held
    if person.role is not Role.REVIEWER or passkey.rp_id != config.rp_id:
        raise CredentialRefused(
            CredentialCode.UNKNOWN_PASSKEY, "This passkey is not enrolled for a reviewer of this console."
        )
    try:
        verify_authentication_response(
            credential=credential,
            expected_challenge=challenge,
            expected_rp_id=config.rp_id,
            expected_origin=config.origin,
            credential_public_key=passkey_public_key(passkey),
            credential_current_sign_count=0,
            require_user_verification=True,
        )
    except WebAuthnException as error:
        raise CredentialRefused(CredentialCode.PASSKEY_REFUSED, f"The passkey sign-in was refused: {error}.") from None
    return person


def review_statement(*, case_id: str, digest: str, decision: Decision, reviewer: str, now: datetime) -> ReviewStatement:
    """A fresh statement of exactly this decision on exactly this proposal, by the signed-in reviewer."""
    return ReviewStatement(
        case_id=case_id,
        digest=digest,
        decision=decision.value,
        reviewer=reviewer,
        nonce=bytes_to_base64url(secrets.token_bytes(NONCE_BYTES)),
        issued_at=int(now.timestamp()),
    )


def review_options(config: ConsoleConfig, person: Person, statement: ReviewStatement) -> dict[str, Any]:
    """Authentication options whose challenge is the statement's, allowing only the reviewer's passkeys,
    user verification required (the workflow and the commerce server refuse an assertion without it)."""
    options = generate_authentication_options(
        rp_id=config.rp_id,
        challenge=review_challenge(statement),
        timeout=CEREMONY_TIMEOUT_MS,
        allow_credentials=_descriptors(list(person.passkeys)),
        user_verification=UserVerificationRequirement.REQUIRED,
    )
    loaded: dict[str, Any] = json.loads(options_to_json(options))
    return loaded


def challenge_text(challenge: bytes) -> str:
    return bytes_to_base64url(challenge)


def challenge_bytes(text: str) -> bytes:
    return base64url_to_bytes(text)

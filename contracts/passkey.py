"""Passkey approvals: a reviewer's WebAuthn assertion over exactly one refund decision.

The reviewer console asks the reviewer's browser for an assertion whose challenge is
:func:`review_challenge` of a :class:`ReviewStatement` (this case, this proposal's digest, this
decision, the reviewer, a fresh nonce and the time), so the signature covers that one decision and
nothing else, the way a card payment's authentication code is bound to the amount and the payee. The
statement and the assertion travel together as one string, ``passkey1.<base64url JSON>``, in the
fields that carry an Ed25519 approval token today; :func:`contracts.credentials.verify_approval_token`
sends it here by its prefix, and it verifies to the same :class:`ApprovalClaims`.

Verification is pure and deterministic (no clock, no randomness, no I/O): the workflow runs it in its
sandbox against the recorded directory slice, and the commerce server runs it again with its own copy.
The WebAuthn work (client data, authenticator data, COSE keys, signatures) is py_webauthn's; this
module only builds the challenge, finds the credential, and names each refusal. The sign counter is
not tracked (``credential_current_sign_count=0``): a synced passkey reports 0 anyway, and an approval
is accepted once by its ``jti`` (the workflow's used approvals, the commerce server's consumption).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from webauthn import verify_authentication_response, verify_registration_response
from webauthn.helpers import bytes_to_base64url, parse_authenticator_data, parse_client_data_json
from webauthn.helpers.exceptions import InvalidAuthenticationResponse
from webauthn.helpers.structs import ClientDataType

from contracts.approval_claims import (
    APPROVAL_TOKEN_TTL,
    MAX_TOKEN_CHARS,
    ApprovalClaims,
    CredentialCode,
    CredentialRefused,
)
from contracts.directory import BASE64URL_PATTERN, Directory, Passkey

__all__ = [
    "PASSKEY_PREFIX",
    "PASSKEY_REFUSALS",
    "PasskeyApproval",
    "ReviewStatement",
    "claimed_reviewer",
    "decode_passkey_approval",
    "encode_passkey_approval",
    "is_passkey_approval",
    "passkey_approval_from_browser",
    "review_challenge",
    "verify_passkey_approval",
    "verify_passkey_enrollment",
]

PASSKEY_PREFIX = "passkey1."
CHALLENGE_CONTEXT = b"support-review/1\n"
"""Prefixed to the statement before hashing, so no other protocol's message hashes to a review's challenge."""
LATEST_ISSUED_AT = 4_102_444_800
"""2100-01-01 in unix seconds: a statement dated later is malformed (and its expiry still a date)."""

PASSKEY_REFUSALS: dict[CredentialCode, str] = {
    CredentialCode.PASSKEY_CHALLENGE_MISMATCH: (
        "The passkey signed another case, proposal, decision or nonce than stated."
    ),
    CredentialCode.PASSKEY_WRONG_ORIGIN: (
        "The passkey was used on another page than the reviewer console it was enrolled at."
    ),
    CredentialCode.PASSKEY_WRONG_RP: (
        "The passkey assertion is for another relying party than the one it was enrolled for."
    ),
    CredentialCode.PASSKEY_USER_NOT_VERIFIED: "The authenticator did not verify the reviewer (PIN or biometric).",
    CredentialCode.PASSKEY_USER_NOT_PRESENT: "The authenticator did not see the reviewer present.",
    CredentialCode.BAD_SIGNATURE: "The passkey assertion's signature does not match the enrolled public key.",
    CredentialCode.MALFORMED_TOKEN: "The passkey approval is not a well-formed WebAuthn assertion.",
}
"""Each refusal of a passkey approval after its credential was found, with its one sentence."""


class ReviewStatement(BaseModel):
    """What the passkey signs, through the challenge: one decision on one proposal of one case."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str = Field(min_length=1, max_length=200)
    digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    decision: Literal["approve", "reject"]
    reviewer: str = Field(min_length=1, max_length=64)
    """The subject the approval claims; it must be the holder of the credential that signed."""
    nonce: str = Field(min_length=16, max_length=64, pattern=BASE64URL_PATTERN)
    issued_at: int = Field(ge=0, le=LATEST_ISSUED_AT)
    """Unix seconds; the approval's ``iat``, and its expiry is this plus the approval token lifetime."""


def review_challenge(statement: ReviewStatement) -> bytes:
    """sha256(``support-review/1\\n`` + the statement as canonical JSON: sorted keys, no spaces, ASCII)."""
    canonical = json.dumps(statement.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(CHALLENGE_CONTEXT + canonical.encode("ascii")).digest()


def _base64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unbase64url(text: str) -> bytes:
    """The bytes of canonical unpadded base64url ``text``; ValueError for anything else."""
    if not re.fullmatch(BASE64URL_PATTERN, text):
        raise ValueError("not base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _base64url(data) != text:
        raise ValueError("not canonical base64url")
    return data


def _canonical(text: str) -> str:
    _unbase64url(text)
    return text


Base64Url = Annotated[str, AfterValidator(_canonical)]
"""Canonical base64url: every byte string has exactly one spelling, so no edit of an envelope that
leaves its bytes unchanged can pass as another approval."""


class PasskeyApproval(BaseModel):
    """A statement and the browser's assertion over its challenge (bytes as base64url, no padding)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    statement: ReviewStatement
    credential_id: Base64Url = Field(min_length=16, max_length=1400, pattern=BASE64URL_PATTERN)
    client_data_json: Base64Url = Field(min_length=1, max_length=2000, pattern=BASE64URL_PATTERN)
    authenticator_data: Base64Url = Field(min_length=1, max_length=1000, pattern=BASE64URL_PATTERN)
    signature: Base64Url = Field(min_length=1, max_length=1000, pattern=BASE64URL_PATTERN)
    user_handle: Base64Url | None = Field(default=None, max_length=128, pattern=BASE64URL_PATTERN)
    """The user handle the authenticator returned; informational, the signature does not cover it."""


def _refused(code: CredentialCode) -> CredentialRefused:
    return CredentialRefused(code, PASSKEY_REFUSALS[code])


def encode_passkey_approval(approval: PasskeyApproval) -> str:
    """``passkey1.`` + base64url of the approval's compact JSON: the string a review carries. Refused
    (``malformed_token``) when it would not fit a review's token field."""
    token = PASSKEY_PREFIX + _base64url(approval.model_dump_json().encode("utf-8"))
    if len(token) >= MAX_TOKEN_CHARS:
        raise CredentialRefused(
            CredentialCode.MALFORMED_TOKEN, f"The passkey approval is over {MAX_TOKEN_CHARS} characters."
        )
    return token


def decode_passkey_approval(token: str) -> PasskeyApproval:
    """The approval a ``passkey1.`` string carries; ``malformed_token`` for anything that is not exactly
    what :func:`encode_passkey_approval` writes (so one approval has one spelling)."""
    if not isinstance(token, str) or len(token) >= MAX_TOKEN_CHARS or not token.startswith(PASSKEY_PREFIX):
        raise _refused(CredentialCode.MALFORMED_TOKEN)
    try:
        approval = PasskeyApproval.model_validate_json(_unbase64url(token[len(PASSKEY_PREFIX) :]))
    except (ValueError, ValidationError, binascii.Error):
        raise _refused(CredentialCode.MALFORMED_TOKEN) from None
    if encode_passkey_approval(approval) != token:
        raise _refused(CredentialCode.MALFORMED_TOKEN)
    return approval


def is_passkey_approval(token: str) -> bool:
    """Whether ``token`` is (meant as) a passkey approval rather than an Ed25519 approval token."""
    return isinstance(token, str) and token.startswith(PASSKEY_PREFIX)


def claimed_reviewer(token: str) -> str | None:
    """The reviewer a passkey approval's statement claims, before any check; None when unreadable."""
    try:
        return decode_passkey_approval(token).statement.reviewer
    except CredentialRefused:
        return None


def verify_passkey_approval(token: str, directory: Directory) -> ApprovalClaims:
    """The claims of a passkey approval signed by a passkey the directory lists for the reviewer its
    statement names, over exactly that statement, on the enrolled origin and relying party, with the
    reviewer present and verified. No case, time or rule checks (:mod:`contracts.approval_verification`
    applies those).
    Raises :class:`CredentialRefused` and nothing else, whatever ``token`` holds."""
    try:
        return _verified(token, directory)
    except CredentialRefused:
        raise
    except Exception:  # anything a sender can put in an envelope: a refusal, never a crash of the caller
        raise _refused(CredentialCode.MALFORMED_TOKEN) from None


def _verified(token: str, directory: Directory) -> ApprovalClaims:
    approval = decode_passkey_approval(token)
    statement = approval.statement
    held = directory.passkey_holder(approval.credential_id)
    if held is None:
        raise CredentialRefused(
            CredentialCode.UNKNOWN_SIGNER, "No passkey with this credential id is enrolled in the directory."
        )
    holder, passkey = held
    if statement.reviewer != holder.subject:
        raise CredentialRefused(
            CredentialCode.WRONG_SIGNER, "The passkey belongs to another reviewer than the statement names."
        )
    challenge = review_challenge(statement)
    try:
        verify_authentication_response(
            credential=_assertion_json(approval),
            expected_challenge=challenge,
            expected_rp_id=passkey.rp_id,
            expected_origin=passkey.origin,
            credential_public_key=_unbase64url(passkey.public_key),
            credential_current_sign_count=0,
            require_user_verification=True,
        )
    except Exception as error:
        raise _refused(_failed_check(approval, passkey, challenge, error)) from None
    if _cross_origin(approval):
        raise _refused(CredentialCode.PASSKEY_WRONG_ORIGIN)
    return ApprovalClaims(
        sub=holder.subject,
        tenant=holder.tenant,
        case_id=statement.case_id,
        digest=statement.digest,
        decision=statement.decision,
        iat=statement.issued_at,
        exp=statement.issued_at + int(APPROVAL_TOKEN_TTL.total_seconds()),
        jti="passkey-" + hashlib.sha256(f"{approval.credential_id}:{statement.nonce}".encode()).hexdigest()[:40],
    )


def _assertion_json(approval: PasskeyApproval) -> dict[str, Any]:
    """The approval's assertion as navigator.credentials.get's JSON, which py_webauthn reads."""
    response: dict[str, Any] = {
        "clientDataJSON": approval.client_data_json,
        "authenticatorData": approval.authenticator_data,
        "signature": approval.signature,
    }
    if approval.user_handle is not None:
        response["userHandle"] = approval.user_handle
    return {"id": approval.credential_id, "rawId": approval.credential_id, "type": "public-key", "response": response}


def _failed_check(approval: PasskeyApproval, passkey: Passkey, challenge: bytes, error: Exception) -> CredentialCode:
    """Which check py_webauthn's refusal of ``approval`` failed, read off the same bytes with its own
    parsers in the order it checks them; the signature when every earlier check holds."""
    try:
        client = parse_client_data_json(_unbase64url(approval.client_data_json))
        authenticator = parse_authenticator_data(_unbase64url(approval.authenticator_data))
    except Exception:
        return CredentialCode.MALFORMED_TOKEN
    if client.type != ClientDataType.WEBAUTHN_GET:
        return CredentialCode.MALFORMED_TOKEN
    if client.challenge != challenge:
        return CredentialCode.PASSKEY_CHALLENGE_MISMATCH
    if client.origin != passkey.origin:
        return CredentialCode.PASSKEY_WRONG_ORIGIN
    if authenticator.rp_id_hash != hashlib.sha256(passkey.rp_id.encode("utf-8")).digest():
        return CredentialCode.PASSKEY_WRONG_RP
    if not authenticator.flags.up:
        return CredentialCode.PASSKEY_USER_NOT_PRESENT
    if not authenticator.flags.uv:
        return CredentialCode.PASSKEY_USER_NOT_VERIFIED
    if isinstance(error, InvalidAuthenticationResponse):
        return CredentialCode.BAD_SIGNATURE
    return CredentialCode.MALFORMED_TOKEN


def _cross_origin(approval: PasskeyApproval) -> bool:
    """Whether the browser says the ceremony ran in a frame of another site (``crossOrigin``)."""
    return bool(parse_client_data_json(_unbase64url(approval.client_data_json)).cross_origin)


def passkey_approval_from_browser(statement: ReviewStatement, credential: dict[str, Any]) -> PasskeyApproval:
    """The approval of ``statement`` by the assertion the browser returned (navigator.credentials.get's
    JSON: ``id``, ``rawId``, ``type``, ``response.clientDataJSON/authenticatorData/signature/userHandle``).
    Nothing is verified here; ``malformed_token`` when the JSON lacks a field or is not base64url."""
    try:
        response = credential["response"]
        if credential.get("type") != "public-key" or credential.get("rawId", credential["id"]) != credential["id"]:
            raise ValueError("not a public-key credential")
        return PasskeyApproval(
            statement=statement,
            credential_id=credential["id"],
            client_data_json=response["clientDataJSON"],
            authenticator_data=response["authenticatorData"],
            signature=response["signature"],
            user_handle=response.get("userHandle") or None,
        )
    except (KeyError, TypeError, AttributeError, ValueError):
        raise CredentialRefused(
            CredentialCode.MALFORMED_TOKEN, "The browser assertion lacks a field or is not base64url."
        ) from None


def verify_passkey_enrollment(
    credential: dict[str, Any] | str, *, challenge: bytes, rp_id: str, origin: str, now: datetime
) -> Passkey:
    """The passkey that navigator.credentials.create's JSON ``credential`` registers, made for
    ``challenge`` on ``origin`` for ``rp_id`` with the user verified (attestation is not required);
    ``enrollment_refused`` with one sentence otherwise."""
    try:
        registered = verify_registration_response(
            credential=credential,
            expected_challenge=challenge,
            expected_rp_id=rp_id,
            expected_origin=origin,
            require_user_verification=True,
        )
        return Passkey(
            credential_id=bytes_to_base64url(registered.credential_id),
            public_key=bytes_to_base64url(registered.credential_public_key),
            rp_id=rp_id,
            origin=origin,
            enrolled_at=now,
        )
    except ValidationError:
        raise CredentialRefused(
            CredentialCode.ENROLLMENT_REFUSED, "The new passkey's credential id or public key is too long or too short."
        ) from None
    except Exception as error:
        reason = str(error).split(". See __cause__")[0][:160] or type(error).__name__
        raise CredentialRefused(CredentialCode.ENROLLMENT_REFUSED, f"The passkey was not enrolled: {reason}.") from None

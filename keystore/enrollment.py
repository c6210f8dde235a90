"""One-time enrollment links: how a reviewer gets from ``starter.py directory enroll SUBJECT`` to a
passkey published in the directory.

A link carries a token signed with the built-in issuer's private key (kid ``issuer``, as the applicant
tokens of :mod:`keystore.signers`), audience ``support-enroll``, for one reviewer of the directory, valid
:data:`ENROLLMENT_TTL`. This module checks the signature, the audience, the subject and the time; that a
token is used once, and only by the browser session that opened the link first, is the reviewer
console's job (its store keeps every claimed and used ``jti``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from urllib.parse import urlencode

import jwt
from jwt.exceptions import InvalidTokenError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contracts.approval_claims import CredentialCode
from contracts.credentials import ALGORITHM, CLOCK_SKEW, MAX_TOKEN_CHARS, CredentialRefused, key_set
from contracts.directory import ISSUER_KID, Directory, Person
from contracts.errors import AuthorizationError
from contracts.identity import Role
from keystore import directory_location, load_directory, load_private_key, private_key_path

ENROLLMENT_AUDIENCE = "support-enroll"
ENROLLMENT_TTL_SECONDS = 15 * 60
ENROLL_PATH = "/enroll"
DEFAULT_CONSOLE_ORIGIN = "http://localhost:8090"
CONSOLE_ORIGIN_ENV = "CONSOLE_ORIGIN"
CONSOLE_PORT_ENV = "CONSOLE_PORT"


def console_origin(environ: Mapping[str, str]) -> str:
    """The reviewer console's address as this machine configures it: ``CONSOLE_ORIGIN`` (compose, a
    proxy), else ``http://localhost:CONSOLE_PORT`` (``make dev-server``), else the default. The console
    and ``starter.py directory enroll`` both read it, so a link opens the console that is running."""
    origin = (environ.get(CONSOLE_ORIGIN_ENV) or "").strip()
    if origin:
        return origin.rstrip("/")
    port = (environ.get(CONSOLE_PORT_ENV) or "").strip()
    if port.isdigit() and 1 <= int(port) <= 65535:
        return f"http://localhost:{int(port)}"
    return DEFAULT_CONSOLE_ORIGIN


class EnrollmentClaims(BaseModel):
    """A verified enrollment token: who may enroll a passkey, and which link this was (``jti``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    sub: str
    jti: str = Field(min_length=8, max_length=100)
    iat: int
    exp: int


def enrolling_reviewer(directory: Directory, subject: str) -> Person:
    """The reviewer ``subject``; ``unknown_person`` or ``not_a_reviewer`` (refusals) otherwise."""
    person = directory.person(subject)
    if person is None:
        raise CredentialRefused(CredentialCode.UNKNOWN_PERSON, f"{subject[:40]!r} is not in the support directory.")
    if person.role is not Role.REVIEWER:
        raise CredentialRefused(
            CredentialCode.NOT_A_REVIEWER, f"{subject} is a {person.role.value}; only a reviewer enrolls a passkey."
        )
    return person


def mint_enrollment_link(state_dir: Path, subject: str, *, console_url: str, now: datetime) -> str:
    """``<console_url>/enroll#token=...`` for reviewer ``subject`` of the state dir's directory, signed
    with the state dir's issuer key; refused (:class:`CredentialRefused`) for anyone but a reviewer.

    The token is in the fragment, which a browser never sends: no request line, access log, proxy log or
    Referer holds it. The console's page reads it there and posts it (the console refuses a token in a
    query string, and cancels that link)."""
    directory = load_directory(directory_location(Path(state_dir)))
    enrolling_reviewer(directory, subject)
    issued = int(now.timestamp())
    claims = {
        "aud": ENROLLMENT_AUDIENCE,
        "sub": subject,
        "jti": uuid.uuid4().hex,
        "iat": issued,
        "exp": issued + ENROLLMENT_TTL_SECONDS,
    }
    key = load_private_key(private_key_path(Path(state_dir), ISSUER_KID))
    token = jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": ISSUER_KID})
    return f"{console_url.rstrip('/')}{ENROLL_PATH}#{urlencode({'token': token})}"


def verify_enrollment_token(token: str, directory: Directory, *, now: datetime) -> EnrollmentClaims:
    """The claims of an enrollment token signed by the directory's issuer key, for this audience, not
    expired, naming a reviewer the directory lists; :class:`CredentialRefused` otherwise."""
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise CredentialRefused(CredentialCode.MALFORMED_TOKEN, "The enrollment link carries no token.")
    try:
        header = jwt.get_unverified_header(token)
        if header.get("alg") != ALGORITHM or header.get("kid") != ISSUER_KID:
            raise CredentialRefused(CredentialCode.WRONG_SIGNER, "The enrollment link is not signed by the issuer.")
        raw = jwt.decode(
            token,
            key_set(directory).key_for(ISSUER_KID),
            algorithms=[ALGORITHM],
            audience=ENROLLMENT_AUDIENCE,
            options={"verify_exp": False, "verify_iat": False, "require": ["iat", "exp", "jti", "sub"]},
        )
        claims = EnrollmentClaims.model_validate(raw)
    except CredentialRefused:
        raise
    except AuthorizationError as error:
        raise CredentialRefused(error.code, error.message) from None
    except (InvalidTokenError, ValidationError):
        raise CredentialRefused(CredentialCode.BAD_SIGNATURE, "The enrollment link does not verify.") from None
    stamp = int(now.timestamp())
    if claims.iat > stamp + CLOCK_SKEW.total_seconds():
        raise CredentialRefused(CredentialCode.ISSUED_IN_FUTURE, "The enrollment link is dated in the future.")
    if stamp >= claims.exp:
        raise CredentialRefused(CredentialCode.TOKEN_EXPIRED, "The enrollment link has expired; ask for a new one.")
    enrolling_reviewer(directory, claims.sub)
    return claims

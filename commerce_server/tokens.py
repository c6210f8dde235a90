"""The commerce server's public face for the worker side: bearer tokens and the shared environment.

The worker mints a signed, short-lived token for one case, one identity and the one scope a tool
needs; the commerce server verifies it (:mod:`commerce_server.auth` wraps :func:`verify_token` in
the MCP SDK's ``TokenVerifier`` hook). Minting and verifying sit side by side so that both read the
same issuer, audience, algorithm and lifetime limits. The HMAC secret comes only from the
environment and is never logged.

This module imports nothing of the MCP server and no database code: the worker imports it, and
launches the server itself only as a separate process.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping

import jwt
from pydantic import BaseModel, ConfigDict, ValidationError

from contracts.directory import Directory
from contracts.errors import AuthorizationError, CommerceErrorCode, ConfigurationError, SettingCode
from contracts.identity import Identity
from contracts.tools import COMMERCE_TOOLS, Scope

__all__ = [
    "ALGORITHM",
    "ALL_SCOPES",
    "AUDIENCE",
    "DATABASE_URL_ENV",
    "DEFAULT_TTL_SECONDS",
    "DIRECTORY_ENV",
    "ISSUER",
    "MAX_TTL_SECONDS",
    "MIN_SECRET_CHARS",
    "SIGNING_KEY_ENV",
    "TOKEN_SECRET_ENV",
    "TOOL_SCOPES",
    "TokenClaims",
    "mint_token",
    "token_secret_from_env",
    "verify_token",
]

# --- the environment the worker and the server share ---------------------------------------------

TOKEN_SECRET_ENV = "COMMERCE_TOKEN_SECRET"
"""The HMAC secret; the worker that mints and the server that verifies must be given the same one."""
DATABASE_URL_ENV = "COMMERCE_DATABASE_URL"
"""The commerce database's SQLAlchemy URL; the worker hands it to the stdio server it launches."""
DIRECTORY_ENV = "COMMERCE_DIRECTORY"
"""The commerce server's own copy of the support directory (a file path or an https URL) that it checks
bearer tokens' people and reviewers' approvals with; default ``<state dir>/keys/directory.json``."""
SIGNING_KEY_ENV = "COMMERCE_SIGNING_KEY"
"""The PEM file of the commerce server's private key, which signs receipts (kid ``commerce``); default
``<state dir>/keys/commerce.pem``. Only the commerce server reads it."""

# --- tokens --------------------------------------------------------------------------------------

MIN_SECRET_CHARS = 32
ISSUER = "qinghe-support-worker"
AUDIENCE = "qinghe-commerce-mcp"
ALGORITHM = "HS256"
DEFAULT_TTL_SECONDS = 300
MAX_TTL_SECONDS = 600
"""Tokens minted for longer than this are refused whatever their expiry: they must be short-lived."""

ALL_SCOPES = tuple(Scope)

TOOL_SCOPES: dict[str, str] = {name: spec.scope for name, spec in COMMERCE_TOOLS.items() if spec.scope is not None}
"""The one scope each commerce tool needs on a bearer token (from the tool catalogue)."""


class TokenClaims(BaseModel):
    """The verified claims of one commerce token."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    iss: str
    aud: str
    sub: str
    tenant: str
    case_id: str
    scopes: list[str]
    iat: int
    exp: int


def token_secret_from_env(environ: Mapping[str, str] = os.environ) -> str:
    """The signing secret from ``COMMERCE_TOKEN_SECRET``; missing or short is a configuration error."""
    secret = environ.get(TOKEN_SECRET_ENV, "")
    if len(secret) < MIN_SECRET_CHARS:
        raise ConfigurationError(
            SettingCode.TOKEN_SECRET_MISSING,
            f"Set {TOKEN_SECRET_ENV} to a random secret of at least {MIN_SECRET_CHARS} characters.",
        )
    return secret


def mint_token(
    identity: Identity,
    *,
    case_id: str,
    scopes: Iterable[str],
    secret: str,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
) -> str:
    """A token that lets the commerce server act for ``identity`` on one case for ``ttl_seconds``."""
    requested = list(scopes)
    unknown = sorted(set(requested) - set(ALL_SCOPES))
    if unknown:
        raise ValueError(f"unknown scopes: {unknown}")
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": identity.subject,
        "tenant": identity.tenant,
        "case_id": case_id,
        "scopes": requested,
        "iat": now,
        "exp": now + ttl_seconds,
    }
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def verify_token(token: str, *, secret: str, directory: Directory) -> TokenClaims:
    """Check signature, issuer, audience and expiry, and that the subject is a person the directory
    lists in the token's tenant."""
    try:
        decoded = jwt.decode(
            token,
            secret,
            algorithms=[ALGORITHM],
            audience=AUDIENCE,
            issuer=ISSUER,
            options={"require": ["iss", "aud", "sub", "iat", "exp"]},
        )
        claims = TokenClaims.model_validate(decoded)
    except (jwt.PyJWTError, ValidationError) as exc:
        reason = f"The bearer token was rejected ({type(exc).__name__})."
        raise AuthorizationError(CommerceErrorCode.TOKEN_REJECTED, reason) from exc
    if claims.exp - claims.iat > MAX_TTL_SECONDS:
        raise AuthorizationError(
            CommerceErrorCode.TOKEN_REJECTED, "The bearer token is valid for longer than this server accepts."
        )
    person = directory.person(claims.sub)
    if person is None or person.tenant != claims.tenant:
        raise AuthorizationError(CommerceErrorCode.TOKEN_REJECTED, "The bearer token names an unknown identity.")
    return claims

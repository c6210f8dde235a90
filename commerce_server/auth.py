"""Signed, short-lived, per-case bearer tokens for the Streamable HTTP transport.

The worker mints a token for one case and one identity; the commerce server verifies it on every
request through the MCP SDK's ``TokenVerifier`` hook, so a missing, tampered, expired or
wrong-audience token is refused with HTTP 401 before any tool runs. The HMAC secret comes only
from the environment and is never logged.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Mapping

import jwt
from mcp.server.auth.provider import AccessToken, TokenVerifier
from pydantic import BaseModel, ConfigDict, ValidationError

from contracts.errors import AuthorizationError, ConfigurationError
from contracts.identity import PROFILES, Identity

logger = logging.getLogger(__name__)

TOKEN_SECRET_ENV = "COMMERCE_TOKEN_SECRET"
MIN_SECRET_CHARS = 32
ISSUER = "qinghe-support-worker"
AUDIENCE = "qinghe-commerce-mcp"
ALGORITHM = "HS256"
DEFAULT_TTL_SECONDS = 300
MAX_TTL_SECONDS = 600
"""Tokens minted for longer than this are refused whatever their expiry: they must be short-lived."""

SCOPE_ORDERS_READ = "orders:read"
SCOPE_TICKETS_WRITE = "tickets:write"
SCOPE_REFUND_EXECUTE = "refund:execute"
ALL_SCOPES = (SCOPE_ORDERS_READ, SCOPE_TICKETS_WRITE, SCOPE_REFUND_EXECUTE)

TOOL_SCOPES: dict[str, str] = {
    "list_orders": SCOPE_ORDERS_READ,
    "get_order": SCOPE_ORDERS_READ,
    "get_shipment": SCOPE_ORDERS_READ,
    "get_invoice": SCOPE_ORDERS_READ,
    "get_product": SCOPE_ORDERS_READ,
    "get_ticket": SCOPE_ORDERS_READ,
    "create_ticket": SCOPE_TICKETS_WRITE,
    "execute_refund": SCOPE_REFUND_EXECUTE,
}
"""The one scope each tool needs on a bearer token."""


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
            "token_secret_missing",
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


def verify_token(token: str, *, secret: str) -> TokenClaims:
    """Check signature, issuer, audience and expiry, and that the subject is a known profile."""
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
        raise AuthorizationError("token_rejected", reason) from exc
    if claims.exp - claims.iat > MAX_TTL_SECONDS:
        raise AuthorizationError("token_rejected", "The bearer token is valid for longer than this server accepts.")
    profile = PROFILES.get(claims.sub)
    if profile is None or profile.tenant != claims.tenant:
        raise AuthorizationError("token_rejected", "The bearer token names an unknown identity.")
    return claims


def case_of_access_token(access_token: AccessToken) -> str | None:
    """The case a verified token was issued for."""
    return (access_token.claims or {}).get("case_id")


def identity_from_access_token(access_token: AccessToken) -> Identity:
    """The identity a verified request acts for (the verifier put the subject there)."""
    if access_token.subject is None or access_token.subject not in PROFILES:
        raise AuthorizationError("token_rejected", "The request carries no known identity.")
    return PROFILES[access_token.subject]


class CommerceTokenVerifier(TokenVerifier):
    """The SDK hook: returns ``None`` for any bad token, which the SDK answers with HTTP 401."""

    def __init__(self, secret: str) -> None:
        self._secret = secret

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            claims = verify_token(token, secret=self._secret)
        except AuthorizationError as error:
            logger.info("Refused a bearer token: %s", error.message)
            return None
        return AccessToken(
            token=token,
            client_id=claims.case_id,
            scopes=claims.scopes,
            expires_at=claims.exp,
            subject=claims.sub,
            claims={"iss": claims.iss, "aud": claims.aud, "tenant": claims.tenant, "case_id": claims.case_id},
        )

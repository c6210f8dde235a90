"""Per-case bearer tokens: signed, short-lived, for one audience; the secret comes from the environment."""

from __future__ import annotations

import time

import jwt
import pytest

from commerce_server.auth import (
    ALL_SCOPES,
    AUDIENCE,
    ISSUER,
    TOKEN_SECRET_ENV,
    CommerceTokenVerifier,
    mint_token,
    token_secret_from_env,
    verify_token,
)
from contracts.errors import AuthorizationError, ConfigurationError
from contracts.identity import PROFILES

SECRET = "test-secret-" + "x" * 32


def forged(**changes: object) -> str:
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "alice",
        "tenant": "qinghe",
        "case_id": "case-1",
        "scopes": ["orders:read"],
        "iat": now,
        "exp": now + 60,
    } | changes
    return jwt.encode(claims, SECRET, algorithm="HS256")


def test_minted_token_verifies_to_its_claims() -> None:
    token = mint_token(PROFILES["alice"], case_id="case-1", scopes=ALL_SCOPES, secret=SECRET)

    claims = verify_token(token, secret=SECRET)

    assert (claims.iss, claims.aud, claims.sub, claims.tenant, claims.case_id) == (
        ISSUER,
        AUDIENCE,
        "alice",
        "qinghe",
        "case-1",
    )
    assert claims.scopes == list(ALL_SCOPES)
    assert claims.exp - claims.iat == 300


@pytest.mark.parametrize(
    "token",
    [
        mint_token(PROFILES["alice"], case_id="c", scopes=["orders:read"], secret=SECRET) + "x",
        mint_token(PROFILES["alice"], case_id="c", scopes=["orders:read"], secret="another-" + "y" * 32),
        mint_token(PROFILES["alice"], case_id="c", scopes=["orders:read"], secret=SECRET, ttl_seconds=-5),
        forged(aud="someone-else"),
        forged(iss="someone-else"),
        forged(sub="mallory"),
        forged(tenant="south"),
        "not-a-token",
    ],
    ids=["tampered", "wrong-secret", "expired", "audience", "issuer", "unknown-subject", "tenant", "garbage"],
)
async def test_bad_tokens_are_rejected(token: str) -> None:
    with pytest.raises(AuthorizationError) as caught:
        verify_token(token, secret=SECRET)

    assert caught.value.code == "token_rejected"
    assert await CommerceTokenVerifier(SECRET).verify_token(token) is None


async def test_verifier_hands_the_sdk_subject_and_scopes() -> None:
    token = mint_token(PROFILES["bob"], case_id="case-9", scopes=["orders:read"], secret=SECRET)

    access = await CommerceTokenVerifier(SECRET).verify_token(token)

    assert access is not None
    assert (access.subject, access.client_id, access.scopes) == ("bob", "case-9", ["orders:read"])


def test_unknown_scopes_are_not_minted() -> None:
    with pytest.raises(ValueError):
        mint_token(PROFILES["alice"], case_id="c", scopes=["admin"], secret=SECRET)


@pytest.mark.parametrize("environ", [{}, {TOKEN_SECRET_ENV: "short"}])
def test_missing_or_short_secret_is_a_configuration_error(environ: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError) as caught:
        token_secret_from_env(environ)

    assert TOKEN_SECRET_ENV in caught.value.message
    assert "short" not in caught.value.message


def test_secret_is_read_from_the_environment() -> None:
    assert token_secret_from_env({TOKEN_SECRET_ENV: SECRET}) == SECRET

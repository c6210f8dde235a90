"""Per-case bearer tokens: signed, short-lived, for one audience; the secret comes from the environment."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from pathlib import Path

import jwt
import pytest

from commerce_server.auth import CommerceTokenVerifier
from commerce_server.tokens import (
    ALL_SCOPES,
    AUDIENCE,
    ISSUER,
    TOKEN_SECRET_ENV,
    mint_token,
    token_secret_from_env,
    verify_token,
)
from contracts.directory import Directory
from contracts.errors import AuthorizationError, ConfigurationError
from keystore import DEMO_DIRECTORY_PATH, demo_identity

SECRET = "test-secret-" + "x" * 32
DIRECTORY = Directory.model_validate_json(DEMO_DIRECTORY_PATH.read_text(encoding="utf-8"))
PROJECT_ROOT = Path(__file__).resolve().parents[2]


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
    token = mint_token(demo_identity("alice"), case_id="case-1", scopes=ALL_SCOPES, secret=SECRET)

    claims = verify_token(token, secret=SECRET, directory=DIRECTORY)

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
        mint_token(demo_identity("alice"), case_id="c", scopes=["orders:read"], secret=SECRET) + "x",
        mint_token(demo_identity("alice"), case_id="c", scopes=["orders:read"], secret="another-" + "y" * 32),
        mint_token(demo_identity("alice"), case_id="c", scopes=["orders:read"], secret=SECRET, ttl_seconds=-5),
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
        verify_token(token, secret=SECRET, directory=DIRECTORY)

    assert caught.value.code == "token_rejected"
    assert await CommerceTokenVerifier(SECRET, lambda: DIRECTORY).verify_token(token) is None


async def test_verifier_hands_the_sdk_subject_and_scopes() -> None:
    token = mint_token(demo_identity("bob"), case_id="case-9", scopes=["orders:read"], secret=SECRET)

    access = await CommerceTokenVerifier(SECRET, lambda: DIRECTORY).verify_token(token)

    assert access is not None
    assert (access.subject, access.client_id, access.scopes) == ("bob", "case-9", ["orders:read"])


def test_unknown_scopes_are_not_minted() -> None:
    with pytest.raises(ValueError):
        mint_token(demo_identity("alice"), case_id="c", scopes=["admin"], secret=SECRET)


@pytest.mark.parametrize("environ", [{}, {TOKEN_SECRET_ENV: "short"}])
def test_missing_or_short_secret_is_a_configuration_error(environ: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError) as caught:
        token_secret_from_env(environ)

    assert TOKEN_SECRET_ENV in caught.value.message
    assert "short" not in caught.value.message


def test_secret_is_read_from_the_environment() -> None:
    assert token_secret_from_env({TOKEN_SECRET_ENV: SECRET}) == SECRET


def test_the_token_module_loads_without_the_mcp_server_or_the_database() -> None:
    """What the worker imports of the commerce server is the token module alone."""
    probe = (
        "import json, sys, commerce_server.tokens; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('mcp', 'sqlalchemy', 'sqlmodel', 'commerce_server'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=PROJECT_ROOT, timeout=60
    )

    assert json.loads(result.stdout) == ["commerce_server", "commerce_server.tokens"]


def test_the_worker_side_imports_only_the_token_module_of_the_commerce_server() -> None:
    imported: set[str] = set()
    for path in (PROJECT_ROOT / "activities").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            imported.update(module for module in modules if module.split(".")[0] == "commerce_server")

    assert imported == {"commerce_server.tokens"}

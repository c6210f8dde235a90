"""The server side of bearer tokens: the MCP SDK's ``TokenVerifier`` hook for Streamable HTTP.

The commerce server verifies the worker's token (:func:`commerce_server.tokens.verify_token`) on every
request, so a missing, tampered, expired or wrong-audience token is refused with HTTP 401 before any
tool runs. What a token holds, how it is minted and the shared environment live in
:mod:`commerce_server.tokens`, which the worker imports without pulling in the MCP server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from mcp.server.auth.provider import AccessToken, TokenVerifier

from commerce_server.metrics import count_token_refused
from commerce_server.tokens import verify_token
from contracts.directory import Directory
from contracts.errors import AuthorizationError, CommerceErrorCode
from contracts.identity import Identity
from contracts.logs import log_fields

__all__ = [
    "CommerceTokenVerifier",
    "case_of_access_token",
    "identity_from_access_token",
]
logger = logging.getLogger(__name__)


def case_of_access_token(access_token: AccessToken) -> str | None:
    """The case a verified token was issued for."""
    return (access_token.claims or {}).get("case_id")


def identity_from_access_token(access_token: AccessToken, directory: Directory) -> Identity:
    """The identity a verified request acts for (the verifier put the subject and tenant there), as
    the directory lists that person now."""
    person = directory.person(access_token.subject or "")
    if person is None or person.tenant != (access_token.claims or {}).get("tenant"):
        count_token_refused(CommerceErrorCode.TOKEN_REJECTED)
        raise AuthorizationError(CommerceErrorCode.TOKEN_REJECTED, "The request carries no known identity.")
    return person.identity()


class CommerceTokenVerifier(TokenVerifier):
    """The SDK hook: returns ``None`` for any bad token, which the SDK answers with HTTP 401."""

    def __init__(self, secret: str, directory: Callable[[], Directory]) -> None:
        self._secret = secret
        self._directory = directory

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            claims = verify_token(token, secret=self._secret, directory=self._directory())
        except AuthorizationError as error:
            logger.info("Refused a bearer token: %s", error.message, extra=log_fields(code=error.code))
            count_token_refused(error.code)
            return None
        return AccessToken(
            token=token,
            client_id=claims.case_id,
            scopes=claims.scopes,
            expires_at=claims.exp,
            subject=claims.sub,
            claims={"iss": claims.iss, "aud": claims.aud, "tenant": claims.tenant, "case_id": claims.case_id},
        )

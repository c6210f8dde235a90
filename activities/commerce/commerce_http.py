"""Calls to a commerce server deployed as its own service, over Streamable HTTP.

The stdio pool (:mod:`activities.commerce.commerce_sessions`) launches the commerce server next to the worker.
When ``COMMERCE_MCP_URL`` names a server instead, every call opens a short, stateless HTTP session
with a freshly minted bearer token bound to the identity, the case and the one scope the tool needs,
valid for a few minutes. The identity therefore never travels as a tool argument, and a leaked token
is worth one case, one scope, briefly.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

from activities.commerce.commerce_client import CALL_TIMEOUT_SECONDS, open_http_client
from activities.commerce.commerce_sessions import CommerceCheck, call_timed_out, describe_commerce, startup_probe
from commerce_server.tokens import TOOL_SCOPES, mint_token, token_secret_from_env
from contracts.errors import AuthorizationError, CommerceErrorCode, ConfigurationError, SupportError, WorkerErrorCode
from contracts.identity import Identity
from contracts.tools import Scope
from keystore.directory_file import DirectorySource

COMMERCE_URL_ENV = "COMMERCE_MCP_URL"
TOKEN_TTL_SECONDS = 120
STARTUP_CHECK_CASE = "worker-startup-check"


class CommerceHttpCaller:
    """Same ``call`` as the stdio pool, for a remote commerce server."""

    def __init__(self, url: str, secret: str, directory: DirectorySource) -> None:
        self.url = url
        self._secret = secret
        self.directory = directory
        """The worker's own copy of the directory: every call is for a person it lists, exactly."""

    @classmethod
    def from_env(cls, directory: DirectorySource, environ: Mapping[str, str] = os.environ) -> CommerceHttpCaller | None:
        """The HTTP caller when ``COMMERCE_MCP_URL`` is set (then the token secret is required)."""
        url = environ.get(COMMERCE_URL_ENV)
        return cls(url, token_secret_from_env(environ), directory) if url else None

    async def call(self, identity: Identity, tool: str, arguments: dict[str, Any], *, case_id: str) -> dict[str, Any]:
        self.directory.current().check_listed(identity)
        scope = TOOL_SCOPES.get(tool)
        if scope is None:
            raise AuthorizationError(WorkerErrorCode.TOOL_NOT_ALLOWED, f"No commerce tool named {tool!r}.")
        token = mint_token(
            identity, case_id=case_id, scopes=[scope], secret=self._secret, ttl_seconds=TOKEN_TTL_SECONDS
        )
        try:
            async with asyncio.timeout(CALL_TIMEOUT_SECONDS), open_http_client(self.url, token) as client:
                return await client.call(tool, arguments)
        except TimeoutError:
            raise call_timed_out(tool) from None
        except AuthorizationError as error:
            raise self._configuration_fault(error) from None

    async def check(self) -> CommerceCheck:
        """Open a session with a freshly minted token and list the tools: refused or unreachable is a
        :class:`ConfigurationError` that names the cause (e.g. a ``COMMERCE_TOKEN_SECRET`` that differs)."""
        token = mint_token(
            startup_probe(self.directory),
            case_id=STARTUP_CHECK_CASE,
            scopes=[Scope.ORDERS_READ],
            secret=self._secret,
            ttl_seconds=60,
        )
        try:
            async with open_http_client(self.url, token) as client:
                return await describe_commerce(client, f"at {self.url} over Streamable HTTP, token accepted")
        except AuthorizationError as error:
            raise self._configuration_fault(error) from None
        except SupportError as error:
            raise ConfigurationError(
                WorkerErrorCode.COMMERCE_UNREACHABLE,
                f"cannot reach the commerce server at {self.url} ({error.message})",
            ) from None

    def _configuration_fault(self, error: AuthorizationError) -> SupportError:
        """The server refusing a token this worker just minted is a configuration fault, never a business
        answer: the secrets differ (or the clocks do). Other authorization refusals pass through."""
        if error.code != CommerceErrorCode.TOKEN_REJECTED:
            return error
        return ConfigurationError(
            WorkerErrorCode.COMMERCE_TOKEN_REJECTED,
            f"the commerce server at {self.url} refused this worker's token: COMMERCE_TOKEN_SECRET differs "
            "from the server's (or the clocks disagree)",
        )

    async def aclose(self) -> None:
        """Nothing is held between calls."""

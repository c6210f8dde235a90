"""The server under test, reached with the real MCP SDK client, over stdio or Streamable HTTP.

Over stdio the merchant's command is started once and acts for the customer it was started for (the
identity is bound by the process, never a tool argument). Over HTTP every call opens a short
stateless session with a freshly minted bearer token for the fixture customer, the call's case and the
one scope the tool needs, exactly as the worker calls a deployed server
(:class:`activities.commerce.commerce_http.CommerceHttpCaller`).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, Tool

from activities.commerce.commerce_client import CALL_TIMEOUT_SECONDS, CommerceClient, open_http_client
from commerce_server.tokens import TOOL_SCOPES, mint_token
from contracts.identity import Identity
from contracts.tools import Scope

LIST_TOOLS_CASE = "conformance-tool-list"
"""The case a bearer token for listing the tools names (a listing touches no case)."""
TOKEN_TTL_SECONDS = 120


class Target(Protocol):
    """What the checks call: the tool list, and one tool call for one case."""

    description: str

    async def list_tools(self) -> list[Tool]: ...

    async def call(self, tool: str, arguments: dict[str, Any], *, case_id: str) -> CallToolResult:
        """The raw MCP result (tool errors included); a lost connection raises a ``SupportError``."""
        ...


class _StdioTarget:
    def __init__(self, client: CommerceClient, command: str) -> None:
        self._client = client
        self.description = f"stdio: {command}"

    async def list_tools(self) -> list[Tool]:
        return await self._client.list_tools()

    async def call(self, tool: str, arguments: dict[str, Any], *, case_id: str) -> CallToolResult:
        return await self._client.call_tool_result(tool, arguments)


class _HttpTarget:
    def __init__(self, url: str, secret: str, customer: Identity) -> None:
        self._url = url
        self._secret = secret
        self._customer = customer
        self.description = f"Streamable HTTP: {url}"

    def _token(self, scope: str, case_id: str) -> str:
        return mint_token(
            self._customer, case_id=case_id, scopes=[scope], secret=self._secret, ttl_seconds=TOKEN_TTL_SECONDS
        )

    async def list_tools(self) -> list[Tool]:
        async with open_http_client(self._url, self._token(Scope.ORDERS_READ, LIST_TOOLS_CASE)) as client:
            return await client.list_tools()

    async def call(self, tool: str, arguments: dict[str, Any], *, case_id: str) -> CallToolResult:
        # A tool the contract does not name gets a read token: the server must refuse the tool itself.
        token = self._token(TOOL_SCOPES.get(tool, Scope.ORDERS_READ), case_id)
        async with open_http_client(self._url, token) as client:
            return await client.call_tool_result(tool, arguments)


@asynccontextmanager
async def stdio_target(command: str) -> AsyncIterator[Target]:
    """Start ``command`` (split like a shell would, run without one) with this process's environment."""
    argv = shlex.split(command)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with Client(params, read_timeout_seconds=CALL_TIMEOUT_SECONDS, cache=None) as client:
        yield _StdioTarget(CommerceClient(client), command)


@asynccontextmanager
async def http_target(url: str, secret: str, customer: Identity) -> AsyncIterator[Target]:
    """The server at ``url``; nothing is held open between calls."""
    yield _HttpTarget(url, secret, customer)

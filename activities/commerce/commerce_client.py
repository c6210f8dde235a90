"""An async client for the commerce MCP server, used by the CLI and by Temporal activities.

``call`` returns a tool's structured content, or raises the typed error of ``contracts.errors``
rebuilt from the tool error's stable code, so callers never parse MCP results themselves. Failing
to reach the server, or losing it, is the transient ``commerce_unavailable``; a refused bearer
token is the authorization error ``token_rejected``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, Resource, TextResourceContents, Tool

from commerce_server.tokens import DATABASE_URL_ENV, DIRECTORY_ENV, SIGNING_KEY_ENV
from contracts.errors import AuthorizationError, CommerceErrorCode, SupportError, TransientError, error_from_code
from contracts.logs import LOG_FORMAT_ENV, LOG_LEVEL_ENV
from keystore.outside_issuer import APPLICANT_ISSUER_ENV_NAMES
from knowledge.location import KNOWLEDGE_DIR_ENV

CALL_TIMEOUT_SECONDS = 20.0
"""One commerce call's answer must come within this; well inside the activities' 30 s start-to-close, so
a hung server is noticed (and its session replaced) by the attempt itself, not by Temporal's timeout."""
PROJECT_ROOT = Path(__file__).resolve().parent.parent

_T = TypeVar("_T")


class _TokenWatch:
    """Remembers whether the server last answered 401: the SDK reports that only as a generic error."""

    def __init__(self) -> None:
        self.refused = False

    async def __call__(self, response: httpx2.Response) -> None:
        self.refused = response.status_code == 401


class CommerceClient:
    """One open connection to the commerce server."""

    def __init__(self, client: Client, token_watch: _TokenWatch | None = None) -> None:
        self._client = client
        self._token_watch = token_watch

    async def list_tools(self) -> list[Tool]:
        return (await self._request(self._client.list_tools())).tools

    async def list_resources(self) -> list[Resource]:
        return (await self._request(self._client.list_resources())).resources

    async def read_resource(self, uri: str) -> str:
        """The text of a resource (the commerce server only has text resources)."""
        result = await self._request(self._client.read_resource(uri))
        return "".join(item.text for item in result.contents if isinstance(item, TextResourceContents))

    async def call_tool_result(self, tool: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """The raw MCP result of a tool call, tool errors included (for diagnostics and tests)."""
        return await self._request(self._client.call_tool(tool, arguments or {}))

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool; its structured content, or the typed error its code names."""
        result = await self.call_tool_result(tool, arguments)
        if result.is_error:
            raise tool_error_from_result(result)
        if result.structured_content is None:
            raise error_from_code(
                CommerceErrorCode.TOOL_CALL_REJECTED, f"The {tool} tool returned no structured content."
            )
        return result.structured_content

    async def _request(self, request: Awaitable[_T]) -> _T:
        try:
            return await request
        except MCPError as exc:
            raise self.failure(exc) from exc

    def failure(self, exc: BaseException) -> SupportError:
        """Translate a transport or protocol failure into a typed error."""
        if self._token_watch is not None and self._token_watch.refused:
            return AuthorizationError(
                CommerceErrorCode.TOKEN_REJECTED, "The commerce server refused the bearer token (HTTP 401)."
            )
        return TransientError(
            CommerceErrorCode.COMMERCE_UNAVAILABLE, f"The commerce server is unavailable ({_describe(exc)})."
        )


def tool_error_from_result(result: CallToolResult) -> SupportError:
    """Rebuild the typed error from an ``isError`` result's ``{"code", "message"}`` text.

    Errors the SDK raises itself (unknown tool, arguments that fail the input schema) carry plain
    text; they are the caller's mistake, so they become the contract error ``tool_call_rejected``.
    """
    text = "".join(getattr(block, "text", "") for block in result.content)
    try:
        payload = json.loads(text)
        return error_from_code(str(payload["code"]), str(payload["message"]))
    except (ValueError, TypeError, KeyError):
        return error_from_code(CommerceErrorCode.TOOL_CALL_REJECTED, text[:500] or "The tool call was rejected.")


@asynccontextmanager
async def open_stdio_client(
    profile: str, state_dir: str | Path, database_url: str | None = None
) -> AsyncIterator[CommerceClient]:
    """Launch ``python -m commerce_server --profile P --state-dir D`` and connect over stdio.

    The database URL travels in the environment (``COMMERCE_DATABASE_URL``), not on the command
    line, so a password in it never shows up in a process listing; so do the locations of the
    server's own public key set and receipt signing key when they are set, the knowledge directory
    (``SUPPORT_KNOWLEDGE_DIR``: the server quotes with the same rules as the worker), the log format and
    level (its lines join the worker's stderr), and the OpenTelemetry variables, so the server traces
    when the worker does.
    """
    env: dict[str, str] = {}
    url = database_url or os.environ.get(DATABASE_URL_ENV)
    if url:
        env[DATABASE_URL_ENV] = url
    passed = (DIRECTORY_ENV, SIGNING_KEY_ENV, KNOWLEDGE_DIR_ENV, LOG_FORMAT_ENV, LOG_LEVEL_ENV)
    for name in (*passed, *APPLICANT_ISSUER_ENV_NAMES):
        if os.environ.get(name):
            env[name] = os.environ[name]
    env.update({name: value for name, value in os.environ.items() if name.startswith("OTEL_")})  # docs/tracing.md
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "commerce_server", "--profile", profile, "--state-dir", str(Path(state_dir).resolve())],
        env=env,
        cwd=PROJECT_ROOT,
    )
    async with _connected(Client(params, read_timeout_seconds=CALL_TIMEOUT_SECONDS, cache=None)) as client:
        yield client


@asynccontextmanager
async def open_http_client(url: str, token: str) -> AsyncIterator[CommerceClient]:
    """Connect to a commerce server over Streamable HTTP with a per-case bearer token."""
    token_watch = _TokenWatch()
    http_client = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30.0, read=CALL_TIMEOUT_SECONDS),
        event_hooks={"response": [token_watch]},
    )
    async with http_client:
        transport = streamable_http_client(url, http_client=http_client)
        client = Client(transport, read_timeout_seconds=CALL_TIMEOUT_SECONDS, cache=None)
        async with _connected(client, token_watch) as commerce:
            yield commerce


@asynccontextmanager
async def _connected(client: Client, token_watch: _TokenWatch | None = None) -> AsyncIterator[CommerceClient]:
    """Enter ``client``; failing to connect is a typed error, and the body's errors come out unwrapped.

    The SDK's transports run in task groups, which wrap whatever crosses them (even an error raised
    in the ``async with`` body) in nested exception groups; callers get the one real error back.
    """
    commerce = CommerceClient(client, token_watch)
    connected = False
    try:
        async with client:
            connected = True
            yield commerce
    except Exception as wrapped:
        error = _sole_exception(wrapped)
        if isinstance(error, SupportError) or (connected and not _is_connection_error(error)):
            # Re-raise the real error as it was (its own cause kept), without the group wrappers.
            raise error from error.__cause__
        raise commerce.failure(error) from error


def _sole_exception(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def _is_connection_error(error: BaseException) -> bool:
    return isinstance(
        error,
        MCPError | OSError | httpx2.TransportError | anyio.BrokenResourceError | anyio.ClosedResourceError,
    )


def _describe(error: BaseException) -> str:
    if isinstance(error, MCPError):
        return error.error.message
    return type(error).__name__

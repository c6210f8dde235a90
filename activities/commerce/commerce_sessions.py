"""One live commerce MCP session per profile for the lifetime of a worker.

Starting the commerce server for every tool call would cost a process start, a database connection
and an MCP handshake each time. The pool keeps one stdio session per identity instead and shares it
between concurrent activities. The pool never retries a call by itself: retries belong to Temporal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from opentelemetry.trace import SpanKind, Tracer
from pydantic import BaseModel, ValidationError

from activities.commerce.commerce_client import CALL_TIMEOUT_SECONDS
from contracts.commerce import SCOPE_RESOURCE_URI
from contracts.errors import CommerceErrorCode, ConfigurationError, SupportError, TransientError, WorkerErrorCode
from contracts.identity import Identity, Role
from keystore import directory_location
from keystore.directory_file import DirectorySource

logger = logging.getLogger(__name__)

UNAVAILABLE = CommerceErrorCode.COMMERCE_UNAVAILABLE
"""The code the commerce client and this pool use for a lost or unusable connection."""

CLOSE_TIMEOUT_SECONDS = 10.0
"""Upper bound for closing all sessions; the MCP stdio shutdown itself is bounded at about 6 s."""

TIMED_OUT = CommerceErrorCode.COMMERCE_TIMEOUT
"""The code of a call that got no answer within :data:`activities.commerce.commerce_client.CALL_TIMEOUT_SECONDS`."""


def startup_probe(directory: DirectorySource) -> Identity:
    """The identity a worker's start check connects as (the directory's first customer): it lists tools
    and reads the scope, no records."""
    customer = next((person for person in directory.current().people if person.role is Role.CUSTOMER), None)
    if customer is None:
        raise ConfigurationError(
            WorkerErrorCode.DIRECTORY_HAS_NO_CUSTOMER,
            f"The directory at {directory.location} lists no customer to check with.",
        )
    return customer.identity()


Answer = TypeVar("Answer", bound=BaseModel)


def answer_as(model: type[Answer], result: dict[str, Any], what: str) -> Answer:
    """A commerce server's answer as ``model``; a malformed one is transient: the write behind it may have
    run, and a retry under the same idempotency key returns the stored answer, never a second write."""
    try:
        return model.model_validate(result)
    except ValidationError as exc:
        raise TransientError(WorkerErrorCode.INVALID_COMMERCE_RESPONSE, f"The {what} was malformed; retrying.") from exc


def call_timed_out(tool: str) -> TransientError:
    """The transient error of a commerce call that got no answer in time (its session is not reused)."""
    return TransientError(TIMED_OUT, f"The commerce server did not answer {tool} within {CALL_TIMEOUT_SECONDS:.0f}s.")


class CommerceCaller(Protocol):
    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]: ...

    async def list_tools(self) -> list[Any]: ...

    async def read_resource(self, uri: str) -> str: ...


@dataclass(frozen=True)
class CommerceCheck:
    """What a worker learnt about its commerce server at start."""

    description: str
    ledger_id: str | None
    """The id of the commerce database the server uses (see ``contracts.commerce.RefundProposal``)."""


async def describe_commerce(client: CommerceCaller, transport: str) -> CommerceCheck:
    """The tool count and the ledger id of a connected commerce server."""
    tools = await client.list_tools()
    scope = json.loads(await client.read_resource(SCOPE_RESOURCE_URI))
    ledger = scope.get("ledger_id")
    return CommerceCheck(f"commerce server {transport} ({len(tools)} tools, ledger {ledger})", ledger)


class CommerceGateway(Protocol):
    """What activities call: the stdio pool here, or the HTTP caller of activities.commerce.commerce_http."""

    async def call(
        self, identity: Identity, tool: str, arguments: dict[str, Any], *, case_id: str
    ) -> dict[str, Any]: ...

    async def check(self) -> CommerceCheck:
        """Reach the commerce server once (at worker start); a :class:`ConfigurationError` if it cannot."""
        ...

    async def aclose(self) -> None: ...


SessionOpener = Callable[[str], AbstractAsyncContextManager[CommerceCaller]]
"""Given a profile name, an async context manager that yields a connected client."""


class _OwnedSession:
    """A session entered, held and exited by its own owner task.

    The MCP client's context managers open anyio task groups and cancel scopes, which must be exited by
    the same task that entered them; an activity task comes and goes, so it can never own a session.
    The owner task enters the session with an :class:`contextlib.AsyncExitStack`, publishes the client,
    waits until asked to stop, and then exits the stack itself. Activities only send requests over the
    session.
    """

    def __init__(self, profile: str, opener: SessionOpener) -> None:
        self.profile = profile
        self._opener = opener
        self._stop = asyncio.Event()
        self.ready: asyncio.Future[CommerceCaller] = asyncio.get_running_loop().create_future()
        # Nobody may be waiting when opening fails (the opener was cancelled); mark it retrieved.
        self.ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.owner = asyncio.create_task(self._own(), name=f"commerce-session-{profile}")

    @property
    def usable(self) -> bool:
        return not self._stop.is_set() and not self.owner.done()

    def stop(self) -> None:
        """Ask the owner task to exit the session; it closes the server process itself."""
        self._stop.set()

    async def _own(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(self._opener(self.profile))
                self.ready.set_result(client)
                await self._stop.wait()
        except asyncio.CancelledError:
            self._fail(TransientError(UNAVAILABLE, "The commerce session was cancelled while opening."))
            raise
        except Exception as exc:
            if self.ready.done():
                logger.warning("commerce session for %s ended: %s", self.profile, _describe(exc))
            self._fail(exc)
        finally:
            self._stop.set()

    def _fail(self, exc: BaseException) -> None:
        if not self.ready.done():
            self.ready.set_exception(exc)


class CommerceSessionPool:
    """Keeps one MCP stdio session to the commerce server per profile and routes calls to it.

    A session whose transport failed (the server process died, a pipe broke) is dropped and told to
    close; the failure surfaces as a ``TransientError`` (``COMMERCE_UNAVAILABLE``) so that Temporal
    retries the activity, and the retry opens a fresh session.
    """

    def __init__(
        self,
        state_dir: Path,
        database_url: str | None = None,
        *,
        opener: SessionOpener | None = None,
        directory: DirectorySource | None = None,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.database_url = database_url
        self.directory = directory or DirectorySource(directory_location(self.state_dir))
        """The worker's own copy of the directory: every call is for a person it lists, exactly."""
        self._opener = opener or self._open_stdio
        self._sessions: dict[str, _OwnedSession] = {}
        self._owners: set[asyncio.Task[None]] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed = False

    async def call(self, identity: Identity, tool: str, arguments: dict[str, Any], *, case_id: str) -> dict[str, Any]:
        """Call ``tool`` on the commerce server acting as ``identity``.

        ``case_id`` is accepted for parity with :class:`activities.commerce.commerce_http.CommerceHttpCaller`,
        whose tokens name the case; a stdio session is bound to its profile at start instead.

        Typed commerce errors pass through unchanged. A transport failure drops the session and
        raises a ``TransientError`` (``COMMERCE_UNAVAILABLE``); a call without an answer within
        ``CALL_TIMEOUT_SECONDS`` drops it too (``commerce_timeout``). The next call opens a fresh session.
        """
        profile = self.directory.current().check_listed(identity)
        session = await self._session(profile)
        client = session.ready.result()
        try:
            async with asyncio.timeout(CALL_TIMEOUT_SECONDS):
                return await client.call(tool, arguments)
        except TimeoutError:
            # A hung (not dead) server: this session is never used again; the retry opens a new one.
            self._drop(session)
            raise call_timed_out(tool) from None
        except TransientError as error:
            if error.code == UNAVAILABLE:
                self._drop(session)
            raise
        except SupportError:
            raise
        except Exception as exc:
            self._drop(session)
            raise TransientError(
                UNAVAILABLE, f"The commerce session failed ({_describe(exc)}); a retry opens a new one."
            ) from exc

    async def check(self) -> CommerceCheck:
        """Start a commerce server over stdio once, read its tools and ledger and stop it again: a database
        or installation problem refuses the worker's start instead of failing every case."""
        probe = startup_probe(self.directory)
        try:
            async with self._opener(probe.subject) as client:
                return await describe_commerce(client, "over stdio, one process per profile")
        except Exception as error:
            raise ConfigurationError(
                UNAVAILABLE, f"the commerce server did not start over stdio ({_describe(error)})"
            ) from None

    def live_profiles(self) -> list[str]:
        """Profiles with a session that is open or opening (for logs and tests)."""
        return sorted(profile for profile, session in self._sessions.items() if session.usable)

    async def aclose(self) -> None:
        """Close every session and wait (bounded) for their server processes to stop."""
        self._closed = True
        for session in list(self._sessions.values()):
            self._drop(session)
        owners = list(self._owners)
        if not owners:
            return
        _, pending = await asyncio.wait(owners, timeout=CLOSE_TIMEOUT_SECONDS)
        for task in pending:
            logger.warning("commerce session task %s did not stop in time; cancelling it", task.get_name())
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=CLOSE_TIMEOUT_SECONDS)

    async def __aenter__(self) -> CommerceSessionPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _session(self, profile: str) -> _OwnedSession:
        lock = self._locks.setdefault(profile, asyncio.Lock())
        async with lock:
            if self._closed:
                raise TransientError(UNAVAILABLE, "The worker is shutting down its commerce sessions.")
            session = self._sessions.get(profile)
            if session is None or not session.usable:
                if session is not None:
                    self._drop(session)
                session = self._start(profile)
            try:
                # Shielded: if this caller is cancelled, the session keeps opening for the next one.
                await asyncio.shield(session.ready)
            except asyncio.CancelledError:
                raise
            except SupportError:
                self._drop(session)
                raise
            except Exception as exc:
                self._drop(session)
                raise TransientError(UNAVAILABLE, f"Could not open a commerce session ({_describe(exc)}).") from exc
            return session

    def _start(self, profile: str) -> _OwnedSession:
        session = _OwnedSession(profile, self._opener)
        self._sessions[profile] = session
        self._owners.add(session.owner)
        session.owner.add_done_callback(self._owners.discard)
        logger.info("opening a commerce session for %s", profile)
        return session

    def _drop(self, session: _OwnedSession) -> None:
        if self._sessions.get(session.profile) is session:
            del self._sessions[session.profile]
        session.stop()

    def _open_stdio(self, profile: str) -> AbstractAsyncContextManager[CommerceCaller]:
        from activities.commerce.commerce_client import open_stdio_client

        return open_stdio_client(profile, self.state_dir, database_url=self.database_url)


class TracedCommerce:
    """A commerce gateway whose every tool call is an OpenTelemetry CLIENT span ``commerce <tool>``.

    worker.py wraps its gateway in one only when tracing is on (see case_tracing.py). The MCP SDK
    carries the span's context to the commerce server in the request's ``_meta`` (``traceparent``).
    """

    def __init__(self, gateway: CommerceGateway, tracer: Tracer) -> None:
        self.gateway = gateway
        self._tracer = tracer

    async def call(self, identity: Identity, tool: str, arguments: dict[str, Any], *, case_id: str) -> dict[str, Any]:
        attributes = {"mcp.method.name": "tools/call", "gen_ai.tool.name": tool, "support.case_id": case_id}
        name = f"commerce {tool}"
        with self._tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes) as span:
            try:
                return await self.gateway.call(identity, tool, arguments, case_id=case_id)
            except SupportError as error:
                span.set_attribute("error.type", error.code)
                raise

    async def check(self) -> CommerceCheck:
        return await self.gateway.check()

    async def aclose(self) -> None:
        await self.gateway.aclose()


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

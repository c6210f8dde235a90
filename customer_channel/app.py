"""The channel's routes (:func:`endpoints`, one table that is both served and described in OpenAPI) and
:func:`build_app`, which takes everything the channel talks to, so a test builds it with its own.

Every answer is JSON except the chat page (static files), ``/openapi.json`` and the progress stream;
every refusal is a :class:`~customer_channel.bodies.Refusal`: a code and one sentence, never a trace.
The page is served with a content security policy that allows its own script and style only.
"""

from __future__ import annotations

import logging
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contracts.conversation import ConversationView, MessageAccepted
from customer_channel import api, demo, events
from customer_channel.backend import Conversations
from customer_channel.bodies import (
    ConversationStarted,
    DemoConfirmationRequest,
    DemoCustomer,
    DemoCustomers,
    DemoSignIn,
    DemoToken,
    DemoTokenRequest,
    Health,
    Refusal,
    SendMessage,
    StartConversation,
)
from customer_channel.channel import Channel, channel_of, channel_refusal, language_of
from customer_channel.config import ChannelConfig
from customer_channel.credentials import BearerVerifier
from customer_channel.openapi import Answer, Endpoint, openapi_document
from customer_channel.words import ChannelRefusal
from keystore.directory_file import DirectorySource
from keystore.signers import KeyFileSigner

HERE = Path(__file__).parent
STATIC = HERE / "static"
LOG = logging.getLogger("customer_channel")
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        b"img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


async def chat_page(request: Request) -> Response:
    """``GET /``: the chat page (its script reads everything else from the API)."""
    return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")


async def health(request: Request) -> Response:
    return JSONResponse(Health(status="ok", demo_sign_in=channel_of(request).config.demo_sign_in).model_dump())


async def openapi(request: Request) -> Response:
    document = request.app.state.openapi
    return JSONResponse(document)


REFUSED = {
    401: Answer("No credential (Authorization: Bearer ...).", Refusal),
    403: Answer("The credential does not verify, has expired, or is for another conversation.", Refusal),
    413: Answer("The body is over 16 KB, or the text over its limit.", Refusal),
    422: Answer("The body is not what this route takes.", Refusal),
    429: Answer("Too many requests from this customer (Retry-After says how long to wait).", Refusal),
    503: Answer("The support service cannot answer now.", Refusal),
}
READ_REFUSED = {status: REFUSED[status] for status in (401, 403, 429, 503)}
NOT_FOUND = {404: Answer("No such conversation, or another customer's.", Refusal)}


def endpoints(config: ChannelConfig) -> list[Endpoint]:
    """Every route the channel serves with ``config`` (the demo sign-in's only when it is on)."""
    table = [
        Endpoint("GET", "/", chat_page, "The web chat page.", {200: Answer("HTML", None, "text/html")}, tag="page"),
        Endpoint("GET", "/healthz", health, "Whether it serves.", {200: Answer("Serving.", Health)}, tag="meta"),
        Endpoint("GET", "/openapi.json", openapi, "This description.", {200: Answer("OpenAPI 3.1.")}, tag="meta"),
        Endpoint(
            "POST",
            "/v1/conversations",
            api.start_conversation,
            "Start a conversation: the first message is the case's question.",
            {
                201: Answer("Started (or, sent again, the case it started).", ConversationStarted),
                409: Answer("This credential already started a conversation with another message.", Refusal),
                **REFUSED,
            },
            body=StartConversation,
            bearer=True,
            headers=(
                (
                    "Idempotency-Key",
                    "With an outside issuer's token: the same key (8-64 of A-Z a-z 0-9 _ -) starts the same case.",
                ),
            ),
        ),
        Endpoint(
            "POST",
            "/v1/conversations/{case_id}/messages",
            api.send_message,
            "Write a further message to the conversation.",
            {
                202: Answer("The case took the message; its reply follows on the events stream.", MessageAccepted),
                409: Answer("The conversation is closed.", Refusal),
                **NOT_FOUND,
                **REFUSED,
            },
            body=SendMessage,
            bearer=True,
        ),
        Endpoint(
            "GET",
            "/v1/conversations/{case_id}",
            api.read_conversation,
            "The transcript, for the case's own customer.",
            {200: Answer("The transcript.", ConversationView), **NOT_FOUND, **READ_REFUSED},
            bearer=True,
        ),
        Endpoint(
            "GET",
            "/v1/conversations/{case_id}/events",
            events.progress_events,
            "The case's progress as Server-Sent Events (event: progress, id: offset; event: end).",
            {
                200: Answer("text/event-stream; each data line is a ProgressItem.", media_type="text/event-stream"),
                422: Answer("Last-Event-ID is not an offset.", Refusal),
                **NOT_FOUND,
                **READ_REFUSED,
            },
            bearer=True,
            headers=(("Last-Event-ID", "The last offset received: the stream resumes after it."),),
        ),
    ]
    if config.demo_sign_in:
        demo_refused = {404: Answer("No such customer in the demo directory.", Refusal), 422: REFUSED[422]}
        table += [
            Endpoint(
                "GET",
                "/demo/customers",
                demo.demo_customers,
                "Demo sign-in: the demo directory's customers.",
                {200: Answer("The customers.", DemoCustomers)},
                tag="demo sign-in",
            ),
            Endpoint(
                "POST",
                "/demo/sign-in",
                demo.demo_sign_in,
                "Demo sign-in: a customer of the demo directory, by name.",
                {200: Answer("The customer.", DemoCustomer), **demo_refused},
                body=DemoSignIn,
                tag="demo sign-in",
            ),
            Endpoint(
                "POST",
                "/demo/token",
                demo.demo_token,
                "Demo sign-in: an applicant token for the customer and case (a fresh case id when none).",
                {200: Answer("A bearer credential.", DemoToken), **demo_refused},
                body=DemoTokenRequest,
                tag="demo sign-in",
            ),
            Endpoint(
                "POST",
                "/demo/confirmation",
                demo.demo_confirmation,
                "Demo sign-in: the customer's signed yes to one action proposal (its digest) of one case.",
                {200: Answer("A confirmation for the message that says yes.", DemoToken), **demo_refused},
                body=DemoConfirmationRequest,
                tag="demo sign-in",
            ),
        ]
    return table


async def _no_such_page(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 404
    return channel_refusal(ChannelRefusal.NO_SUCH_PAGE, language_of(request), status).response


async def _failed(request: Request, exc: Exception) -> Response:
    LOG.error("%s %s failed: %s", request.method, request.url.path, type(exc).__name__)
    return channel_refusal(ChannelRefusal.UNAVAILABLE, language_of(request), 500).response


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every response (plain ASGI: the progress stream is not buffered)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, sending)


def build_app(
    conversations: Conversations,
    directory: DirectorySource,
    config: ChannelConfig,
    *,
    verifier: BearerVerifier | None = None,
    signer: KeyFileSigner | None = None,
) -> Starlette:
    """The channel as an ASGI app (serve it with uvicorn, or call it through Starlette's TestClient).
    ``signer`` signs the demo sign-in's tokens; it is needed, and used, only with ``config.demo_sign_in``."""
    table = endpoints(config)
    routes: list[Route | Mount] = [
        Route(endpoint.path, endpoint.handler, methods=[endpoint.method]) for endpoint in table
    ]
    routes.append(Mount("/static", StaticFiles(directory=STATIC), name="static"))
    app = Starlette(
        routes=routes,
        middleware=[Middleware(SecurityHeaders)],
        exception_handlers={HTTPException: _no_such_page, Exception: _failed},
    )
    app.state.channel = Channel(
        conversations=conversations,
        verifier=verifier or BearerVerifier(directory),
        directory=directory,
        config=config,
        signer=signer if config.demo_sign_in else None,
    )
    app.state.openapi = openapi_document(table)
    return app

"""The console's HTTP plumbing: security headers on every response, the session cookie, and the CSRF
check every POST passes before its handler runs.

Every visitor holds a session (an anonymous one until sign-in) so that every POST, sign-in and
enrollment included, carries that session's CSRF token: in the ``X-CSRF-Token`` header (console.js
sends it with each fetch) or a form's hidden ``csrf_token`` field. The cookie is HttpOnly and
SameSite=Strict, Secure (and ``__Host-`` named) when the console is served over https.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp

from reviewer_console.config import ConsoleConfig
from reviewer_console.store import SESSION_TTL, ActiveSession, ConsoleStore

CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}
CSRF_REFUSED = "This request lacks the page's security token; reload the page and try again."
Handler = Callable[[Request], Awaitable[Response]]


def cookie_name(config: ConsoleConfig) -> str:
    return "__Host-console_session" if config.secure else "console_session"


def now_utc() -> datetime:
    return datetime.now(UTC)


def set_session_cookie(response: Response, config: ConsoleConfig, session_id: str) -> None:
    response.set_cookie(
        cookie_name(config),
        session_id,
        max_age=int(SESSION_TTL.total_seconds()),
        path="/",
        httponly=True,
        samesite="strict",
        secure=config.secure,
    )


def clear_session_cookie(response: Response, config: ConsoleConfig) -> None:
    response.delete_cookie(cookie_name(config), path="/", httponly=True, samesite="strict", secure=config.secure)


def session_of(request: Request) -> ActiveSession:
    """The request's session, resolved (or made) by :class:`ConsoleMiddleware`."""
    session: ActiveSession = request.state.session
    return session


class ConsoleMiddleware(BaseHTTPMiddleware):
    """Resolves the session (making an anonymous one when there is none) and adds the security headers."""

    def __init__(self, app: ASGIApp, *, store: ConsoleStore, config: ConsoleConfig) -> None:
        super().__init__(app)
        self.store = store
        self.config = config

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        now = now_utc()
        session = self.store.session(request.cookies.get(cookie_name(self.config)), now=now)
        fresh = None
        if session is None and not request.url.path.startswith("/static/"):
            fresh = self.store.create_session(None, now=now)
            session = self.store.session(fresh.session_id, now=now)
        request.state.session = session
        response = await call_next(request)
        if fresh is not None and not getattr(request.state, "session_replaced", False):
            set_session_cookie(response, self.config, fresh.session_id)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response


async def csrf_ok(request: Request) -> bool:
    """Whether the request carries its session's CSRF token (header, else form field), compared in
    constant time."""
    session: ActiveSession | None = getattr(request.state, "session", None)
    if session is None:
        return False
    sent = request.headers.get(CSRF_HEADER)
    if sent is None and request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        form = await request.form()
        value = form.get(CSRF_FIELD)
        sent = value if isinstance(value, str) else None
    return sent is not None and hmac.compare_digest(sent.encode("utf-8"), session.csrf_token.encode("utf-8"))


def csrf_protected(handler: Handler) -> Handler:
    """``handler`` behind the CSRF check: a request without its session's token gets 403 and one sentence."""

    async def guarded(request: Request) -> Response:
        if not await csrf_ok(request):
            return JSONResponse({"ok": False, "message": CSRF_REFUSED}, status_code=403)
        return await handler(request)

    guarded.__name__ = handler.__name__
    guarded.__doc__ = handler.__doc__
    return guarded

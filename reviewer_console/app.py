"""The reviewer console's routes: :func:`build_app` takes everything it talks to (the case client, the
directory source, the console store, the origin), so a test builds it with its own.

Pages (GET) render Jinja2 templates, autoescaped: model and customer text is data, never markup. The
ceremony endpoints (POST, JSON, CSRF-checked) are in :mod:`reviewer_console.actions`. Every answer a
person reads is one sentence, never a stack trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from contracts.directory import Person
from contracts.errors import AuthorizationError, ConfigurationError, SupportError
from contracts.identity import Role
from keystore.directory_file import DirectorySource
from keystore.enrollment import verify_enrollment_token
from knowledge.store import KnowledgeBase, default_knowledge_base
from reviewer_console import actions
from reviewer_console.config import ConsoleConfig
from reviewer_console.reading import CaseSource, case_page, inbox
from reviewer_console.store import ConsoleStore
from reviewer_console.web import (
    ConsoleMiddleware,
    clear_session_cookie,
    csrf_protected,
    now_utc,
    session_of,
)

HERE = Path(__file__).parent
NO_SUCH_CASE = "No such case."
OLD_LINK = (
    "This enrollment link is of an old form that puts its secret in the address, where server and proxy logs "
    "keep it, so it has been cancelled; nothing was enrolled. Ask for a new link (starter.py directory enroll)."
)
INBOX_REFRESH_SECONDS = 10


@dataclass
class Console:
    """What every route needs: the case client, the directory, the store, the settings, the templates."""

    cases: CaseSource
    directory: DirectorySource
    store: ConsoleStore
    config: ConsoleConfig
    knowledge: KnowledgeBase
    templates: Jinja2Templates

    def page(self, request: Request, name: str, status_code: int = 200, **context: Any) -> Response:
        session = session_of(request)
        context = {
            "csrf_token": session.csrf_token if session else "",
            "reviewer": self.reviewer(request),
            "refresh_seconds": INBOX_REFRESH_SECONDS,
            **context,
        }
        return self.templates.TemplateResponse(request, name, context, status_code=status_code)

    def message(self, request: Request, text: str, *, status_code: int, title: str = "Reviewer console") -> Response:
        return self.page(request, "message.html", status_code=status_code, title=title, text=text)

    def reviewer(self, request: Request) -> Person | None:
        """The signed-in reviewer, as the directory lists them now (a person removed or no longer a
        reviewer is signed out by this)."""
        session = session_of(request)
        if session is None or session.subject is None:
            return None
        try:
            person = self.directory.current().person(session.subject)
        except ConfigurationError:
            return None
        return person if person is not None and person.role is Role.REVIEWER else None


def _console(request: Request) -> Console:
    console: Console = request.app.state.console
    return console


async def inbox_page(request: Request) -> Response:
    console = _console(request)
    person = console.reviewer(request)
    if person is None:
        return RedirectResponse("/signin", status_code=303)
    try:
        rows = await inbox(console.cases, person.identity(), now=now_utc(), start_hint=console.config.start_hint)
    except SupportError as error:
        return console.message(request, error.message, status_code=503)
    return console.page(request, "inbox.html", rows=rows, tenant=person.tenant)


async def inbox_rows(request: Request) -> Response:
    """The inbox table alone: console.js fetches it every 10 s and swaps it in."""
    console = _console(request)
    person = console.reviewer(request)
    if person is None:
        return console.message(request, "Your session has ended; sign in again.", status_code=401)
    try:
        rows = await inbox(console.cases, person.identity(), now=now_utc(), start_hint=console.config.start_hint)
    except SupportError as error:
        return console.message(request, error.message, status_code=503)
    return console.page(request, "inbox_rows.html", rows=rows)


async def case_detail(request: Request) -> Response:
    console = _console(request)
    person = console.reviewer(request)
    if person is None:
        return RedirectResponse("/signin", status_code=303)
    case_id = request.path_params["case_id"]
    handle = console.cases.open(case_id)
    try:
        view = await handle.read(person.identity(), start_hint=console.config.start_hint)
        events = await handle.events()
    except AuthorizationError:
        return console.message(request, NO_SUCH_CASE, status_code=404, title="No such case")
    except SupportError as error:
        return console.message(request, error.message, status_code=503)
    policy_tenant = console.directory.current().policy_tenant(view.tenant)
    details = case_page(view, events, console.knowledge, policy_tenant=policy_tenant)
    return console.page(request, "case.html", case=details)


async def signin_page(request: Request) -> Response:
    console = _console(request)
    if console.reviewer(request) is not None:
        return RedirectResponse("/", status_code=303)
    return console.page(request, "signin.html")


@csrf_protected
async def signout(request: Request) -> Response:
    console = _console(request)
    session = session_of(request)
    console.store.end_session(session.session_hash)
    response = RedirectResponse("/signin", status_code=303)
    clear_session_cookie(response, console.config)
    return response


async def enroll_page(request: Request) -> Response:
    """The enrollment page. A link (``starter.py directory enroll``) is ``/enroll#token=...``: the token
    is in the fragment, which a browser never sends, so no server, proxy or log on the way sees it; the
    page's script posts it to ``/enroll/claim``, which claims the link for this browser session. A link
    of the old form, ``/enroll?token=...``, has put its token in the request line, where logs keep it:
    it is refused and, unless already used, cancelled (marked used), so a copy from a log enrolls nobody."""
    console = _console(request)
    if "token" in request.query_params:
        return _old_link(console, request, request.query_params["token"])
    if actions.published_at_url(console.directory.location):
        return console.message(request, actions.directory_not_writable(console.directory.location), status_code=400)
    return console.page(request, "enroll.html")


def _old_link(console: Console, request: Request, token: str) -> Response:
    now = now_utc()
    try:
        claims = verify_enrollment_token(token, console.directory.current(), now=now)
    except SupportError as error:
        return console.message(request, f"This enrollment link cannot be used: {error.message}", status_code=400)
    if not console.store.use_enrollment(claims.jti, claims.sub, now=now):
        return console.message(request, actions.LINK_USED, status_code=400)
    return console.message(request, OLD_LINK, status_code=400)


def build_app(
    cases: CaseSource,
    directory: DirectorySource,
    store: ConsoleStore,
    config: ConsoleConfig,
    *,
    knowledge: KnowledgeBase | None = None,
) -> Starlette:
    """The console as an ASGI app (serve it with uvicorn, or call it through httpx2's ASGI transport)."""
    environment = Environment(
        loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True), auto_reload=False
    )
    console = Console(
        cases=cases,
        directory=directory,
        store=store,
        config=config,
        knowledge=knowledge or default_knowledge_base(),
        templates=Jinja2Templates(env=environment),
    )
    routes = [
        Route("/", inbox_page),
        Route("/inbox/rows", inbox_rows),
        Route("/cases/{case_id}", case_detail),
        Route("/cases/{case_id}/review/options", actions.review_options_endpoint, methods=["POST"]),
        Route("/cases/{case_id}/review/finish", actions.review_finish_endpoint, methods=["POST"]),
        Route("/signin", signin_page),
        Route("/signin/options", actions.signin_options_endpoint, methods=["POST"]),
        Route("/signin/finish", actions.signin_finish_endpoint, methods=["POST"]),
        Route("/signout", signout, methods=["POST"]),
        Route("/enroll", enroll_page),
        Route("/enroll/claim", actions.enroll_claim_endpoint, methods=["POST"]),
        Route("/enroll/options", actions.enroll_options_endpoint, methods=["POST"]),
        Route("/enroll/finish", actions.enroll_finish_endpoint, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(ConsoleMiddleware, store=store, config=config)])
    app.state.console = console
    return app

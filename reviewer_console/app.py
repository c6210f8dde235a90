"""The reviewer console's routes: :func:`build_app` takes everything it talks to (the case client, the
directory source, the console store, the origin), so a test builds it with its own.

Pages (GET) render Jinja2 templates, autoescaped: model and customer text is data, never markup. The
ceremony endpoints (POST, JSON, CSRF-checked) are in :mod:`reviewer_console.actions`. Every answer a
person reads is one sentence, never a stack trace.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from contracts.directory import Person
from contracts.errors import AuthorizationError, SupportError, TransientError
from contracts.identity import Identity
from keystore.directory_file import DirectorySource
from keystore.enrollment import verify_enrollment_token
from knowledge.store import KnowledgeBase, default_knowledge_base
from reviewer_console import actions
from reviewer_console.config import ConsoleConfig
from reviewer_console.console import Console, console_of
from reviewer_console.reading import CaseReader, CaseSource, case_page, inbox, listed_row
from reviewer_console.store import ConsoleStore
from reviewer_console.web import (
    ConsoleMiddleware,
    clear_session_cookie,
    csrf_protected,
    now_utc,
    session_of,
)
from reviewer_console.words import LANGUAGE_COOKIE, Text, Words, parse_language

HERE = Path(__file__).parent
OLD_LINK = (
    "This enrollment link is of an old form that puts its secret in the address, where server and proxy logs "
    "keep it, so it has been cancelled; nothing was enrolled. Ask for a new link (starter.py directory enroll)."
)


async def inbox_page(request: Request) -> Response:
    console = console_of(request)
    person = console.reviewer(request)
    if person is None:
        return RedirectResponse("/signin", status_code=303)
    return await _inbox_response(console, request, person, "inbox.html")


async def inbox_rows(request: Request) -> Response:
    """The inbox table alone: console.js fetches it every 10 s and swaps it in."""
    console = console_of(request)
    person = console.reviewer(request)
    if person is None:
        return console.message(request, console.words(request)(Text.SIGNED_OUT), status_code=401)
    return await _inbox_response(console, request, person, "inbox_rows.html")


async def _inbox_response(console: Console, request: Request, person: Person, template: str) -> Response:
    words = console.words(request)
    try:
        listed = await inbox(
            console.cases, person.identity(), now=now_utc(), start_hint=console.config.start_hint, words=words
        )
    except SupportError as error:
        return console.message(request, unavailable(words, error), status_code=503)
    return console.page(request, template, inbox=listed, tenant=person.tenant)


def unavailable(words: Words, error: SupportError) -> str:
    """What a reviewer reads when Temporal itself cannot be asked, the code as a detail after it."""
    return f"{words(Text.SERVICE_UNAVAILABLE)} ({words(Text.CODE)}: {error.code})"


async def case_detail(request: Request) -> Response:
    """The case page: read from the case; when no worker answers, the case as visibility lists it,
    its question from its history, and one sentence saying decisions wait."""
    console = console_of(request)
    person = console.reviewer(request)
    if person is None:
        return RedirectResponse("/signin", status_code=303)
    handle = console.cases.open(request.path_params["case_id"])
    identity = person.identity()
    try:
        if await console.cases.workers_polling():
            view = await handle.read(identity, start_hint=console.config.start_hint, check_worker=False)
            events = await handle.events()
        else:
            return await _listed_case_page(console, request, handle, identity)
    except AuthorizationError:
        return console.message(request, console.words(request)(Text.NO_SUCH_CASE), status_code=404)
    except TransientError:
        return await _listed_case_page(console, request, handle, identity)
    except SupportError as error:
        return console.message(request, unavailable(console.words(request), error), status_code=503)
    words = console.words(request, case_language=view.language)
    policy_tenant = console.directory.current().policy_tenant(view.tenant)
    details = case_page(
        view, events, console.knowledge, policy_tenant=policy_tenant, viewer=person.subject, now=now_utc(), words=words
    )
    return console.page(request, "case.html", case_language=view.language, case=details)


async def _listed_case_page(console: Console, request: Request, handle: CaseReader, identity: Identity) -> Response:
    try:
        summary = await handle.listed(identity)
        question = await handle.question()
    except AuthorizationError:
        return console.message(request, console.words(request)(Text.NO_SUCH_CASE), status_code=404)
    except SupportError as error:
        return console.message(request, unavailable(console.words(request), error), status_code=503)
    row = listed_row(summary, now=now_utc(), words=console.words(request))
    return console.page(request, "case_listed.html", summary=summary, row=row, question=question)


async def case_state(request: Request) -> Response:
    """What the case page follows (console.js asks every few seconds): the case's status, its digest
    and approvals, and whether a worker answers; the page reloads when any of them changes."""
    console = console_of(request)
    person = console.reviewer(request)
    if person is None:
        return JSONResponse({"signed_in": False}, status_code=401)
    handle = console.cases.open(request.path_params["case_id"])
    try:
        if not await console.cases.workers_polling():
            return JSONResponse({"signed_in": True, "serving": False})
        view = await handle.read(person.identity(), start_hint=console.config.start_hint, check_worker=False)
    except AuthorizationError:
        return JSONResponse({"signed_in": True, "found": False}, status_code=404)
    except SupportError:
        return JSONResponse({"signed_in": True, "serving": False})
    approved = len(view.effect.approved_by) if view.effect else 0
    return JSONResponse(
        {
            "signed_in": True,
            "serving": True,
            "status": view.status.value,
            "digest": view.digest or "",
            "approved": approved,
        }
    )


@csrf_protected
async def choose_language_endpoint(request: Request) -> Response:
    """The header's language switch (a form POST): kept in a cookie; back to the page it was on."""
    form = await request.form()
    chosen = parse_language(str(form.get("language") or ""))
    back = str(form.get("next") or "/")
    if not back.startswith("/") or back.startswith("//") or "\\" in back:
        back = "/"
    response = RedirectResponse(back, status_code=303)
    if chosen is not None:
        response.set_cookie(
            LANGUAGE_COOKIE,
            chosen.value,
            max_age=365 * 86400,
            path="/",
            samesite="strict",
            secure=console_of(request).config.secure,
        )
    return response


async def signin_page(request: Request) -> Response:
    console = console_of(request)
    if console.reviewer(request) is not None:
        return RedirectResponse("/", status_code=303)
    return console.page(request, "signin.html")


@csrf_protected
async def signout(request: Request) -> Response:
    console = console_of(request)
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
    console = console_of(request)
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
        Route("/cases/{case_id}/state", case_state),
        Route("/language", choose_language_endpoint, methods=["POST"]),
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

"""What every route of the console needs, in one value: the routes of :mod:`reviewer_console.app` and
the ceremony endpoints of :mod:`reviewer_console.actions` both take it from the request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from contracts.directory import Person
from contracts.errors import ConfigurationError
from contracts.identity import Role
from contracts.knowledge import Language
from keystore.directory_file import DirectorySource
from knowledge.store import KnowledgeBase
from reviewer_console.config import ConsoleConfig
from reviewer_console.reading import CaseSource
from reviewer_console.store import ConsoleStore
from reviewer_console.web import session_of
from reviewer_console.words import LANGUAGE_COOKIE, Text, Words, choose_language

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

    def page(
        self,
        request: Request,
        name: str,
        status_code: int = 200,
        *,
        case_language: Language | None = None,
        **context: Any,
    ) -> Response:
        session = session_of(request)
        words = self.words(request, case_language=case_language)
        context = {
            "csrf_token": session.csrf_token if session else "",
            "reviewer": self.reviewer(request),
            "refresh_seconds": INBOX_REFRESH_SECONDS,
            "words": words,
            "Text": Text,
            "language": words.language.value,
            "client_texts": words.client_texts(),
            "here": request.url.path,
            **context,
        }
        return self.templates.TemplateResponse(request, name, context, status_code=status_code)

    def words(self, request: Request, *, case_language: Language | None = None) -> Words:
        """The reviewer's language choice (the header switch), else the case's, else English."""
        return Words(choose_language(request.cookies.get(LANGUAGE_COOKIE), case_language=case_language))

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


def console_of(request: Request) -> Console:
    """The console the app was built with (:func:`reviewer_console.app.build_app` keeps it in its state)."""
    console: Console = request.app.state.console
    return console

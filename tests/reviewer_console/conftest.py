"""The console tests' own state dir (the demo directory and keys, never the session's ``SUPPORT_DIRECTORY``)
and the app every ASGI test talks to: the case client's test double with one qinghe and one south case."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from starlette.applications import Starlette

from keystore import DIRECTORY_ENV, create_demo_directory, directory_location
from keystore.directory_file import DirectorySource
from reviewer_console import ConsoleConfig, ConsoleStore, build_app
from tests.reviewer_console.console_browser import ORIGIN
from tests.reviewer_console.console_double import CaseSourceDouble, waiting_view


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(DIRECTORY_ENV, raising=False)
    create_demo_directory(tmp_path)
    return tmp_path


@pytest.fixture
def cases() -> CaseSourceDouble:
    return CaseSourceDouble(waiting_view("c0ffee000001"), waiting_view("50u7h0000001", tenant="south", applicant="bob"))


@pytest.fixture
def store(state_dir: Path) -> ConsoleStore:
    return ConsoleStore.in_state_dir(state_dir)


@pytest.fixture
def app(state_dir: Path, cases: CaseSourceDouble, store: ConsoleStore) -> Starlette:
    return build_app(cases, DirectorySource(directory_location(state_dir)), store, ConsoleConfig.for_origin(ORIGIN))


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=ORIGIN) as http:
        yield http

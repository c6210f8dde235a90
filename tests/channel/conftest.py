"""The channel tests' own state dir (the demo directory and keys, never the session's
``SUPPORT_DIRECTORY``), the app built on the cases' test double, and an ASGI client of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from starlette.applications import Starlette

from customer_channel import ChannelConfig, build_app
from keystore import DIRECTORY_ENV, create_demo_directory, directory_location
from keystore.directory_file import DirectorySource
from keystore.signers import KeyFileSigner
from tests.channel.channel_double import ConversationsDouble

BASE = "http://channel.test"


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(DIRECTORY_ENV, raising=False)
    create_demo_directory(tmp_path)
    return tmp_path


@pytest.fixture
def signer(state_dir: Path) -> KeyFileSigner:
    return KeyFileSigner(state_dir)


@pytest.fixture
def cases() -> ConversationsDouble:
    return ConversationsDouble()


@pytest.fixture
def config() -> ChannelConfig:
    return ChannelConfig()


@pytest.fixture
def app(state_dir: Path, cases: ConversationsDouble, config: ChannelConfig, signer: KeyFileSigner) -> Starlette:
    return build_app(cases, DirectorySource(directory_location(state_dir)), config, signer=signer)


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE) as http:
        yield http

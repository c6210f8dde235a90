"""Fixtures for the adversarial suite (helpers in ``adversary.py``, the endpoint in ``provider.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.adversarial.adversary import ScriptedWorld, scripted_world
from tests.adversarial.provider import ScriptedProvider


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider() as scripted:
        yield scripted


@pytest.fixture
async def adversary(
    temporal_client: Client, tmp_path: Path, provider: ScriptedProvider
) -> AsyncIterator[ScriptedWorld]:
    async with scripted_world(temporal_client, tmp_path / "state", provider) as world:
        yield world

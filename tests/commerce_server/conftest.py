"""Every commerce server built in these tests, in-process or spawned, checks approvals with the
session's demo directory and signs receipts with its demo commerce key."""

from __future__ import annotations

import pytest

from tests.conftest import DemoKeys


@pytest.fixture(autouse=True)
def commerce_keys_environment(demo_keys: DemoKeys, monkeypatch: pytest.MonkeyPatch) -> None:
    """``COMMERCE_DIRECTORY`` / ``COMMERCE_SIGNING_KEY`` for services built in-process."""
    for name, value in demo_keys.commerce_environment().items():
        monkeypatch.setenv(name, value)

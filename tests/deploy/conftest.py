"""Fixtures of the deploy tests: the parsed compose file, what the worker and the commerce server
read from the environment, and the environment table of docs/deployment.md."""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.compose_model import DEPLOYMENT_DOC, load_compose
from tests.deploy.env_reads import COMMERCE_ENTRY, NOT_READ, WORKER_ENTRY, env_table, reads_of


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose()


@pytest.fixture(scope="module")
def worker_reads() -> set[str]:
    return reads_of(WORKER_ENTRY)


@pytest.fixture(scope="module")
def commerce_reads() -> set[str]:
    found = reads_of(COMMERCE_ENTRY)
    assert NOT_READ["commerce"] <= found, "NOT_READ names a variable the scanner no longer finds: drop it"
    return found - NOT_READ["commerce"]


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, Any]]:
    return env_table(DEPLOYMENT_DOC.read_text(encoding="utf-8"))

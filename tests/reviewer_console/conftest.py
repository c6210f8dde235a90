"""The console tests' own state dir: the demo directory and keys, never the session's ``SUPPORT_DIRECTORY``."""

from __future__ import annotations

from pathlib import Path

import pytest

from keystore import DIRECTORY_ENV, create_demo_directory


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(DIRECTORY_ENV, raising=False)
    create_demo_directory(tmp_path)
    return tmp_path

"""Helpers for workflow tests (``history_text`` lives in ``tests/case_world.py``, shared with other suites)."""

from __future__ import annotations

from tests.case_world import history_text

__all__ = ["history_text"]

"""Tests mirroring the project tree; helpers are imported by full path (tests.x.y)."""

"""The releases whose histories tests/histories holds, read from files that are only ever added.

``releases.json`` lists the releases up to when it was written; each release cut since adds
``releases.d/<release>.json`` (its note, and the pins that freeze the earlier release it replaces at its
tag and commit). Nothing is edited: a manifest is part of the histories' contract with the cases in
flight, so it grows by files, as the histories do.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST_FILE = "releases.json"
ADDED_RELEASES_DIR = "releases.d"
_VERSION = re.compile(r"^v(\d+)\.(\d+)$")


@dataclass(frozen=True)
class ReleaseEntry:
    """A release: its name (its histories folder), and the tag and commit of its code (None: this tree)."""

    name: str
    tag: str | None
    commit: str | None
    note: str


def release_entries(histories: Path) -> dict[str, ReleaseEntry]:
    """Every release, oldest first: ``releases.json``'s, then each ``releases.d`` file's in version order,
    with its pins applied. A pin of an unknown release, or of one already pinned, is a ValueError: a
    release's code never changes once named."""
    entries = {name: _entry(name, raw) for name, raw in _read(histories / MANIFEST_FILE).items()}
    added = sorted((histories / ADDED_RELEASES_DIR).glob("v*.json"), key=lambda path: _version(path.stem))
    for path in added:
        raw = _read(path)
        for pinned, at in raw.get("pins", {}).items():
            earlier = entries.get(pinned)
            if earlier is None or earlier.commit is not None:
                raise ValueError(f"{path.name} pins {pinned}, which is not a current release before it")
            entries[pinned] = ReleaseEntry(pinned, at.get("tag"), at["commit"], earlier.note)
        entries[path.stem] = _entry(path.stem, raw)
    return entries


def _entry(name: str, raw: dict[str, Any]) -> ReleaseEntry:
    return ReleaseEntry(name, raw.get("tag"), raw.get("commit"), raw.get("note", ""))


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _version(name: str) -> tuple[int, int]:
    found = _VERSION.fullmatch(name)
    if found is None:
        raise ValueError(f"{ADDED_RELEASES_DIR}/{name}.json is not named for a release (vX.Y)")
    return int(found[1]), int(found[2])

"""The releases' manifest grows by added files only: releases.json as written, then one releases.d file per
release cut, which may pin the release it replaces; a pin cannot move a release's code once named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devstack.release_manifest import release_entries
from tests.release_code import HISTORIES


def _histories(tmp_path: Path, added: dict[str, dict[str, object]]) -> Path:
    (tmp_path / "releases.json").write_text(
        json.dumps({"v0.1": {"tag": "v0.1.0", "commit": "a" * 40}, "v0.2": {"tag": None, "commit": None}}),
        encoding="utf-8",
    )
    (tmp_path / "releases.d").mkdir()
    for name, entry in added.items():
        (tmp_path / "releases.d" / f"{name}.json").write_text(json.dumps(entry), encoding="utf-8")
    return tmp_path


def test_a_release_cut_pins_the_one_before_it_without_editing_anything(tmp_path: Path) -> None:
    pin = {"v0.2": {"tag": "v0.2.0", "commit": "b" * 40}}
    entries = release_entries(_histories(tmp_path, {"v0.10": {"note": "later", "pins": {}}, "v0.3": {"pins": pin}}))

    assert list(entries) == ["v0.1", "v0.2", "v0.3", "v0.10"]  # versions ordered as numbers, not text
    assert (entries["v0.2"].tag, entries["v0.2"].commit) == ("v0.2.0", "b" * 40)
    assert [name for name, entry in entries.items() if entry.commit is None] == ["v0.3", "v0.10"]


@pytest.mark.parametrize("pinned", ["v0.1", "v0.9"])
def test_a_pin_of_a_pinned_or_unknown_release_is_refused(tmp_path: Path, pinned: str) -> None:
    pins = {pinned: {"tag": None, "commit": "c" * 40}}
    with pytest.raises(ValueError, match=f"pins {pinned}, which is not a current release before it"):
        release_entries(_histories(tmp_path, {"v0.3": {"pins": pins}}))


def test_this_trees_manifest_pins_0_11_and_names_0_12_the_current_code() -> None:
    entries = release_entries(HISTORIES)
    assert (entries["v0.11"].tag, entries["v0.11"].commit) == ("v0.11.0", "ba87d0d1b5955624440d2561f79ded776474a69e")
    assert [name for name, entry in entries.items() if entry.commit is None] == ["v0.12"]

"""Each release's workflow code, as tests/histories names it (releases.json and the files added to
releases.d since: :mod:`devstack.release_manifest`), extracted from git history.

A release is resolved by its commit sha (tags may not travel with every clone); when its tag exists
here it must point at that commit. The code is extracted with ``git archive`` into a temporary folder,
once per test session and commit (:func:`extracted`). Without git, or without the commit in this
repository's history (an exported tree, a shallow clone), the test fails saying what is missing.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from devstack.release_manifest import release_entries

ROOT = Path(__file__).resolve().parents[1]
HISTORIES = ROOT / "tests" / "histories"
MANIFEST = HISTORIES / "releases.json"
REPLAY_SCRIPT = ROOT / "scripts" / "replay_histories.py"
SHA = re.compile(r"[0-9a-f]{40}")
_TREES: dict[str, Path] = {}
"""Extracted trees by commit, for the session (one process)."""


@dataclass(frozen=True)
class Release:
    """A release: its histories folder and the commit of its code (None: the current code of this tree)."""

    name: str
    tag: str | None
    commit: str | None

    @property
    def folder(self) -> Path:
        return HISTORIES / self.name

    def histories(self) -> list[Path]:
        return sorted(self.folder.glob("*.json"))


def releases() -> dict[str, Release]:
    """The manifest's releases, oldest first."""
    return {name: Release(name, entry.tag, entry.commit) for name, entry in release_entries(HISTORIES).items()}


def all_histories() -> list[Path]:
    """Every committed history, of every release the manifest names (the manifest's own files are none)."""
    return sorted(path for release in releases().values() for path in release.histories())


def current_release() -> Release:
    """The newest release whose code is this tree's (``commit`` null)."""
    current = [release for release in releases().values() if release.commit is None]
    assert current, f"{MANIFEST} names no release with commit null (the current code)"
    return current[-1]


def git(*args: str) -> bytes:
    """``git -C ROOT args``'s output; a missing git or a failed command fails the test with what is missing."""
    binary = shutil.which("git")
    if binary is None:
        pytest.fail("git is not installed: a release's code is extracted from this repository's history", pytrace=False)
    done = subprocess.run([binary, "-C", str(ROOT), *args], capture_output=True, timeout=120)
    if done.returncode != 0:
        pytest.fail(
            f"`git {' '.join(args)}` failed in {ROOT}: {done.stderr.decode(errors='replace').strip()}\n"
            f"A release's code is this repository's history at the commit {MANIFEST.name} names (an exported "
            "tree or a shallow clone lacks it: `git fetch --unshallow --tags`).",
            pytrace=False,
        )
    return done.stdout


def resolve(release: Release) -> str:
    """The release's commit, checked: present in this repository, and its tag (when here) pointing at it."""
    assert release.commit is not None, f"{release.name} is the current code: nothing to extract"
    assert SHA.fullmatch(release.commit), f"{release.name}: commit {release.commit!r} is not a 40-hex sha"
    commit = git("rev-parse", "--verify", "--end-of-options", f"{release.commit}^{{commit}}").decode().strip()
    assert commit == release.commit, (release.name, commit)
    if release.tag is not None and git("tag", "--list", release.tag).split():
        tagged = git("rev-parse", "--verify", f"refs/tags/{release.tag}^{{commit}}").decode().strip()
        assert tagged == commit, f"tag {release.tag} is {tagged}, but {MANIFEST.name} names {release.name} {commit}"
    return commit


def extract(commit: str, target: Path) -> Path:
    """``git archive commit`` extracted into ``target`` (created)."""
    target.mkdir(parents=True)
    archive = git("archive", "--format=tar", commit)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        tar.extractall(target, filter="data")
    return target


def extracted(release: Release, factory: pytest.TempPathFactory) -> Path:
    """The release's code in a temporary folder, extracted once per session (use from a session fixture)."""
    commit = resolve(release)
    if commit not in _TREES:
        _TREES[commit] = extract(commit, factory.mktemp(f"release-{release.name}") / "tree")
    return _TREES[commit]


def replay_in(tree: Path, *paths: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """scripts/replay_histories.py of THIS checkout, run with cwd and PYTHONPATH set to ``tree``."""
    command = [sys.executable, str(REPLAY_SCRIPT), "--tree", str(tree), "--json", *map(str, paths)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)

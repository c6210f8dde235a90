"""Reading and writing the support directory document (:class:`contracts.directory.Directory`).

``load_directory`` reads a file path or an https URL and refuses a bad document with one line that
names its first problem. Neither is read whole before it is judged: a file must be a regular file
(``directory_not_a_file``: ``/dev/zero``, a FIFO, a folder are refused before a byte is read) of at most
:data:`MAX_DIRECTORY_BYTES` (``directory_too_large``, from its size, and from reading at most one byte
past the cap, so a file that grows while it is read is caught too); a URL is fetched with one deadline
for the whole request, :data:`URL_DEADLINE_SECONDS` (``directory_too_slow``), and streamed to the same
cap (``directory_too_large``, whatever ``Content-Length`` says).

:class:`DirectorySource` is what a long-running process holds: it reloads a file when the file changes
and an https URL after :data:`URL_CACHE_SECONDS`, so a reviewer added, removed or re-keyed with
``starter.py directory`` counts from the next check on, without a restart.
"""

from __future__ import annotations

import http.client
import os
import stat
import threading
import time
from pathlib import Path

from pydantic import ValidationError

from contracts.directory import Directory
from contracts.errors import ConfigurationError
from keystore.bounded_fetch import FetchTooLarge, FetchTooSlow, fetch_bounded
from keystore.codes import KeystoreErrorCode

DIRECTORY_ENV = "SUPPORT_DIRECTORY"
DIRECTORY_FILE = "directory.json"
URL_CACHE_SECONDS = 60.0
"""How long a directory read from an https URL is used before it is fetched again."""
MAX_DIRECTORY_BYTES = 8 * 1024 * 1024
"""8 MiB: the most of a directory file or URL that is read (``directory_too_large`` past it)."""
URL_DEADLINE_SECONDS = 10.0
"""The whole fetch of a directory URL, connect to last byte (``directory_too_slow`` past it)."""
_FILE_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def _too_large(location: str) -> ConfigurationError:
    return ConfigurationError(
        KeystoreErrorCode.DIRECTORY_TOO_LARGE,
        f"The directory at {location} is over the {MAX_DIRECTORY_BYTES}-byte limit.",
    )


def load_directory(location: str, *, url_deadline_seconds: float = URL_DEADLINE_SECONDS) -> Directory:
    """The directory at a file path or an https URL; a missing, unreadable, oversized or invalid one is
    a :class:`ConfigurationError` whose message names the location and the first problem (the module
    docs list the codes)."""
    try:
        if location.startswith("https://"):
            raw = _fetch(location, url_deadline_seconds)
        elif location.startswith("http://"):
            raise ConfigurationError(
                KeystoreErrorCode.DIRECTORY_INSECURE, f"The directory {location} must be a file or an https URL."
            )
        else:
            raw = _read_file(location)
    except FileNotFoundError:
        raise ConfigurationError(
            KeystoreErrorCode.DIRECTORY_MISSING,
            f"No directory at {location}; run `starter.py init` for the demo directory.",
        ) from None
    except (OSError, http.client.HTTPException) as error:
        detail = str(error).replace("\n", " ")[:200] or type(error).__name__
        raise ConfigurationError(
            KeystoreErrorCode.DIRECTORY_UNREADABLE, f"Cannot read the directory at {location}: {detail}."
        ) from None
    if len(raw) > MAX_DIRECTORY_BYTES:  # _read_file and _fetch stop one byte past the cap
        raise _too_large(location)
    try:
        return Directory.model_validate_json(raw)
    except ValidationError as error:
        raise ConfigurationError(
            KeystoreErrorCode.DIRECTORY_INVALID, f"The directory at {location} is invalid: {first_problem(error)}."
        ) from None


def _fetch(location: str, deadline_seconds: float) -> bytes:
    try:
        return fetch_bounded(location, deadline_seconds=deadline_seconds, max_bytes=MAX_DIRECTORY_BYTES)
    except FetchTooSlow as refused:
        raise ConfigurationError(
            KeystoreErrorCode.DIRECTORY_TOO_SLOW, f"The directory at {location} is too slow: {refused}."
        ) from None
    except FetchTooLarge:
        raise _too_large(location) from None


def _read_file(location: str) -> bytes:
    """The file's bytes, at most one past the cap. Opened without blocking (a FIFO with no writer would
    block a plain open) and judged by ``fstat`` of what was opened, before anything is read."""
    descriptor = os.open(location, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _FILE_KINDS if test(info.st_mode)), "not a regular file")
            raise ConfigurationError(
                KeystoreErrorCode.DIRECTORY_NOT_A_FILE,
                f"The directory at {location} is {kind}, not a regular file; give the path of the directory JSON file.",
            )
        if info.st_size > MAX_DIRECTORY_BYTES:
            raise _too_large(location)
        chunks: list[bytes] = []
        left = MAX_DIRECTORY_BYTES + 1
        while left > 0:
            chunk = os.read(descriptor, min(left, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def first_problem(error: ValidationError) -> str:
    """``people.2.role: Input should be 'customer' or 'reviewer'``: the first problem, in one line."""
    item = error.errors()[0]
    where = ".".join(str(part) for part in item["loc"])
    message = str(item["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def write_directory(path: Path, directory: Directory) -> None:
    """Replace the directory file atomically (a reader sees the old document or the new, never half).

    A field at its default is left out: every release reads it as that default, and one that does not
    know a newer field (workers of an earlier release draining their cases during an upgrade refuse an
    unknown key) is never shown it until someone sets it (docs/upgrades.md)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(directory.model_dump_json(indent=2, exclude_defaults=True) + "\n", encoding="utf-8")
    temporary.replace(path)


class DirectorySource:
    """The current directory at ``location``, reloaded when the file changes (its mtime or size) or,
    for an https URL, every :data:`URL_CACHE_SECONDS`. Thread-safe."""

    def __init__(self, location: str, *, url_cache_seconds: float = URL_CACHE_SECONDS) -> None:
        self.location = location
        self._url_cache_seconds = url_cache_seconds
        self._lock = threading.Lock()
        self._directory: Directory | None = None
        self._stamp: object = None

    def current(self) -> Directory:
        """The directory as the location holds it now (a :class:`ConfigurationError` if it cannot be read)."""
        with self._lock:
            stamp = self._stamp_now()
            if self._directory is None or stamp != self._stamp:
                self._directory = load_directory(self.location)
                self._stamp = stamp
            return self._directory

    def _stamp_now(self) -> object:
        if self.location.startswith("https://"):
            return int(time.monotonic() // self._url_cache_seconds)
        try:
            info = os.stat(self.location)
        except OSError:
            return None
        return (info.st_mtime_ns, info.st_size, info.st_ino)

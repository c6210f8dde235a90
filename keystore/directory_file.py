"""Reading and writing the support directory document (:class:`contracts.directory.Directory`).

``load_directory`` reads a file path or an https URL and refuses a bad document with one line that
names its first problem. :class:`DirectorySource` is what a long-running process holds: it reloads a
file when the file changes and an https URL after :data:`URL_CACHE_SECONDS`, so a reviewer added,
removed or re-keyed with ``starter.py directory`` counts from the next check on, without a restart.
"""

from __future__ import annotations

import os
import threading
import time
import urllib.request
from pathlib import Path

from pydantic import ValidationError

from contracts.directory import Directory
from contracts.errors import ConfigurationError

DIRECTORY_ENV = "SUPPORT_DIRECTORY"
DIRECTORY_FILE = "directory.json"
URL_CACHE_SECONDS = 60.0
"""How long a directory read from an https URL is used before it is fetched again."""
MAX_DIRECTORY_BYTES = 8 * 1024 * 1024


def load_directory(location: str) -> Directory:
    """The directory at a file path or an https URL; a missing, unreadable or invalid one is a
    :class:`ConfigurationError` whose message names the location and the first problem."""
    try:
        if location.startswith("https://"):
            with urllib.request.urlopen(location, timeout=10) as response:
                raw = response.read(MAX_DIRECTORY_BYTES + 1)
        elif location.startswith("http://"):
            raise ConfigurationError("directory_insecure", f"The directory {location} must be a file or an https URL.")
        else:
            raw = Path(location).read_bytes()
    except FileNotFoundError:
        raise ConfigurationError(
            "directory_missing", f"No directory at {location}; run `starter.py init` for the demo directory."
        ) from None
    except OSError as error:
        raise ConfigurationError("directory_unreadable", f"Cannot read the directory at {location}: {error}.") from None
    if len(raw) > MAX_DIRECTORY_BYTES:
        raise ConfigurationError(
            "directory_invalid", f"The directory at {location} is over {MAX_DIRECTORY_BYTES} bytes."
        )
    try:
        return Directory.model_validate_json(raw)
    except ValidationError as error:
        raise ConfigurationError(
            "directory_invalid", f"The directory at {location} is invalid: {first_problem(error)}."
        ) from None


def first_problem(error: ValidationError) -> str:
    """``people.2.role: Input should be 'customer' or 'reviewer'``: the first problem, in one line."""
    item = error.errors()[0]
    where = ".".join(str(part) for part in item["loc"])
    message = str(item["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def write_directory(path: Path, directory: Directory) -> None:
    """Replace the directory file atomically (a reader sees the old document or the new, never half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(directory.model_dump_json(indent=2, exclude_defaults=False) + "\n", encoding="utf-8")
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

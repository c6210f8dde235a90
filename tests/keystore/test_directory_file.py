"""The support directory is judged before it is read whole (issue 44): a path that is no regular file
(``/dev/zero``, a FIFO, a folder) is ``directory_not_a_file`` before a byte is read; a file over the 8 MiB
cap is ``directory_too_large`` from its size, or after at most one byte past the cap when it grows while
it is read; an https directory has one deadline for the whole fetch (``directory_too_slow``) and the same
cap, whatever its length header says. Each is one line, a :class:`ConfigurationError`."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from contracts.directory import ConversationPolicy
from contracts.errors import ConfigurationError
from keystore import create_demo_directory, directory_location
from keystore.directory_file import (
    MAX_DIRECTORY_BYTES,
    URL_DEADLINE_SECONDS,
    DirectorySource,
    load_directory,
    write_directory,
)
from tests.directory_file_support import guard_endless_reads, trusted_localhost_tls
from tests.jwks_support import http_head, serve_raw

PROMPTLY = 30.0
"""A bound on a thread join, so a regression that blocks fails the test instead of hanging it."""


@pytest.fixture
def read_count(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    return guard_endless_reads(monkeypatch)


def refusal(load: Callable[[], object]) -> ConfigurationError:
    """The ConfigurationError ``load`` raises, which must come within :data:`PROMPTLY` seconds."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            load()
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(PROMPTLY)
    assert outcome, "the directory is still being read"
    error = outcome[0]
    assert isinstance(error, ConfigurationError), repr(error)
    assert "\n" not in error.message
    return error


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "directory.fifo"
    os.mkfifo(path)
    yield path
    with contextlib.suppress(OSError):  # a reader still blocked in open() (a regression) gets a writer, then EOF
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def demo_document(tmp_path: Path) -> bytes:
    create_demo_directory(tmp_path)
    return Path(directory_location(tmp_path, {})).read_bytes()


# --- files -------------------------------------------------------------------------------------------


def test_dev_zero_is_refused_at_once_without_reading(read_count: list[int]) -> None:
    error = refusal(lambda: load_directory("/dev/zero"))
    assert error.code == "directory_not_a_file"
    assert error.message == (
        "The directory at /dev/zero is a character device, not a regular file; give the path of the directory "
        "JSON file."
    )
    assert read_count == [0]


def test_a_fifo_without_a_writer_is_refused_at_once(fifo: Path, read_count: list[int]) -> None:
    error = refusal(lambda: load_directory(str(fifo)))
    assert error.code == "directory_not_a_file"
    assert "is a FIFO, not a regular file" in error.message
    assert read_count == [0]


def test_a_folder_is_not_a_directory_file(tmp_path: Path, read_count: list[int]) -> None:
    error = refusal(lambda: load_directory(str(tmp_path)))
    assert error.code == "directory_not_a_file"
    assert "is a folder, not a regular file" in error.message


def test_a_directory_source_refuses_dev_zero_too(read_count: list[int]) -> None:
    error = refusal(DirectorySource("/dev/zero").current)
    assert error.code == "directory_not_a_file"


def test_a_file_over_the_cap_is_refused_from_its_size_before_reading(tmp_path: Path, read_count: list[int]) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as file:
        file.truncate(4 * MAX_DIRECTORY_BYTES)  # sparse: 32 MiB that take no disk
    error = refusal(lambda: load_directory(str(path)))
    assert error.code == "directory_too_large"
    assert error.message == f"The directory at {path} is over the {MAX_DIRECTORY_BYTES}-byte limit."
    assert read_count == [0]


def test_a_file_that_grows_while_it_is_read_is_refused_one_byte_past_the_cap(
    tmp_path: Path, read_count: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small when it is opened, 64 MiB by the first read: the read stops one byte past the cap."""
    path = tmp_path / "growing.json"
    path.write_bytes(b'{"keys": [] ')
    guarded_read = os.read

    def read_while_it_grows(descriptor: int, length: int) -> bytes:
        if os.fstat(descriptor).st_size < MAX_DIRECTORY_BYTES:
            os.truncate(path, 8 * MAX_DIRECTORY_BYTES)
        return guarded_read(descriptor, length)

    monkeypatch.setattr(os, "read", read_while_it_grows)
    error = refusal(lambda: load_directory(str(path)))
    assert error.code == "directory_too_large"
    assert read_count == [MAX_DIRECTORY_BYTES + 1]


def test_a_file_at_the_cap_is_read(tmp_path: Path, read_count: list[int]) -> None:
    document = demo_document(tmp_path).rstrip()
    path = tmp_path / "padded.json"
    path.write_bytes(document[:-1] + b" " * (MAX_DIRECTORY_BYTES - len(document)) + b"}")
    assert path.stat().st_size == MAX_DIRECTORY_BYTES
    assert load_directory(str(path)).person("chen") is not None


# --- an https directory ------------------------------------------------------------------------------

SHORT_DEADLINE = 0.5
TRICKLE_PAUSE = 0.05


@pytest.mark.slow  # a local https server: make test's full layer
def test_an_https_directory_that_trickles_is_refused_at_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte every 50 ms never trips a per-read timeout; the fetch's one deadline stops it."""
    tls = trusted_localhost_tls(tmp_path, monkeypatch)
    body = b'{"keys": []' + b" " * 150 + b"}"
    chunks = [http_head(content_length=len(body))] + [body[index : index + 1] for index in range(len(body))]
    with serve_raw(chunks, pause=TRICKLE_PAUSE, tls=tls) as server:
        started = time.monotonic()
        error = refusal(lambda: load_directory(server.url, url_deadline_seconds=SHORT_DEADLINE))
        waited = time.monotonic() - started
        assert error.code == "directory_too_slow"
        assert error.message == (
            f"The directory at {server.url} is too slow: no complete answer within {SHORT_DEADLINE:g} s."
        )
        assert server.finished.wait(10), "the refused fetch still holds the connection"
        assert server.sent[0] < server.total
    assert waited < len(body) * TRICKLE_PAUSE / 2
    assert URL_DEADLINE_SECONDS == 10.0


@pytest.mark.slow  # a local https server: make test's full layer
@pytest.mark.parametrize("framing", ["no length", "honest length"])
def test_an_https_directory_over_the_cap_is_refused_without_reading_it_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, framing: str
) -> None:
    tls = trusted_localhost_tls(tmp_path, monkeypatch)
    size = 8 * MAX_DIRECTORY_BYTES
    piece = b" " * (64 * 1024)
    pieces = [b'{"keys": []', *([piece] * (size // len(piece))), b"}"]
    total = sum(map(len, pieces))
    head = http_head(content_length=total) if framing == "honest length" else http_head()
    with serve_raw([head, *pieces], tls=tls) as server:
        error = refusal(lambda: load_directory(server.url))
        assert error.code == "directory_too_large"
        assert server.finished.wait(30), "the refused fetch still holds the connection"
        assert server.sent[0] < server.total // 2


@pytest.mark.slow  # a local https server: make test's full layer
def test_an_https_directory_within_the_limits_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tls").mkdir()
    tls = trusted_localhost_tls(tmp_path / "tls", monkeypatch)
    document = demo_document(tmp_path)
    assert json.loads(document)["keys"]
    with serve_raw([http_head(content_length=len(document)), document], tls=tls) as server:
        assert load_directory(server.url).person("chen") is not None


# --- what a release before conversations still reads (issue 47) -----------------------------------


def test_a_default_conversation_policy_is_not_written_and_a_set_one_is(tmp_path: Path) -> None:
    """Workers of release 0.10 and earlier refuse a tenant key they do not know, and they drain their
    cases beside 0.11 during an upgrade: a directory written by 0.11 carries ``conversation`` only where
    a tenant set one (tests/deploy_upgrade/test_case_before_conversations.py runs a 0.10 worker on it)."""
    create_demo_directory(tmp_path)
    path = Path(directory_location(tmp_path, {}))
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["tenants"] and all("conversation" not in tenant for tenant in written["tenants"])
    directory = load_directory(str(path))
    assert directory.conversation_policy(written["tenants"][0]["tenant"]) == ConversationPolicy()

    first = directory.tenants[0]
    patient = ConversationPolicy(idle_hours=48, messages_per_minute=10)
    tenants = [first.model_copy(update={"conversation": patient}), *directory.tenants[1:]]
    changed = directory.model_copy(update={"tenants": tenants})
    write_directory(path, changed)
    again = json.loads(path.read_text(encoding="utf-8"))
    assert again["tenants"][0]["conversation"] == {"idle_hours": 48.0, "messages_per_minute": 10}
    assert load_directory(str(path)).conversation_policy(first.tenant) == patient

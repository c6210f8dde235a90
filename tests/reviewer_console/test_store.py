"""reviewer_console.store: sessions expire after 30 minutes, ceremonies are taken once by the session
that started them, and an enrollment link's id is used once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlmodel import Session, select

from reviewer_console.reading import duration_text
from reviewer_console.store import ConsoleSession, ConsoleStore, hashed

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


def test_a_session_lives_30_minutes(tmp_path: Path) -> None:
    store = ConsoleStore.in_state_dir(tmp_path)
    made = store.create_session("chen", now=NOW)
    live = store.session(made.session_id, now=NOW + timedelta(minutes=29))
    assert live is not None and live.subject == "chen" and live.csrf_token == made.csrf_token
    assert live.session_hash == hashed(made.session_id) != made.session_id
    assert store.session(made.session_id, now=NOW + timedelta(minutes=30)) is None
    assert store.session(made.session_id, now=NOW) is None  # removed when found expired
    assert store.session("guessed", now=NOW) is None


def test_sessions_nobody_came_back_to_are_removed_when_a_new_one_is_made(tmp_path: Path) -> None:
    store = ConsoleStore.in_state_dir(tmp_path)
    for _ in range(3):
        store.create_session(None, now=NOW)  # anonymous visitors who never return
    kept = store.create_session("chen", now=NOW + timedelta(minutes=20))
    with Session(store.engine) as db:
        assert len(db.exec(select(ConsoleSession)).all()) == 4
    store.create_session(None, now=NOW + timedelta(minutes=31))
    with Session(store.engine) as db:
        left = {row.id_hash for row in db.exec(select(ConsoleSession)).all()}
    assert len(left) == 2 and hashed(kept.session_id) in left


def test_a_ceremony_is_taken_once_by_its_own_session(tmp_path: Path) -> None:
    store = ConsoleStore.in_state_dir(tmp_path)
    mine, other = store.create_session(None, now=NOW), store.create_session(None, now=NOW)
    ceremony = store.put_ceremony("signin", session_hash=hashed(mine.session_id), challenge="abc", bound_to="", now=NOW)
    assert store.take_ceremony(ceremony, kind="signin", session_hash=hashed(other.session_id), now=NOW) is None
    ceremony = store.put_ceremony("signin", session_hash=hashed(mine.session_id), challenge="abc", bound_to="", now=NOW)
    assert store.take_ceremony(ceremony, kind="review", session_hash=hashed(mine.session_id), now=NOW) is None
    ceremony = store.put_ceremony("signin", session_hash=hashed(mine.session_id), challenge="abc", bound_to="", now=NOW)
    taken = store.take_ceremony(ceremony, kind="signin", session_hash=hashed(mine.session_id), now=NOW)
    assert taken is not None and taken.challenge == "abc"
    assert store.take_ceremony(ceremony, kind="signin", session_hash=hashed(mine.session_id), now=NOW) is None
    late = store.put_ceremony("signin", session_hash=hashed(mine.session_id), challenge="x", bound_to="", now=NOW)
    assert (
        store.take_ceremony(late, kind="signin", session_hash=hashed(mine.session_id), now=NOW + timedelta(minutes=5))
        is None
    )


def test_an_enrollment_link_is_used_once(tmp_path: Path) -> None:
    store = ConsoleStore.in_state_dir(tmp_path)
    assert not store.enrollment_used("jti-0001")
    assert store.use_enrollment("jti-0001", "chen", now=NOW)
    assert store.enrollment_used("jti-0001")
    assert not store.use_enrollment("jti-0001", "chen", now=NOW)
    assert ConsoleStore.in_state_dir(tmp_path).enrollment_used("jti-0001")  # kept in console.db


def test_durations_read_in_whole_units() -> None:
    assert duration_text(245) == "4 min 05 s"
    assert duration_text(7380) == "2 h 03 min"
    assert duration_text(0) == "expired"

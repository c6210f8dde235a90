"""The console's own state, in SQLite (``<state dir>/console.db``): sessions, pending WebAuthn ceremonies
and used enrollment links. Nothing here is a credential anyone else accepts: a session only lets its
holder ask the console for ceremonies; every decision still needs the reviewer's passkey.

- A session id is 32 random bytes; only its SHA-256 is stored, so a copy of the database signs nobody
  in. Each session carries its CSRF token. A visitor gets an anonymous session on the first page (its
  CSRF token protects the sign-in and enrollment POSTs); signing in replaces it with a new one.
- A ceremony is the challenge the server chose, kept here (never trusted from the browser), taken once.
- An enrollment link's ``jti`` is claimed by the first browser session that opens it (or asks for its
  ceremony): only that session may enroll with it, so a copy of the link used in another browser
  enrolls nothing. The claim is kept until the link expires.
- An enrollment link's ``jti`` is written when the link is used; a second use finds it.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine, delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, create_engine, select

SESSION_TTL = timedelta(minutes=30)
CEREMONY_TTL = timedelta(minutes=5)
DATABASE_FILE = "console.db"


class ConsoleSession(SQLModel, table=True):
    __tablename__ = "console_session"

    id_hash: str = Field(primary_key=True)
    subject: str | None = None
    """The signed-in reviewer; None for a visitor who has not signed in yet."""
    csrf_token: str
    expires_at: datetime


class PendingCeremony(SQLModel, table=True):
    __tablename__ = "console_ceremony"

    ceremony_id: str = Field(primary_key=True)
    kind: str
    """``enroll``, ``signin`` or ``review``."""
    session_hash: str
    """The session that asked for it: only that session may finish it."""
    challenge: str
    """The challenge the server chose, base64url."""
    bound_to: str
    """What it is for: the enrollment ``jti``, or the case id of a review; empty for a sign-in."""
    payload: str = ""
    """The review statement (JSON) a review ceremony signs."""
    expires_at: datetime


class UsedEnrollment(SQLModel, table=True):
    __tablename__ = "console_used_enrollment"

    jti: str = Field(primary_key=True)
    subject: str
    used_at: datetime


class ClaimedEnrollment(SQLModel, table=True):
    __tablename__ = "console_claimed_enrollment"

    jti: str = Field(primary_key=True)
    session_hash: str
    """The browser session that opened the link first: the only one that may enroll with it."""
    claimed_at: datetime
    expires_at: datetime
    """The link's own expiry: after it the claim is removed (the link verifies no more)."""


TABLES = [
    ConsoleSession.__table__,  # type: ignore[attr-defined]
    PendingCeremony.__table__,  # type: ignore[attr-defined]
    UsedEnrollment.__table__,  # type: ignore[attr-defined]
    ClaimedEnrollment.__table__,  # type: ignore[attr-defined]
]


def hashed(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


def _aware(moment: datetime) -> datetime:
    """SQLite gives datetimes back without their zone; every time stored here is UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class NewSession:
    """A session just made: the cookie value (shown once, stored hashed) and its CSRF token."""

    session_id: str
    csrf_token: str
    subject: str | None


@dataclass(frozen=True)
class ActiveSession:
    session_hash: str
    csrf_token: str
    subject: str | None
    expires_at: datetime


@dataclass(frozen=True)
class Ceremony:
    ceremony_id: str
    kind: str
    challenge: str
    bound_to: str
    payload: str


class ConsoleStore:
    """Sessions, ceremonies and used enrollment links in one SQLite file."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        SQLModel.metadata.create_all(engine, tables=TABLES)

    @classmethod
    def in_state_dir(cls, state_dir: Path) -> ConsoleStore:
        Path(state_dir).mkdir(parents=True, exist_ok=True)
        return cls(create_engine(f"sqlite:///{Path(state_dir) / DATABASE_FILE}"))

    # --- sessions ------------------------------------------------------------------------------------

    def create_session(self, subject: str | None, *, now: datetime) -> NewSession:
        """A new session (anonymous when ``subject`` is None). Expired sessions, ceremonies and enrollment
        claims are removed here, so visitors who never come back (every first request makes a session) leave no rows."""
        session_id = secrets.token_urlsafe(32)
        csrf = secrets.token_urlsafe(32)
        row = ConsoleSession(id_hash=hashed(session_id), subject=subject, csrf_token=csrf, expires_at=now + SESSION_TTL)
        with Session(self.engine) as db:
            db.exec(delete(ConsoleSession).where(ConsoleSession.expires_at <= now))  # type: ignore[arg-type]
            db.exec(delete(PendingCeremony).where(PendingCeremony.expires_at <= now))  # type: ignore[arg-type]
            db.exec(delete(ClaimedEnrollment).where(ClaimedEnrollment.expires_at <= now))  # type: ignore[arg-type]
            db.add(row)
            db.commit()
        return NewSession(session_id, csrf, subject)

    def session(self, session_id: str | None, *, now: datetime) -> ActiveSession | None:
        """The live session with this cookie value, or None (unknown or expired; an expired one is removed)."""
        if not session_id:
            return None
        with Session(self.engine) as db:
            row = db.get(ConsoleSession, hashed(session_id))
            if row is None:
                return None
            if _aware(row.expires_at) <= now:
                db.delete(row)
                db.commit()
                return None
            return ActiveSession(row.id_hash, row.csrf_token, row.subject, _aware(row.expires_at))

    def end_session(self, session_hash: str) -> None:
        with Session(self.engine) as db:
            db.exec(delete(ConsoleSession).where(ConsoleSession.id_hash == session_hash))  # type: ignore[arg-type]
            db.exec(delete(PendingCeremony).where(PendingCeremony.session_hash == session_hash))  # type: ignore[arg-type]
            db.commit()

    # --- ceremonies ----------------------------------------------------------------------------------

    def put_ceremony(
        self, kind: str, *, session_hash: str, challenge: str, bound_to: str, now: datetime, payload: str = ""
    ) -> str:
        ceremony_id = secrets.token_urlsafe(24)
        row = PendingCeremony(
            ceremony_id=ceremony_id,
            kind=kind,
            session_hash=session_hash,
            challenge=challenge,
            bound_to=bound_to,
            payload=payload,
            expires_at=now + CEREMONY_TTL,
        )
        with Session(self.engine) as db:
            db.add(row)
            db.commit()
        return ceremony_id

    def take_ceremony(self, ceremony_id: object, *, kind: str, session_hash: str, now: datetime) -> Ceremony | None:
        """The ceremony of this kind that this session started, removed as it is taken (single use);
        None when there is none, it expired, or another session started it."""
        if not isinstance(ceremony_id, str) or not ceremony_id:
            return None
        with Session(self.engine) as db:
            row = db.get(PendingCeremony, ceremony_id)
            if row is None:
                return None
            db.delete(row)
            db.commit()
        if row.kind != kind or row.session_hash != session_hash or _aware(row.expires_at) <= now:
            return None
        return Ceremony(row.ceremony_id, row.kind, row.challenge, row.bound_to, row.payload)

    # --- enrollment links ----------------------------------------------------------------------------

    def enrollment_used(self, jti: str) -> bool:
        with Session(self.engine) as db:
            return db.exec(select(UsedEnrollment).where(UsedEnrollment.jti == jti)).first() is not None

    def use_enrollment(self, jti: str, subject: str, *, now: datetime) -> bool:
        """Mark the link ``jti`` used; False if it already was (the primary key decides a race)."""
        try:
            with Session(self.engine) as db:
                db.add(UsedEnrollment(jti=jti, subject=subject, used_at=now))
                db.commit()
        except IntegrityError:
            return False
        return True

    def claim_enrollment(self, jti: str, *, session_hash: str, expires_at: datetime, now: datetime) -> bool:
        """Claim the link ``jti`` for the session ``session_hash`` unless another session claimed it
        first: True when this session holds the claim (now or already), False when another one does
        (the primary key decides a race)."""
        try:
            with Session(self.engine) as db:
                db.add(ClaimedEnrollment(jti=jti, session_hash=session_hash, claimed_at=now, expires_at=expires_at))
                db.commit()
        except IntegrityError:
            with Session(self.engine) as db:
                row = db.get(ClaimedEnrollment, jti)
            return row is not None and row.session_hash == session_hash
        return True

"""Bring a commerce database created by an earlier release up to this one's tables, in place.

Tables that are missing are created (:func:`commerce_server.db.create_schema`); this module changes the
few columns an earlier release declared differently, each step checked against the database first so
it runs once and is safe to repeat. Rows are kept as they are: a step relaxes a constraint, never drops
data.

One step so far: ``action_proposals.order_id`` became nullable when the account's own action
(``change_default_address``) arrived; a database from release 0.11 declares it NOT NULL. PostgreSQL
drops the constraint in place; SQLite cannot, so the table is rebuilt under its own name (the procedure
SQLite documents for a changed column: a new table, the rows copied, the old one dropped, the new one
renamed, foreign keys checked), which keeps every reference from the other action tables.
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine, inspect
from sqlalchemy.schema import CreateTable, Table

from commerce_server.db import ActionProposalRow

log = logging.getLogger(__name__)

PROPOSALS: Table = ActionProposalRow.__table__  # type: ignore[attr-defined]
_REBUILT = "action_proposals_rebuilt"


def upgrade_schema(engine: Engine) -> list[str]:
    """Apply every step the database still needs; returns what was changed, one sentence each."""
    done = []
    if _order_id_required(engine):
        _relax_order_id(engine)
        done.append("action_proposals.order_id may now be empty (an action on the customer's account)")
    for sentence in done:
        log.info("commerce database upgraded: %s", sentence)
    return done


def _order_id_required(engine: Engine) -> bool:
    columns = {column["name"]: column for column in inspect(engine).get_columns(PROPOSALS.name)}
    return not columns["order_id"]["nullable"]


def _relax_order_id(engine: Engine) -> None:
    if engine.dialect.name != "sqlite":
        with engine.begin() as connection:
            connection.exec_driver_sql(f"ALTER TABLE {PROPOSALS.name} ALTER COLUMN order_id DROP NOT NULL")
        return
    create = str(CreateTable(PROPOSALS).compile(engine)).replace(
        f"CREATE TABLE {PROPOSALS.name} ", f"CREATE TABLE {_REBUILT} ", 1
    )
    columns = ", ".join(column.name for column in PROPOSALS.columns)
    steps = (
        create,
        f"INSERT INTO {_REBUILT} ({columns}) SELECT {columns} FROM {PROPOSALS.name}",
        f"DROP TABLE {PROPOSALS.name}",
        f"ALTER TABLE {_REBUILT} RENAME TO {PROPOSALS.name}",
    )
    pooled = engine.raw_connection()
    try:
        sqlite = pooled.driver_connection
        assert sqlite is not None
        previous, sqlite.isolation_level = sqlite.isolation_level, None  # BEGIN and COMMIT are ours: DDL included
        cursor = sqlite.cursor()
        # Off outside the transaction, as SQLite requires: the other action tables reference action_proposals
        # by name, and keep referencing it once the rebuilt table takes that name.
        cursor.execute("PRAGMA foreign_keys=OFF")
        try:
            cursor.execute("BEGIN")
            for step in steps:
                cursor.execute(step)
            broken = cursor.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise RuntimeError(f"rebuilding {PROPOSALS.name} would leave {len(broken)} broken references")
            cursor.execute("COMMIT")
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        finally:
            cursor.execute("PRAGMA foreign_keys=ON")
            sqlite.isolation_level = previous
    finally:
        pooled.close()

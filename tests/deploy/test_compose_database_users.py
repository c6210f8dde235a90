"""The compose cluster's database users: the Temporal server and the commerce service each log in as a
user of its own that owns only its own databases (deploy/postgres/roles.sql), and the administrator's
credentials reach the postgresql container alone.

Statically here, against docker-compose.yml; then roles.sql itself runs, with psql, against the test
PostgreSQL server (``COMMERCE_TEST_POSTGRES_URL``, a superuser there), under database and user names of
the test's own: the users it makes can do what their services need and nothing else, and it runs again
on a database made by an earlier compose file."""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.conftest import postgres_test_url
from tests.deploy.compose_model import ROOT, environment, interpolate, services

ROLES_SQL = ROOT / "deploy" / "postgres" / "roles.sql"
INITDB = "/docker-entrypoint-initdb.d/"
USER_VARIABLES = ("TEMPORAL_DB_USER", "TEMPORAL_DB_PASSWORD", "COMMERCE_DB_USER", "COMMERCE_DB_PASSWORD")
TEMPORAL_SIDE = {"temporal-schema": ("SQL_USER", "SQL_PASSWORD"), "temporal": ("POSTGRES_USER", "POSTGRES_PWD")}
COMMERCE_SIDE = ("keys", "commerce", "starter")

# --- docker-compose.yml ------------------------------------------------------------------------------


def test_postgresql_makes_the_users_on_its_first_start(compose: dict[str, Any]) -> None:
    postgresql = services(compose)["postgresql"]
    [config] = postgresql["configs"]
    assert config["target"].startswith(INITDB) and config["target"].endswith(".sql")
    assert (ROOT / compose["configs"][config["source"]]["file"]).resolve() == ROLES_SQL
    env = environment(postgresql)
    for name in USER_VARIABLES:
        assert re.fullmatch(rf"\$\{{{name}:-[^}}]+\}}", env[name]), f"{name} comes from .env"
        assert f"\\getenv {name.lower().replace('_db', '')} {name}" in ROLES_SQL.read_text(encoding="utf-8")
    assert "POSTGRES_DB" not in env, "roles.sql makes the commerce database, owned by its user"


def test_each_side_logs_in_as_its_own_user(compose: dict[str, Any]) -> None:
    all_services = services(compose)
    for name, (user, password) in TEMPORAL_SIDE.items():
        env = environment(all_services[name])
        assert (env[user], env[password]) == ("${TEMPORAL_DB_USER:-temporal}", "${TEMPORAL_DB_PASSWORD:-temporal}")
    for name in COMMERCE_SIDE:
        url = make_url(interpolate(environment(all_services[name])["COMMERCE_DATABASE_URL"], {}))
        assert (url.username, url.password, url.database) == ("commerce", "commerce", "commerce"), name
        assert environment(all_services[name])["COMMERCE_DATABASE_URL"].startswith(
            "postgresql+psycopg://${COMMERCE_DB_USER:-commerce}:${COMMERCE_DB_PASSWORD:-commerce}@"
        )
    holders = {
        name
        for name, service in all_services.items()
        if any("POSTGRES_ADMIN" in value for value in environment(service).values())
    }
    assert holders == {"postgresql"}, "the administrator's credentials stay in the postgresql container"


def test_the_temporal_schema_one_shot_creates_no_database(compose: dict[str, Any]) -> None:
    """The Temporal user may not create databases; roles.sql has made them."""
    script = services(compose)["temporal-schema"]["command"][0]
    assert not re.search(r"temporal-sql-tool[^\n]*\bcreate\b", script)
    assert script.count("setup-schema") == 2 and script.count("update-schema") == 2


# --- roles.sql, run ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Names:
    """The test's own user and database names, so a shared server's are left alone."""

    temporal_user: str
    commerce_user: str
    temporal_db: str
    visibility_db: str
    commerce_db: str

    @classmethod
    def fresh(cls) -> Names:
        tag = uuid.uuid4().hex[:8]
        return cls(f"t_{tag}", f"c_{tag}", f"tdb_{tag}", f"vdb_{tag}", f"cdb_{tag}")

    def variables(self) -> list[str]:
        pairs = {"temporal_db": self.temporal_db, "visibility_db": self.visibility_db, "commerce_db": self.commerce_db}
        return [arg for name, value in pairs.items() for arg in ("-v", f"{name}={value}")]


def _admin_dsn(database: str | None = None) -> str:
    """The test server's address for psql and psycopg (no SQLAlchemy driver), in ``database`` if given."""
    url = make_url(postgres_test_url()).set(drivername="postgresql")
    if database:
        url = url.set(database=database)
    return url.render_as_string(hide_password=False)


def run_roles_sql(names: Names, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """roles.sql as the postgres image runs it (psql -f, ON_ERROR_STOP), with ``env`` as its environment."""
    return subprocess.run(
        ["psql", "--no-psqlrc", "-d", _admin_dsn(), *names.variables(), "-f", str(ROLES_SQL)],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _users_env(names: Names) -> dict[str, str]:
    return {
        "TEMPORAL_DB_USER": names.temporal_user,
        "TEMPORAL_DB_PASSWORD": "temporal-placeholder",
        "COMMERCE_DB_USER": names.commerce_user,
        "COMMERCE_DB_PASSWORD": "it's a placeholder",  # a quote survives psql's quoting
    }


@pytest.fixture
def names() -> Iterator[Names]:
    made = Names.fresh()
    yield made
    with psycopg.connect(_admin_dsn(), autocommit=True) as admin:
        for database in (made.temporal_db, made.visibility_db, made.commerce_db):
            admin.execute(f'DROP DATABASE IF EXISTS "{database}"')
        for user in (made.temporal_user, made.commerce_user):
            admin.execute(f'DROP ROLE IF EXISTS "{user}"')


def _can_connect(names: Names, user: str, database: str) -> bool:
    try:
        with psycopg.connect(_admin_dsn(database), user=user, connect_timeout=5):
            return True
    except psycopg.OperationalError as error:
        assert "permission denied" in str(error), error
        return False


@pytest.mark.postgres
def test_roles_sql_makes_two_users_that_own_only_their_own_databases(names: Names) -> None:
    for attempt in ("first", "again"):
        done = run_roles_sql(names, _users_env(names))
        assert done.returncode == 0, f"{attempt}: {done.stderr}"
        assert "users and their databases are in place" in done.stdout
        assert "placeholder" not in done.stdout + done.stderr, "a password was printed"
    with psycopg.connect(_admin_dsn()) as admin:
        users = admin.execute(
            "SELECT rolname, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolcanlogin "
            "FROM pg_roles WHERE rolname IN (%s, %s)",
            (names.temporal_user, names.commerce_user),
        ).fetchall()
        assert sorted(users) == sorted(
            (user, False, False, False, False, False, True) for user in (names.temporal_user, names.commerce_user)
        )
        owners: dict[str, str] = dict(
            admin.execute(
                "SELECT datname, pg_get_userbyid(datdba) FROM pg_database WHERE datname IN (%s, %s, %s)",
                (names.temporal_db, names.visibility_db, names.commerce_db),
            ).fetchall()
        )
    assert owners == {
        names.temporal_db: names.temporal_user,
        names.visibility_db: names.temporal_user,
        names.commerce_db: names.commerce_user,
    }
    assert _can_connect(names, names.temporal_user, names.temporal_db)
    assert _can_connect(names, names.temporal_user, names.visibility_db)
    assert _can_connect(names, names.commerce_user, names.commerce_db)
    assert not _can_connect(names, names.commerce_user, names.temporal_db)
    assert not _can_connect(names, names.temporal_user, names.commerce_db)
    with psycopg.connect(_admin_dsn(names.commerce_db), user=names.commerce_user, autocommit=True) as commerce:
        commerce.execute("CREATE TABLE refunds (id serial PRIMARY KEY)")  # its own schema: it may
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            commerce.execute(f'CREATE DATABASE "{names.commerce_db}_more"')


@pytest.mark.postgres
def test_roles_sql_takes_over_a_database_an_earlier_compose_file_made(names: Names) -> None:
    """Before, one superuser (named as the Temporal user is now) owned everything, the commerce tables
    included. Run by hand on such a volume, roles.sql demotes it and gives the commerce data away."""
    with psycopg.connect(_admin_dsn(), autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{names.temporal_user}" SUPERUSER LOGIN')
        admin.execute(f'CREATE DATABASE "{names.commerce_db}" OWNER "{names.temporal_user}"')
    with psycopg.connect(_admin_dsn(names.commerce_db), autocommit=True) as old:
        old.execute(f'SET ROLE "{names.temporal_user}"')
        old.execute("CREATE TYPE refund_state AS ENUM ('paid', 'refused')")
        old.execute("CREATE TABLE receipts (id serial PRIMARY KEY, state refund_state)")
        old.execute("CREATE VIEW paid AS SELECT id FROM receipts")

    done = run_roles_sql(names, _users_env(names))
    assert done.returncode == 0, done.stderr

    with psycopg.connect(_admin_dsn(names.commerce_db)) as admin:
        owned = admin.execute(
            "SELECT c.relname, pg_get_userbyid(c.relowner) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'S', 'v')"
        ).fetchall()
        type_owner = admin.execute(
            "SELECT pg_get_userbyid(typowner) FROM pg_type WHERE typname = 'refund_state'"
        ).fetchone()
        superuser = admin.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", (names.temporal_user,)).fetchone()
    assert owned and {owner for _, owner in owned} == {names.commerce_user}, owned
    assert type_owner == (names.commerce_user,)
    assert superuser == (False,), "the old superuser is now only the Temporal user"


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("change", "sentence"),
    [
        ({"COMMERCE_DB_PASSWORD": None}, "needs TEMPORAL_DB_USER, TEMPORAL_DB_PASSWORD, COMMERCE_DB_USER"),
        ({"TEMPORAL_DB_PASSWORD": ""}, "must not be empty"),
        ({"COMMERCE_DB_USER": "same"}, "must differ from each other"),
    ],
)
def test_roles_sql_refuses_missing_or_colliding_users_with_one_sentence(
    names: Names, change: dict[str, str | None], sentence: str
) -> None:
    env: dict[str, str] = {}
    for key, value in {**_users_env(names), **change}.items():
        if value is not None:
            env[key] = value
    if env.get("COMMERCE_DB_USER") == "same":
        env["COMMERCE_DB_USER"] = env["TEMPORAL_DB_USER"]
    done = run_roles_sql(names, env)
    assert done.returncode != 0 and sentence in done.stderr, done.stderr
    with psycopg.connect(_admin_dsn()) as admin:
        made = admin.execute(
            "SELECT count(*) FROM pg_roles WHERE rolname IN (%s, %s)", (names.temporal_user, names.commerce_user)
        )
        assert made.fetchone() == (0,), "nothing changes before the refusal"

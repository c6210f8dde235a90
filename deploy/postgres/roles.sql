-- The database users of the compose cluster, each with only what it needs (docker-compose.yml;
-- docs/deployment.md, "Database users"):
--
--   the Temporal user  owns the temporal and temporal_visibility databases, and nothing else;
--   the commerce user  owns the commerce database, and nothing else.
--
-- Neither is a superuser, and neither may create databases or roles, replicate or bypass row security;
-- neither may even connect to the other's databases (CONNECT is revoked from PUBLIC on all three). The
-- administrator (POSTGRES_USER, a superuser) stays inside the postgresql container.
--
-- The postgres image runs this file as the administrator on the first start of an empty data volume
-- (/docker-entrypoint-initdb.d). It is safe to run again, and that is how a data volume made by an
-- earlier compose file is brought to these users (docs/deployment.md): a user or database that exists
-- is altered, not created; every table, sequence, view and type of the commerce database's public
-- schema is given to the commerce user.
--
-- Names and passwords come from the environment (psql's \getenv), never from this file:
-- TEMPORAL_DB_USER, TEMPORAL_DB_PASSWORD, COMMERCE_DB_USER, COMMERCE_DB_PASSWORD. The database names
-- are temporal, temporal_visibility and commerce unless psql is given -v temporal_db=...,
-- -v visibility_db=..., -v commerce_db=... (the test does, to leave a shared server's databases alone).

\set ON_ERROR_STOP on
\set QUIET on

\getenv temporal_user TEMPORAL_DB_USER
\getenv temporal_password TEMPORAL_DB_PASSWORD
\getenv commerce_user COMMERCE_DB_USER
\getenv commerce_password COMMERCE_DB_PASSWORD
\if :{?temporal_db}
\else
  \set temporal_db temporal
\endif
\if :{?visibility_db}
\else
  \set visibility_db temporal_visibility
\endif
\if :{?commerce_db}
\else
  \set commerce_db commerce
\endif

-- Refuse with one sentence, before anything changes, when a setting is missing or the users collide.
\if :{?temporal_user}
  \if :{?temporal_password}
    \if :{?commerce_user}
      \if :{?commerce_password}
        \set settings_present true
      \endif
    \endif
  \endif
\endif
\if :{?settings_present}
\else
  DO $$ BEGIN RAISE EXCEPTION 'roles.sql needs TEMPORAL_DB_USER, TEMPORAL_DB_PASSWORD, COMMERCE_DB_USER and COMMERCE_DB_PASSWORD in its environment'; END $$;
\endif
SELECT :'temporal_user' <> '' AND :'temporal_password' <> '' AND :'commerce_user' <> ''
       AND :'commerce_password' <> '' AS settings_complete,
       :'temporal_user' NOT IN (:'commerce_user', current_user) AND :'commerce_user' <> current_user
       AS users_distinct \gset
\if :settings_complete
\else
  DO $$ BEGIN RAISE EXCEPTION 'roles.sql: TEMPORAL_DB_USER, TEMPORAL_DB_PASSWORD, COMMERCE_DB_USER and COMMERCE_DB_PASSWORD must not be empty'; END $$;
\endif
\if :users_distinct
\else
  DO $$ BEGIN RAISE EXCEPTION 'roles.sql: TEMPORAL_DB_USER and COMMERCE_DB_USER must differ from each other and from the administrator (POSTGRES_USER)'; END $$;
\endif

-- The two users: created if missing; either way left with login, a password and no other attribute
-- (an earlier compose file's Temporal user was the superuser: this takes that away).
SELECT format('CREATE ROLE %I', :'temporal_user')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'temporal_user') \gexec
SELECT format('CREATE ROLE %I', :'commerce_user')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'commerce_user') \gexec
SELECT format(
    'ALTER ROLE %I WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT PASSWORD %L',
    user_name, user_password)
  FROM (VALUES (:'temporal_user', :'temporal_password'), (:'commerce_user', :'commerce_password'))
       AS users (user_name, user_password) \gexec

-- The databases: created owned by their user, or given to it; nobody else may connect.
SELECT format('CREATE DATABASE %I OWNER %I', db_name, db_owner)
  FROM (VALUES (:'temporal_db', :'temporal_user'), (:'visibility_db', :'temporal_user'),
               (:'commerce_db', :'commerce_user')) AS databases (db_name, db_owner)
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = db_name) \gexec
SELECT format('ALTER DATABASE %I OWNER TO %I', db_name, db_owner),
       format('REVOKE ALL ON DATABASE %I FROM PUBLIC', db_name)
  FROM (VALUES (:'temporal_db', :'temporal_user'), (:'visibility_db', :'temporal_user'),
               (:'commerce_db', :'commerce_user')) AS databases (db_name, db_owner) \gexec

-- In the commerce database, what an earlier compose file's schema left to its superuser. (The Temporal
-- user kept its name, so its tables are already its own.) A sequence that belongs to a table moves with
-- it; only the ones left over are altered after.
\connect :"commerce_db"
\set ON_ERROR_STOP on
\set QUIET on
SELECT format('ALTER TABLE public.%I OWNER TO %I', tablename, :'commerce_user')
  FROM pg_tables WHERE schemaname = 'public' AND tableowner <> :'commerce_user' \gexec
SELECT format('ALTER VIEW public.%I OWNER TO %I', viewname, :'commerce_user')
  FROM pg_views WHERE schemaname = 'public' AND viewowner <> :'commerce_user' \gexec
SELECT format('ALTER SEQUENCE public.%I OWNER TO %I', sequencename, :'commerce_user')
  FROM pg_sequences WHERE schemaname = 'public' AND sequenceowner <> :'commerce_user' \gexec
SELECT format('ALTER TYPE public.%I OWNER TO %I', t.typname, :'commerce_user')
  FROM pg_type AS t JOIN pg_namespace AS n ON n.oid = t.typnamespace
 WHERE n.nspname = 'public' AND t.typtype IN ('e', 'd', 'r', 'm')
   AND pg_get_userbyid(t.typowner) <> :'commerce_user' \gexec

\echo 'roles.sql: the Temporal and commerce database users and their databases are in place'

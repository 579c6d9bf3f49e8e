"""Our tables on PostgreSQL, versioned like SQLite's: created once, upgraded in order, newer refused.

The same tables as `hitl_graphs.storage.sqlite.schema` (read there what each holds), in
PostgreSQL's types. Two choices differ on purpose:

- JSON columns are `TEXT`, not `JSONB`: an audit entry's hash covers the exact text of its data,
  and `JSONB` would re-order keys and re-space it; the request and decision round-trip unchanged.
- Times are `DOUBLE PRECISION` seconds since the epoch, as the runtime passes them (`time.time()`),
  so a lease or deadline compares the same on both stores and an entry's `at` hashes the same.

`hitl_meta` holds the version. `migrate` (its module) runs `apply` under the migration lock.
"""

from __future__ import annotations

from typing import Final

import psycopg
from psycopg.rows import DictRow

from hitl_graphs.errors import ConfigError, SchemaVersionError
from hitl_graphs.storage.postgres.audit import AUDIT_LOCK_KEY, KEYED_STATE, NO_HEAD_STATE, THREAD_LOCK_KEY
from hitl_graphs.storage.postgres.connection import redact

LEDGER = """
CREATE TABLE IF NOT EXISTS hitl_threads (
    thread_id   TEXT PRIMARY KEY,
    workflow    TEXT NOT NULL,
    status      TEXT NOT NULL,
    outcome     TEXT,
    error       TEXT,
    owner       TEXT,
    lease_until DOUBLE PRECISION,
    created_at  DOUBLE PRECISION NOT NULL,
    updated_at  DOUBLE PRECISION NOT NULL,
    started_by  TEXT
);
CREATE INDEX IF NOT EXISTS hitl_threads_status ON hitl_threads (status);
CREATE TABLE IF NOT EXISTS hitl_reviews (
    thread_id     TEXT NOT NULL,
    review_id     TEXT NOT NULL,
    workflow      TEXT NOT NULL,
    status        TEXT NOT NULL,
    checkpoint_id TEXT,
    request       TEXT NOT NULL,
    decision      TEXT,
    created_at    DOUBLE PRECISION NOT NULL,
    decided_at    DOUBLE PRECISION,
    applied_at    DOUBLE PRECISION,
    deadline      DOUBLE PRECISION,
    required_role TEXT,
    PRIMARY KEY (thread_id, review_id)
);
CREATE INDEX IF NOT EXISTS hitl_reviews_waiting ON hitl_reviews (created_at, review_id) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS hitl_reviews_waiting_in ON hitl_reviews (workflow, created_at, review_id) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS hitl_reviews_due ON hitl_reviews (deadline) WHERE status = 'pending' AND deadline IS NOT NULL;
CREATE INDEX IF NOT EXISTS hitl_reviews_decided ON hitl_reviews (thread_id) WHERE status = 'decided';
CREATE TABLE IF NOT EXISTS hitl_events (
    seq       BIGINT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    review_id TEXT,
    event     TEXT NOT NULL,
    actor     TEXT,
    data      TEXT NOT NULL,
    at        DOUBLE PRECISION NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS hitl_events_thread ON hitl_events (thread_id, seq);
CREATE TABLE IF NOT EXISTS hitl_audit_head (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    seq  BIGINT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS hitl_feedback (
    id        BIGSERIAL PRIMARY KEY,
    thread_id TEXT NOT NULL,
    workflow  TEXT NOT NULL,
    key       TEXT NOT NULL,
    score     DOUBLE PRECISION NOT NULL,
    comment   TEXT,
    actor     TEXT,
    at        DOUBLE PRECISION NOT NULL,
    exported  BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX IF NOT EXISTS hitl_feedback_workflow ON hitl_feedback (workflow, at);
CREATE TABLE IF NOT EXISTS hitl_effects (
    thread_id TEXT NOT NULL,
    key       TEXT NOT NULL,
    result    TEXT NOT NULL,
    at        DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (thread_id, key)
);
CREATE TABLE IF NOT EXISTS hitl_remembered (
    workflow    TEXT NOT NULL,
    actor       TEXT NOT NULL,
    tool        TEXT NOT NULL,
    approved_by TEXT,
    at          DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (workflow, actor, tool)
);
CREATE TABLE IF NOT EXISTS hitl_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

TOKENS = """
CREATE TABLE IF NOT EXISTS hitl_tokens (
    id         TEXT PRIMARY KEY,
    hash       TEXT NOT NULL UNIQUE,
    actor      TEXT NOT NULL,
    roles      TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    revoked_at DOUBLE PRECISION
);
"""

WEBHOOKS = """
CREATE TABLE IF NOT EXISTS hitl_webhooks (
    id            TEXT PRIMARY KEY,
    url           TEXT NOT NULL,
    events        TEXT NOT NULL,
    workflow      TEXT,
    secret        TEXT NOT NULL,
    format        TEXT NOT NULL,
    created_at    DOUBLE PRECISION NOT NULL,
    disabled_at   DOUBLE PRECISION,
    cursor        BIGINT NOT NULL,
    claimed_by    TEXT,
    claimed_until DOUBLE PRECISION
);
CREATE TABLE IF NOT EXISTS hitl_deliveries (
    id          BIGSERIAL PRIMARY KEY,
    webhook_id  TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    attempt     INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    status_code INTEGER,
    error       TEXT,
    at          DOUBLE PRECISION NOT NULL,
    next_retry  DOUBLE PRECISION
);
CREATE INDEX IF NOT EXISTS hitl_deliveries_webhook ON hitl_deliveries (webhook_id, id);
"""

INPUTS = """
CREATE TABLE IF NOT EXISTS hitl_inputs (
    thread_id TEXT PRIMARY KEY,
    input     TEXT NOT NULL
);
"""

_APPEND_FUNCTION = f"""
CREATE OR REPLACE FUNCTION hitl_audit_append(p_thread TEXT[], p_n BIGINT[], p_review TEXT[], p_event TEXT[],
    p_actor TEXT[], p_data TEXT[], p_at DOUBLE PRECISION[], p_prev TEXT[], p_hash TEXT[], p_kid TEXT)
RETURNS BIGINT LANGUAGE plpgsql AS $fn$
DECLARE
    s BIGINT;
    a TEXT;
    last_hash TEXT;
BEGIN
    INSERT INTO hitl_audit_threads (thread_id, n, hash)
    SELECT DISTINCT ON (t) t, n, h FROM unnest(p_thread, p_n, p_hash) WITH ORDINALITY AS x(t, n, h, o) ORDER BY t, o DESC
    ON CONFLICT (thread_id) DO UPDATE SET n = EXCLUDED.n, hash = EXCLUDED.hash;
    PERFORM pg_advisory_xact_lock({AUDIT_LOCK_KEY});
    SELECT seq, hash INTO s, a FROM hitl_audit_head WHERE id = 1;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM hitl_events) THEN
            RAISE EXCEPTION USING ERRCODE = '{NO_HEAD_STATE}', MESSAGE = (SELECT count(*) FROM hitl_events)::TEXT;
        END IF;
        s := 0;
        a := repeat('0', 64);
    ELSE
        SELECT hash INTO last_hash FROM hitl_events WHERE seq = s;
        IF left(last_hash, 5) = 'hmac:' AND (p_kid IS NULL OR substr(last_hash, 6, 8) <> p_kid) THEN
            RAISE EXCEPTION USING ERRCODE = '{KEYED_STATE}', MESSAGE = last_hash;
        END IF;
    END IF;
    FOR i IN 1 .. coalesce(array_length(p_hash, 1), 0) LOOP
        s := s + 1;
        a := encode(sha256(convert_to(a || ':' || s || ':' || p_hash[i], 'UTF8')), 'hex');
        INSERT INTO hitl_events (seq, thread_id, review_id, event, actor, data, at, prev_hash, hash, anchor)
        VALUES (s, p_thread[i], p_review[i], p_event[i], p_actor[i], p_data[i], p_at[i], p_prev[i], p_hash[i], a);
    END LOOP;
    INSERT INTO hitl_audit_head (id, seq, hash) VALUES (1, s, a)
    ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash;
    RETURN s;
END
$fn$
"""

THREAD_CHAINS: Final[tuple[str, ...]] = (
    "ALTER TABLE hitl_events ADD COLUMN IF NOT EXISTS anchor TEXT",
    "CREATE TABLE IF NOT EXISTS hitl_audit_threads (thread_id TEXT PRIMARY KEY, n BIGINT NOT NULL, hash TEXT NOT NULL)",
    "INSERT INTO hitl_audit_threads (thread_id, n, hash) SELECT thread_id, count(*), (array_agg(hash ORDER BY seq DESC))[1] "
    "FROM hitl_events GROUP BY thread_id ON CONFLICT (thread_id) DO NOTHING",
    _APPEND_FUNCTION,
)

# A thread's audit lock and the read of its last entry in one statement (`audit.lock`): a function,
# because a statement's snapshot is taken before it runs, and the read must see the commit of
# whoever held the lock before us; in PL/pgSQL each statement takes a new snapshot (READ COMMITTED).
# It also sets the transaction's commit not to wait for the disk (`commits`: a flushed commit
# follows where a promise needs one), which a transaction otherwise spends a statement on.
_THREAD_HEAD_FUNCTION = f"""
CREATE OR REPLACE FUNCTION hitl_audit_thread_head(p_thread TEXT)
RETURNS TABLE (n BIGINT, hash TEXT) LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM pg_advisory_xact_lock({THREAD_LOCK_KEY}, hashtext(p_thread));
    RETURN QUERY SELECT t.n, t.hash FROM hitl_audit_threads t WHERE t.thread_id = p_thread;
END
$fn$
"""

MIGRATIONS: Final[tuple[tuple[int, str | tuple[str, ...]], ...]] = (
    (1, LEDGER), (2, TOKENS), (3, WEBHOOKS), (4, INPUTS), (5, THREAD_CHAINS), (6, (_THREAD_HEAD_FUNCTION,)))
"""(version, DDL) in order: a script of `;`-separated statements, or the statements themselves (a
function's body holds `;`). 1: every table SQLite's schema 3 has; 2: API tokens (their hashes);
3: webhooks, their cursors and the delivery log; 4: run inputs kept outside the audit log until
the first checkpoint (SQLite's 6); 5: audit entries linked within their thread and anchored into
the global chain by the database (`audit`): each entry's anchor, each thread's last entry, and
the function that appends; 6: the function that takes a thread's audit lock and reads its last
entry, one statement instead of two in every transaction that appends."""

SCHEMA_VERSION: Final[int] = MIGRATIONS[-1][0]


def read_version(conn: psycopg.Connection[DictRow]) -> int | None:
    """The database's schema version of ours; None where our tables are not there yet."""
    exists = conn.execute("SELECT to_regclass('hitl_meta') IS NOT NULL AS present").fetchone()
    if not exists or not exists["present"]:
        return None
    row = conn.execute("SELECT value FROM hitl_meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        return None
    try:
        return int(row["value"])
    except ValueError:
        raise ConfigError(f"the database's schema version {row['value']!r} is not a number; the table was edited") from None


def refuse_newer(version: int | None, url: str) -> None:
    """Raises SchemaVersionError for a database written by a newer hitl_graphs."""
    if version is not None and version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"database {redact(url)} has schema version {version}, newer than this hitl_graphs reads ({SCHEMA_VERSION}); "
            "upgrade hitl-graphs (pip install -U 'hitl-graphs[postgres]') to open it"
        )


def apply(conn: psycopg.Connection[DictRow], url: str) -> None:
    """Run the steps after the database's version in one transaction; the caller holds the migration lock."""
    with conn.transaction():
        version = read_version(conn)
        refuse_newer(version, url)
        for step, ddl in MIGRATIONS:
            if version is None or step > version:
                for statement in ddl.split(";") if isinstance(ddl, str) else ddl:  # one at a time: a prepared statement holds one
                    if statement.strip():
                        conn.execute(statement)
        conn.execute(
            "INSERT INTO hitl_meta (key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (str(SCHEMA_VERSION),),
        )

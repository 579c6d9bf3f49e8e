"""The SQLite schema: every table of ours in one place, created once, upgraded in order.

A version row (`hitl_meta`) says which schema a file holds. Opening a file whose schema is
current runs no DDL at all, so opening takes no write lock: a command that only reads, or a
`hitl approve` started while another process runs the thread, never queues behind that writer
before it has looked at the thread. A file from before versioning (no row) is version 1. A file
written by a newer hitl_graphs is refused with one line instead of failing later with a
confusing error (or, worse, half working).

Upgrades run the steps of `MIGRATIONS` after the file's version, in order, inside one
`BEGIN IMMEDIATE` transaction, so two processes opening an old file at once upgrade it once;
every step is idempotent (`IF NOT EXISTS`), so a step interrupted by a crash simply runs again.
A file from before versioning runs every step: what its release created is not known exactly.

The tables:

- `hitl_threads`: one row per thread started through the runner: workflow, status, and while a
  process runs it, that process (`owner`) and a lease, so a crash can be told from a long run.
- `hitl_reviews`: one row per review: pending -> decided -> applied (or superseded / cancelled),
  the request shown and the decision taken. Listing pending reviews is an index range scan.
- `hitl_events` and `hitl_audit_head`: the append-only, hash-chained history (`hitl_graphs.audit`).
- `hitl_effects`: results of `run_once` effects and the keys of `record_event` entries (a key keeps
  `base.RECORDED`, not the entry's data: that is stored once, in `hitl_events`).
- `hitl_feedback`: ratings of finished threads.
- `hitl_remembered`: approvals remembered per workflow and actor (`AskOncePolicy(scope="workflow")`).
- `hitl_tokens`: API tokens, as hashes, with the actor and roles each speaks for.
- `hitl_inputs`: a run's input while no checkpoint holds it yet (what `recover` runs again); the
  audit log keeps only its hash.
- `hitl_webhooks` and `hitl_deliveries`: where notifications go, each webhook's cursor into
  `hitl_events` (the history is the outbox) and who is delivering it now; the log of attempts.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

from hitl_graphs.errors import ConfigError, SchemaVersionError

# Tables keyed by their primary key (WITHOUT ROWID) and partial indexes over the reviews still
# waiting: a row written is one b-tree page fewer, and a review leaves the listing indexes once
# decided, so the pages a cycle dirties (and the WAL must carry) stay few. A thread's reviews are
# found through the primary key's thread_id prefix.
LEDGER = """
CREATE TABLE IF NOT EXISTS hitl_threads (
    thread_id   TEXT PRIMARY KEY,
    workflow    TEXT NOT NULL,
    status      TEXT NOT NULL,
    outcome     TEXT,
    error       TEXT,
    owner       TEXT,
    lease_until REAL,
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL,
    started_by  TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS hitl_threads_status ON hitl_threads (status);
CREATE TABLE IF NOT EXISTS hitl_reviews (
    thread_id     TEXT NOT NULL,
    review_id     TEXT NOT NULL,
    workflow      TEXT NOT NULL,
    status        TEXT NOT NULL,
    checkpoint_id TEXT,
    request       TEXT NOT NULL,
    decision      TEXT,
    created_at    REAL NOT NULL,
    decided_at    REAL,
    applied_at    REAL,
    deadline      REAL,
    required_role TEXT,
    PRIMARY KEY (thread_id, review_id)
);
DROP INDEX IF EXISTS hitl_reviews_deadline;
DROP INDEX IF EXISTS hitl_reviews_pending;
DROP INDEX IF EXISTS hitl_reviews_thread;
DROP INDEX IF EXISTS hitl_reviews_workflow;
CREATE INDEX IF NOT EXISTS hitl_reviews_waiting ON hitl_reviews (created_at, review_id) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS hitl_reviews_waiting_in ON hitl_reviews (workflow, created_at, review_id) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS hitl_reviews_due ON hitl_reviews (deadline) WHERE status = 'pending' AND deadline IS NOT NULL;
CREATE INDEX IF NOT EXISTS hitl_reviews_decided ON hitl_reviews (thread_id) WHERE status = 'decided';
"""

# the audit log's table as schema 7 stores it (`packing`: no prev_hash, hashes as bytes); a file
# from an older release is rebuilt into it by `EVENTS_V7`
_EVENTS = """ (
    seq       INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL,
    review_id TEXT,
    event     TEXT NOT NULL,
    actor     TEXT,
    data      TEXT NOT NULL,
    at        REAL NOT NULL,
    hash      BLOB NOT NULL
);
"""

AUDIT = "CREATE TABLE IF NOT EXISTS hitl_events" + _EVENTS + """
CREATE INDEX IF NOT EXISTS hitl_events_thread ON hitl_events (thread_id, seq);
CREATE TABLE IF NOT EXISTS hitl_audit_head (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    seq  INTEGER NOT NULL,
    hash TEXT NOT NULL
);
"""

FEEDBACK = """
CREATE TABLE IF NOT EXISTS hitl_feedback (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    workflow  TEXT NOT NULL,
    key       TEXT NOT NULL,
    score     REAL NOT NULL,
    comment   TEXT,
    actor     TEXT,
    at        REAL NOT NULL,
    exported  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS hitl_feedback_workflow ON hitl_feedback (workflow, at);
"""

EFFECTS = """
CREATE TABLE IF NOT EXISTS hitl_effects (
    thread_id TEXT NOT NULL,
    key       TEXT NOT NULL,
    result    TEXT NOT NULL,
    at        REAL NOT NULL,
    PRIMARY KEY (thread_id, key)
) WITHOUT ROWID;
"""

META = """
CREATE TABLE IF NOT EXISTS hitl_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
"""

REMEMBERED = """
CREATE TABLE IF NOT EXISTS hitl_remembered (
    workflow    TEXT NOT NULL,
    actor       TEXT NOT NULL,
    tool        TEXT NOT NULL,
    approved_by TEXT,
    at          REAL NOT NULL,
    PRIMARY KEY (workflow, actor, tool)
) WITHOUT ROWID;
"""

TOKENS = """
CREATE TABLE IF NOT EXISTS hitl_tokens (
    id         TEXT PRIMARY KEY,
    hash       TEXT NOT NULL UNIQUE,
    actor      TEXT NOT NULL,
    roles      TEXT NOT NULL,
    created_at REAL NOT NULL,
    revoked_at REAL
) WITHOUT ROWID;
"""

WEBHOOKS = """
CREATE TABLE IF NOT EXISTS hitl_webhooks (
    id            TEXT PRIMARY KEY,
    url           TEXT NOT NULL,
    events        TEXT NOT NULL,
    workflow      TEXT,
    secret        TEXT NOT NULL,
    format        TEXT NOT NULL,
    created_at    REAL NOT NULL,
    disabled_at   REAL,
    cursor        INTEGER NOT NULL,
    claimed_by    TEXT,
    claimed_until REAL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hitl_deliveries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id  TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    status_code INTEGER,
    error       TEXT,
    at          REAL NOT NULL,
    next_retry  REAL
);
CREATE INDEX IF NOT EXISTS hitl_deliveries_webhook ON hitl_deliveries (webhook_id, id);
"""

INPUTS = """
CREATE TABLE IF NOT EXISTS hitl_inputs (
    thread_id TEXT PRIMARY KEY,
    input     TEXT NOT NULL
) WITHOUT ROWID;
"""

# Threads are looked up by status only while not done (running, paused, failed: what recovery and
# the worker queue look for); a finished thread leaves the index. A query uses it by repeating its
# condition (`LIVE`).
LIVE = "status <> 'done'"
LIVE_THREADS = f"""
DROP INDEX IF EXISTS hitl_threads_status;
CREATE INDEX IF NOT EXISTS hitl_threads_live ON hitl_threads (status) WHERE {LIVE};
"""

# Entries keep their seq, content and hash (hex text, which reads as before); the stored
# prev_hash goes: it is the entry before's hash, which reads and `verify` take from that entry.
# Idempotent: on a table already in this shape it copies the rows over unchanged.
EVENTS_V7 = "CREATE TABLE IF NOT EXISTS hitl_events_v7" + _EVENTS + """
INSERT INTO hitl_events_v7 (seq, thread_id, review_id, event, actor, data, at, hash)
    SELECT seq, thread_id, review_id, event, actor, data, at, hash FROM hitl_events;
DROP TABLE hitl_events;
ALTER TABLE hitl_events_v7 RENAME TO hitl_events;
CREATE INDEX IF NOT EXISTS hitl_events_thread ON hitl_events (thread_id, seq);
""" + LIVE_THREADS

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (1, LEDGER + AUDIT + FEEDBACK + EFFECTS),
    (2, META),
    (3, REMEMBERED),
    (4, TOKENS),
    (5, WEBHOOKS),
    (6, INPUTS),
    (7, EVENTS_V7),
)
"""(version, DDL) in order: what each release added. 1: the tables before versioning; 2: the
version row; 3: approvals remembered per workflow and actor; 4: API tokens (their hashes);
5: webhooks, their cursors and the delivery log; 6: run inputs kept outside the audit log until
the first checkpoint (entries written before keep theirs in the `started` entry); 7: audit
entries without their previous entry's hash, new hashes as bytes, new review requests without
what their columns hold (`packing`; rows written before read as they are), threads indexed by
status only while not done."""

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The schema this release writes."""


def read_version(conn: sqlite3.Connection) -> int | None:
    """The file's schema version: None for a new (empty) file, 1 for a file from before versioning."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "hitl_meta" in tables:
        row = conn.execute("SELECT value FROM hitl_meta WHERE key = 'schema_version'").fetchone()
        if row is not None:
            try:
                return int(row[0])
            except ValueError:
                raise ConfigError(f"the database's schema version {row[0]!r} is not a number; the file was edited") from None
    return 1 if "hitl_threads" in tables else None


def ensure_schema(conn: sqlite3.Connection, lock: threading.Lock, path: str, setup_saver: Callable[[], None]) -> None:
    """Bring the file to `SCHEMA_VERSION`, creating it if new; refuse a newer file.

    `setup_saver` creates LangGraph's checkpoint tables (the saver's own, idempotent `setup`);
    it commits on its own, so it runs just before our transaction, only when ours runs.

    Raises:
        SchemaVersionError: the file was written by a newer hitl_graphs.
    """
    with lock:
        version = read_version(conn)
        if version == SCHEMA_VERSION:
            return
        _refuse_newer(version, path)
        setup_saver()
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = read_version(conn)  # another process may have upgraded it meanwhile
            _refuse_newer(version, path)
            if version != SCHEMA_VERSION:
                after = version if version is not None and version >= 2 else 0
                for _, ddl in (step for step in MIGRATIONS if step[0] > after):
                    for statement in ddl.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                conn.execute("INSERT OR REPLACE INTO hitl_meta (key, value) VALUES ('schema_version', ?)",
                             (str(SCHEMA_VERSION),))
        except BaseException:
            conn.rollback()
            raise
        conn.commit()


def _refuse_newer(version: int | None, path: str) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"database {path} has schema version {version}, newer than this hitl_graphs reads ({SCHEMA_VERSION}); "
            "upgrade hitl-graphs (pip install -U hitl-graphs) to open it"
        )

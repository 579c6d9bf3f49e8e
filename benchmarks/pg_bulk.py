"""Fill a PostgreSQL database with many real paused threads, fast (what `bulk.py` does for SQLite).

One thread runs through the real runtime (`Runner.start`, pausing at its review). Its rows are then
copied under new thread ids by the server, in one transaction: one `INSERT ... SELECT` per table
that has a `thread_id` column (LangGraph's `checkpoints`, `checkpoint_blobs`, `checkpoint_writes`,
and our ledger tables), joined with a temporary table of the new ids (sent with `COPY`). What
changes per copy is what `bulk.py` changes: the thread id, inside the review request's JSON too,
the ledger's times (spread so copies list oldest first), and the audit log, recomputed entry by
entry here as the store writes it (each copy's entries linked within the copy, anchored into the
global chain; each copy's last entry in `hitl_audit_threads`) and sent with `COPY`, so `hitl audit
verify` still passes. Checkpoint ids stay the same
(they are per thread), so each copy resumes exactly like the original. `ANALYZE` at the end gives
the planner the statistics a live database would have.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

_TIME_COLUMNS = {"created_at", "updated_at", "at"}
_ISO = """'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'"""


def populate(url: str, n: int, *, workflow: Any, input: dict[str, Any], dt: float = 0.001) -> dict[str, Any]:
    """Make the database at `url` hold `n` paused threads of `workflow` (one real, `n - 1` copies)."""
    from hitl_graphs import Runner

    t0 = time.perf_counter()
    with Runner.open(url, workflows=[workflow]) as runner:
        view = runner.start(workflow.name, input, thread_id=f"bulk-template-{uuid.uuid4().hex[:8]}")
        if view.status != "paused":
            raise RuntimeError(f"the bulk template did not pause: {view.status} {view.error}")
        key = runner.store.audit_key
    copy_thread(url, view.thread_id, n - 1, dt=dt, key=key)
    return {"threads": n, "template": view.thread_id, "seconds": round(time.perf_counter() - t0, 2)}


def copy_thread(url: str, source: str, count: int, *, dt: float = 0.001, key: bytes | None = None) -> None:
    """Copy every row of thread `source` under `count` new thread ids, in one transaction."""
    import psycopg

    if count <= 0:
        return
    ids = [(i, uuid.uuid4().hex, -(count - i) * dt) for i in range(count)]
    with psycopg.connect(url) as conn, conn.transaction():
        conn.execute("SET LOCAL synchronous_commit = off")  # one commit; a crash mid-copy leaves a database to drop
        conn.execute("CREATE TEMP TABLE bulk_ids (i INTEGER PRIMARY KEY, tid TEXT NOT NULL, shift DOUBLE PRECISION NOT NULL) "
                     "ON COMMIT DROP")
        with conn.cursor().copy("COPY bulk_ids (i, tid, shift) FROM STDIN") as copy:
            for row in ids:
                copy.write_row(row)
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND column_name = 'thread_id' ORDER BY table_name")]
        for table in tables:
            if table == "hitl_events":
                _copy_chained_events(conn, source, ids, key)
                continue
            if table == "hitl_audit_threads":  # written with the events
                continue
            columns = [r[0] for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = %s AND coalesce(column_default, '') NOT LIKE 'nextval%%' ORDER BY ordinal_position",
                (table,))]
            select = [_expr(table, col) for col in columns]
            conn.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(select)} "
                f"FROM bulk_ids b CROSS JOIN (SELECT * FROM {table} WHERE thread_id = %s) s ORDER BY b.i",
                (source,),
            )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


def _expr(table: str, col: str) -> str:
    if col == "thread_id":
        return "b.tid"
    if table == "hitl_reviews" and col == "request":
        return ("jsonb_set(jsonb_set(s.request::jsonb, '{thread_id}', to_jsonb(b.tid)), '{created_at}', "
                f"to_jsonb(to_char(to_timestamp(s.created_at + b.shift) AT TIME ZONE 'UTC', {_ISO})))::text")
    if table.startswith("hitl_") and col in _TIME_COLUMNS:
        return f"s.{col} + b.shift"
    return f"s.{col}"


def _copy_chained_events(conn: Any, source: str, ids: list[tuple[int, str, float]], key: bytes | None) -> None:
    """Append the source's events for every copy: each copy's entries linked within the copy (its
    place in the thread hashed), anchored into the global chain, as `hitl_audit_append` does."""
    from hitl_graphs import audit

    events = conn.execute("SELECT review_id, event, actor, data, at FROM hitl_events WHERE thread_id = %s ORDER BY seq",
                          (source,)).fetchall()
    head = conn.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
    seq, anchor = head if head else (0, audit.GENESIS)
    heads: list[tuple[str, int, str]] = []
    with conn.cursor().copy("COPY hitl_events (seq, thread_id, review_id, event, actor, data, at, prev_hash, hash, anchor) "
                            "FROM STDIN") as copy:
        for _, tid, shift in ids:
            prev = audit.GENESIS
            for place, (review_id, event, actor, data, at) in enumerate(events, 1):
                seq += 1
                when = at + shift
                digest = audit.entry_hash(prev, place, tid, review_id, event, actor, data, when, key)
                anchor = audit.anchor_hash(anchor, seq, digest)
                copy.write_row((seq, tid, review_id, event, actor, data, when, prev, digest, anchor))
                prev = digest
            heads.append((tid, len(events), prev))
    with conn.cursor().copy("COPY hitl_audit_threads (thread_id, n, hash) FROM STDIN") as copy:
        for row in heads:
            copy.write_row(row)
    conn.execute("UPDATE hitl_audit_head SET seq = %s, hash = %s WHERE id = 1", (seq, anchor))

"""Fill a database with many real paused threads, fast.

One thread runs through the real runtime (`Runner.start`, pausing at its review). Its rows are
then copied under new thread ids with SQL, in one transaction: LangGraph's `checkpoints` and
`writes`, and every ledger table that has a `thread_id` column. What changes per copy:

- the thread id, in every row, and inside the review request JSON (`hitl_reviews.request`);
- the ledger's timestamps, spread so the copies are listed oldest first, like real ones;
- the audit log's hash chain, when the ledger keeps one (`hitl_events.hash`, packed as the store packs it):
  recomputed entry by entry so `audit.verify` still passes.

Checkpoint ids stay the same in every copy: they are per thread in LangGraph's tables, and the
pending task and its interrupt are keyed by them, so each copy resumes exactly like the original.
This is why the template must pause at an `interrupt()` review (its review id is LangGraph's
interrupt id, which does not depend on the thread id); a static breakpoint's review id is derived
from the thread id and would have to be recomputed.

The benchmark resumes a sample of the copies through `Runner.resume` to prove they are real.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from typing import Any

# ledger columns holding a time: shifted per copy so the copies are ordered like real threads
_TIME_COLUMNS = {"created_at", "updated_at", "at"}
_CHAINED_EVENT_COLUMNS = {"seq", "thread_id", "review_id", "event", "actor", "data", "at", "hash"}  # schema 7 on


def populate(db: str, n: int, *, workflow: Any, input: dict[str, Any], dt: float = 0.001) -> dict[str, Any]:
    """Make `db` hold `n` paused threads of `workflow` (one real, `n - 1` copies). Returns timings."""
    from hitl_graphs import Runner

    t0 = time.perf_counter()
    with Runner.open(db, workflows=[workflow]) as runner:
        view = runner.start(workflow.name, input, thread_id=f"bulk-template-{uuid.uuid4().hex[:8]}")
        if view.status != "paused":
            raise RuntimeError(f"the bulk template did not pause: {view.status} {view.error}")
    copied = copy_thread(db, view.thread_id, n - 1, dt=dt)
    return {"threads": n, "template": view.thread_id, "copied": copied, "seconds": round(time.perf_counter() - t0, 3)}


def copy_thread(db: str, source: str, count: int, *, dt: float = 0.001) -> int:
    """Copy every row of thread `source` under `count` new thread ids, in one transaction."""
    if count <= 0:
        return 0
    conn = sqlite3.connect(db, timeout=60)
    try:
        conn.execute("PRAGMA busy_timeout=60000")
        conn.execute("PRAGMA cache_size=-262144")  # 256 MiB: index inserts stay in memory
        conn.execute("PRAGMA temp_store=MEMORY")
        # a benchmark file, written by this connection alone: no journal, no flushes while copying
        # (a crash mid-copy leaves a file to delete); back to WAL once done
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        # copy i is `shift_i` seconds older than the source, the first copy the oldest
        ids = [(i, uuid.uuid4().hex, -(count - i) * dt) for i in range(count)]
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TEMP TABLE bulk_ids (i INTEGER PRIMARY KEY, tid TEXT NOT NULL, shift REAL NOT NULL)")
        conn.executemany("INSERT INTO bulk_ids VALUES (?, ?, ?)", ids)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        for table in tables:
            columns = conn.execute(f"PRAGMA table_info({table})").fetchall()  # cid, name, type, notnull, default, pk
            names = [c[1] for c in columns]
            if "thread_id" not in names:
                continue
            if table == "hitl_events" and set(names) == _CHAINED_EVENT_COLUMNS:
                _copy_chained_events(conn, source, ids, names)
                continue
            rowid_pk = [c[1] for c in columns if c[5] == 1 and c[2].upper() == "INTEGER" and sum(x[5] > 0 for x in columns) == 1]
            keep = [c for c in names if c not in rowid_pk]
            select = []
            for col in keep:
                if col == "thread_id":
                    select.append("b.tid")
                elif table == "hitl_reviews" and col == "request":  # a packed request (schema 7) holds neither
                    select.append(
                        "CASE WHEN s.request LIKE '{\"review_id\"%' THEN json_set(s.request, '$.thread_id', b.tid, "
                        "'$.created_at', strftime('%Y-%m-%dT%H:%M:%fZ', s.created_at + b.shift, 'unixepoch')) "
                        "ELSE s.request END"
                    )
                elif table.startswith("hitl_") and col in _TIME_COLUMNS:
                    select.append(f"s.{col} + b.shift")
                else:
                    select.append(f"s.{col}")
            conn.execute(
                f"INSERT INTO {table} ({', '.join(keep)}) SELECT {', '.join(select)} "
                f"FROM bulk_ids b CROSS JOIN (SELECT * FROM {table} WHERE thread_id = ?) s ORDER BY b.i",
                (source,),
            )
        conn.execute("DROP TABLE temp.bulk_ids")
        conn.commit()
        conn.execute("PRAGMA journal_mode=WAL")
        return count
    except BaseException:
        conn.rollback()
        raise
    finally:
        conn.close()


def _copy_chained_events(conn: sqlite3.Connection, source: str, ids: list[tuple[int, str, float]], names: list[str]) -> None:
    """Append the source's events for every copy, extending the audit hash chain."""
    from hitl_graphs import audit
    from hitl_graphs.storage.sqlite.packing import pack_hash

    events = conn.execute(
        "SELECT review_id, event, actor, data, at FROM hitl_events WHERE thread_id = ? ORDER BY seq", (source,)
    ).fetchall()
    head = conn.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
    seq, prev = head if head else (0, audit.GENESIS)
    rows = []
    for _, tid, shift in ids:
        for review_id, event, actor, data, at in events:
            seq += 1
            when = at + shift
            digest = audit.entry_hash(prev, seq, tid, review_id, event, actor, data, when)
            rows.append((seq, tid, review_id, event, actor, data, when, pack_hash(digest)))
            prev = digest
    conn.executemany(
        "INSERT INTO hitl_events (seq, thread_id, review_id, event, actor, data, at, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.execute("INSERT OR REPLACE INTO hitl_audit_head (id, seq, hash) VALUES (1, ?, ?)", (seq, prev))

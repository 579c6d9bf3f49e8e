"""The work queue on PostgreSQL: workers on many machines take decided reviews without waiting on
each other, and sleep until the ledger announces work.

- Taking: one transaction selects a thread that holds a decision and that no live run holds
  (status paused, or running with its lease run out on the database's clock), `FOR UPDATE SKIP
  LOCKED`, and marks it as run by the worker. A row another worker is taking at that moment is
  skipped, not waited for, so N workers take N different threads at once; the update re-checks
  nothing because the row lock is held from the select to the commit: no thread is taken twice.
- Waking: the ledger sends `NOTIFY hitl_work` in the transaction that leaves a thread holding a
  decision nobody runs (a deferred decision: `Runner.decide`), and in the one that records a
  review with a deadline. PostgreSQL delivers a notification only when that transaction commits,
  so a woken worker finds the row. `wait` listens on a connection of its own (outside the pool:
  `LISTEN` belongs to a session) and returns on the first notification or at the timeout; what
  arrives while the worker is busy queues on that connection and wakes the next `wait` at once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

import psycopg
from psycopg.rows import DictRow
from psycopg_pool import ConnectionPool

from hitl_graphs.storage.postgres.connection import connect

CHANNEL: Final[str] = "hitl_work"
"""The channel the ledger notifies and workers listen on."""

DB_NOW: Final[str] = "extract(epoch FROM clock_timestamp())::double precision"
"""The database's clock, in seconds since the epoch: what leases are written and read with."""

WAITS: Final[str] = (
    "EXISTS (SELECT 1 FROM hitl_reviews p WHERE p.thread_id = r.thread_id AND p.status = 'pending' "
    "AND (p.request::jsonb #>> '{middleware,interrupt_id}') = (r.request::jsonb #>> '{middleware,interrupt_id}'))")
"""Review `r` is one action of a LangChain middleware batch whose other actions still wait for a
person: nothing to apply until the last is decided (what `recover` skips too)."""


class PostgresQueue:
    """`WorkQueue` on the store's pool, with one listening connection opened on the first `wait`."""

    announces = True
    """Workers sleep until `NOTIFY hitl_work`, not polling."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[DictRow]], url: str) -> None:
        self.pool = pool
        self.url = url
        self._listener: psycopg.Connection[DictRow] | None = None

    def take_decided(self, *, owner: str, lease: float, workflows: Sequence[str] | None = None) -> str | None:
        only, args = ("AND t.workflow = ANY(%s) ", [list(workflows)]) if workflows is not None else ("", [])
        with self.pool.connection() as c, c.transaction():
            got = c.execute(
                "SELECT t.thread_id FROM hitl_threads t WHERE (t.status = 'paused' OR (t.status = 'running' AND "
                f"(t.lease_until IS NULL OR t.lease_until <= {DB_NOW}))) {only}"
                "AND EXISTS (SELECT 1 FROM hitl_reviews r WHERE r.thread_id = t.thread_id AND r.status = 'decided' "
                f"AND NOT {WAITS}) "
                "ORDER BY t.updated_at LIMIT 1 FOR UPDATE OF t SKIP LOCKED",
                args,
            ).fetchone()
            if got is None:
                return None
            c.execute(f"UPDATE hitl_threads SET status = 'running', owner = %s, lease_until = {DB_NOW} + %s, "
                      "updated_at = %s WHERE thread_id = %s", (owner, lease, time.time(), got["thread_id"]))
            return str(got["thread_id"])

    def next_deadline(self) -> float | None:
        with self.pool.connection() as c:
            row = c.execute("SELECT min(deadline) AS d FROM hitl_reviews WHERE status = 'pending' "
                            "AND deadline IS NOT NULL").fetchone()
        return row["d"] if row else None

    def wait(self, timeout: float) -> bool:
        if self._listener is None or self._listener.closed:
            self._listener = connect(self.url)
            self._listener.execute(f"LISTEN {CHANNEL}")
        woken = False
        for _ in self._listener.notifies(timeout=max(timeout, 0.0), stop_after=1):
            woken = True
        if woken:  # take what else queued, so one look serves them all
            for _ in self._listener.notifies(timeout=0, stop_after=1000):
                pass
        return woken

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

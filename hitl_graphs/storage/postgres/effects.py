"""Effects' results, `record_event` entries and remembered approvals on PostgreSQL (`EffectStore`).

An effect's result is its own short transaction, committed before the node goes on: an effect
that happened is on the server, flushed to disk, before anything else can depend on it. A history
entry (`record_once`) only keeps books: in a run that writes its checkpoint where it stops
(`DEFER_KEY`), it waits with that checkpoint for the ledger's record of the stop and commits with
both (`saver.Deferred`), after the thread's start when the run is the thread's first (as on
SQLite); a crash before loses all three together, and the run done again records it again.
Otherwise it commits at once without waiting for the disk and rides on the next flushed commit
(`commits`). `ON CONFLICT DO NOTHING` keeps the first result when a replay races the first run.
"""

from __future__ import annotations

import json
import time
from typing import Any

import psycopg
from langgraph.config import get_config
from psycopg.rows import DictRow
from psycopg_pool import ConnectionPool

from hitl_graphs.audit import Event
from hitl_graphs.storage.base import DEFER_KEY, RECORDED
from hitl_graphs.storage.postgres.audit import append, lock
from hitl_graphs.storage.postgres.commits import transaction
from hitl_graphs.storage.postgres.saver import Deferred, History


class PostgresEffects:
    """Recorded effect results and remembered approvals."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[DictRow]], key: bytes | None,
                 deferred: Deferred | None = None) -> None:
        self.pool = pool
        self.key = key
        self.deferred = deferred

    def get(self, thread_id: str, key: str) -> tuple[bool, Any]:
        with self.pool.connection() as c:
            row = c.execute("SELECT result FROM hitl_effects WHERE thread_id = %s AND key = %s", (thread_id, key)).fetchone()
        return (True, json.loads(row["result"])) if row else (False, None)

    def put(self, thread_id: str, key: str, result: Any) -> None:
        with self.pool.connection() as c:
            c.execute("INSERT INTO hitl_effects (thread_id, key, result, at) VALUES (%s, %s, %s, %s) "
                      "ON CONFLICT DO NOTHING", (thread_id, key, json.dumps(result), time.time()))

    def record_once(self, thread_id: str, key: str, event: str, data: dict[str, Any]) -> None:
        """Append `event` to the thread's history unless `key` was recorded before: with the run's
        checkpoint if it waits for one (see the module), else in one transaction."""
        now = time.time()
        if self.deferred is not None and _run_defers():
            self.deferred.add_history(thread_id, History(key, event, data, now))
            return
        with transaction(self.pool, durable=False) as c:  # a history entry: rides on the next flushed commit
            added = c.execute("INSERT INTO hitl_effects (thread_id, key, result, at) VALUES (%s, %s, %s, %s) "
                              "ON CONFLICT DO NOTHING RETURNING key", (thread_id, key, RECORDED, now))
            lock(c, thread_id, self.key)  # the thread's audit lock in the same round trip
            if added.fetchone() is not None:
                append(c, thread_id, [Event(event, data=data)], now, self.key)

    def remembered(self, thread_id: str, tool: str) -> bool:
        with self.pool.connection() as c:
            row = c.execute(
                "SELECT 1 FROM hitl_threads t JOIN hitl_remembered r ON r.workflow = t.workflow AND r.actor = t.started_by "
                "WHERE t.thread_id = %s AND r.tool = %s", (thread_id, tool)).fetchone()
        return row is not None

    def remember(self, thread_id: str, tool: str, approved_by: str | None) -> bool:
        with self.pool.connection() as c:
            added = c.execute(
                "INSERT INTO hitl_remembered (workflow, actor, tool, approved_by, at) "
                "SELECT workflow, started_by, %s, %s, %s FROM hitl_threads WHERE thread_id = %s AND started_by IS NOT NULL "
                "ON CONFLICT DO NOTHING", (tool, approved_by, time.time(), thread_id)).rowcount
        return bool(added)


def _run_defers() -> bool:
    """Whether the run calling (a node's `record_event`) keeps its checkpoint for the ledger's commit."""
    try:
        return bool(get_config().get("configurable", {}).get(DEFER_KEY))
    except RuntimeError:  # called outside a run
        return False

"""Reads of a thread's history on SQLite: its entries as people read them, what `recover` needs of it.

The ledger (`ledger.SqliteLedger`) writes the history in its transactions; these only read it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from hitl_graphs.reviews import HistoryEntry
from hitl_graphs.storage.syncing import with_payload


class HistoryReads:
    """The history reads of `SqliteLedger` (a part of it)."""

    conn: sqlite3.Connection
    lock: threading.Lock

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.lock:
            return self.conn.execute(sql, args).fetchall()

    def history(self, thread_id: str) -> list[HistoryEntry]:
        return self._entries(f"{_ENTRIES} WHERE e.thread_id = ? ORDER BY e.seq", (thread_id,))

    def events_after(self, seq: int, *, limit: int = 100) -> list[HistoryEntry]:
        return self._entries(f"{_ENTRIES} WHERE e.seq > ? ORDER BY e.seq LIMIT ?", (seq, limit))

    def _entries(self, sql: str, args: Sequence[Any]) -> list[HistoryEntry]:
        return [
            HistoryEntry(seq=n, thread_id=t, review_id=r, event=e, actor=a, data=with_payload(e, json.loads(d), request),
                         at=datetime.fromtimestamp(at, UTC))
            for n, t, r, e, a, d, at, request in self._read(sql, args)
        ]

    def recover_attempts(self, thread_id: str) -> int:
        """How often `recover` ran the thread again since its last start, decision or retry request."""
        rows = self._read(
            "SELECT count(*) FROM hitl_events WHERE thread_id = ? AND event = 'recovering' AND seq > coalesce(("
            "SELECT max(seq) FROM hitl_events WHERE thread_id = ? AND event IN ('started', 'decided', 'retry_requested')"
            "), 0)",
            (thread_id, thread_id),
        )
        return int(rows[0][0])

    def started_input(self, thread_id: str) -> Any:
        """The input the thread was started with (JSON), while no checkpoint holds it; None if none is kept."""
        rows = self._read("SELECT input FROM hitl_inputs WHERE thread_id = ?", (thread_id,))
        if rows:
            return json.loads(rows[0][0])
        # a thread started before inputs left the audit log keeps its input in its `started` entry
        rows = self._read("SELECT data FROM hitl_events WHERE thread_id = ? AND event = 'started' ORDER BY seq LIMIT 1",
                          (thread_id,))
        return json.loads(rows[0][0]).get("input") if rows else None


# a review's payload is stored once, in its ledger row; its `review_requested` entry gets it back here
_ENTRIES = ("SELECT e.seq, e.thread_id, e.review_id, e.event, e.actor, e.data, e.at, r.request FROM hitl_events e "
            "LEFT JOIN hitl_reviews r ON e.event = 'review_requested' AND r.thread_id = e.thread_id "
            "AND r.review_id = e.review_id")

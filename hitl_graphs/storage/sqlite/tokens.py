"""API tokens on SQLite: hashes only (see `hitl_graphs.identity`).

The server checks a token on every request, on its event loop (`afind`). A hop to a worker
thread for that costs more than the lookup itself (an indexed read of a local file, tens of
microseconds), so `afind` reads inline, on a connection of its own: in WAL mode a reader never
waits for a writer, so a decision being committed on the store's connection (its lock held
through a disk flush) never stalls the loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Any

from hitl_graphs.storage.base import TokenRow
from hitl_graphs.storage.sqlite.connection import write_transaction

_COLUMNS = "id, actor, roles, created_at, revoked_at"
_FIND = f"SELECT {_COLUMNS} FROM hitl_tokens WHERE hash = ? AND revoked_at IS NULL"


class SqliteTokens:
    """The `hitl_tokens` table."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock, path: str) -> None:
        self.conn = conn
        self.lock = lock
        self.path = path if path == ":memory:" else os.path.abspath(path)  # a later chdir changes nothing
        self._reader: sqlite3.Connection | None = None
        self._reader_lock = threading.Lock()

    def add(self, token_id: str, digest: str, actor: str, roles: Sequence[str]) -> TokenRow:
        row = TokenRow(token_id, actor, tuple(roles), time.time())
        with write_transaction(self.conn, self.lock) as c:
            c.execute("INSERT INTO hitl_tokens (id, hash, actor, roles, created_at) VALUES (?, ?, ?, ?, ?)",
                      (token_id, digest, actor, json.dumps(list(roles)), row.created_at))
        return row

    def listing(self) -> list[TokenRow]:
        with self.lock:
            rows = self.conn.execute(f"SELECT {_COLUMNS} FROM hitl_tokens ORDER BY created_at, id").fetchall()
        return [_row(r) for r in rows]

    def revoke(self, token_id: str) -> TokenRow | None:
        with write_transaction(self.conn, self.lock) as c:
            c.execute("UPDATE hitl_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (time.time(), token_id))
            got = c.execute(f"SELECT {_COLUMNS} FROM hitl_tokens WHERE id = ?", (token_id,)).fetchone()
        return _row(got) if got else None

    def find(self, digest: str) -> TokenRow | None:
        with self.lock:
            got = self.conn.execute(_FIND, (digest,)).fetchone()
        return _row(got) if got else None

    async def afind(self, digest: str) -> TokenRow | None:
        if self.path == ":memory:":  # one connection holds the database: take its lock on a thread
            return await asyncio.to_thread(self.find, digest)
        with self._reader_lock:
            if self._reader is None:
                self._reader = sqlite3.connect(self.path, check_same_thread=False)
            got = self._reader.execute(_FIND, (digest,)).fetchone()
        return _row(got) if got else None

    def close(self) -> None:
        with self._reader_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None


def _row(r: tuple[Any, ...]) -> TokenRow:
    return TokenRow(r[0], r[1], tuple(json.loads(r[2])), r[3], r[4])

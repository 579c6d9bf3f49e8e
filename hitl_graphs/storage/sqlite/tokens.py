"""API tokens on SQLite: hashes only (see `hitl_graphs.identity`)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Any

from hitl_graphs.storage.base import TokenRow
from hitl_graphs.storage.sqlite.connection import write_transaction

_COLUMNS = "id, actor, roles, created_at, revoked_at"


class SqliteTokens:
    """The `hitl_tokens` table."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        self.conn = conn
        self.lock = lock

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
            got = self.conn.execute(f"SELECT {_COLUMNS} FROM hitl_tokens WHERE hash = ? AND revoked_at IS NULL",
                                    (digest,)).fetchone()
        return _row(got) if got else None


def _row(r: tuple[Any, ...]) -> TokenRow:
    return TokenRow(r[0], r[1], tuple(json.loads(r[2])), r[3], r[4])

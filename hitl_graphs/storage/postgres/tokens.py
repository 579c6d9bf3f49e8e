"""API tokens on PostgreSQL: hashes only (see `hitl_graphs.identity`)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence

import psycopg
from psycopg.rows import DictRow
from psycopg_pool import ConnectionPool

from hitl_graphs.storage.base import TokenRow

_COLUMNS = "id, actor, roles, created_at, revoked_at"


class PostgresTokens:
    """The `hitl_tokens` table."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[DictRow]]) -> None:
        self.pool = pool

    def add(self, token_id: str, digest: str, actor: str, roles: Sequence[str]) -> TokenRow:
        row = TokenRow(token_id, actor, tuple(roles), time.time())
        with self.pool.connection() as c:
            c.execute("INSERT INTO hitl_tokens (id, hash, actor, roles, created_at) VALUES (%s, %s, %s, %s, %s)",
                      (token_id, digest, actor, json.dumps(list(roles)), row.created_at))
        return row

    def listing(self) -> list[TokenRow]:
        with self.pool.connection() as c:
            return [_row(r) for r in c.execute(f"SELECT {_COLUMNS} FROM hitl_tokens ORDER BY created_at, id").fetchall()]

    def revoke(self, token_id: str) -> TokenRow | None:
        with self.pool.connection() as c:
            c.execute("UPDATE hitl_tokens SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL", (time.time(), token_id))
            got = c.execute(f"SELECT {_COLUMNS} FROM hitl_tokens WHERE id = %s", (token_id,)).fetchone()
        return _row(got) if got else None

    def find(self, digest: str) -> TokenRow | None:
        with self.pool.connection() as c:
            got = c.execute(f"SELECT {_COLUMNS} FROM hitl_tokens WHERE hash = %s AND revoked_at IS NULL", (digest,)).fetchone()
        return _row(got) if got else None

    async def afind(self, digest: str) -> TokenRow | None:
        return await asyncio.to_thread(self.find, digest)  # a round trip to the server: off the loop


def _row(r: DictRow) -> TokenRow:
    return TokenRow(r["id"], r["actor"], tuple(json.loads(r["roles"])), r["created_at"], r["revoked_at"])

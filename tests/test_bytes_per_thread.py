"""What a finished thread costs on disk beside LangGraph's checkpoints (issue 15: at most 2 KB), and
a file from the previous release (schema 6) upgraded to the packed rows with its chain intact."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from benchmarks.large import document_graph  # the user-shaped graph figure 8 measures
from hitl_graphs import Approve, Runner, SqliteStore, Workflow
from hitl_graphs.audit import GENESIS
from tests.conftest import hitl
from tests.workflows import WORKFLOWS

KEY = "a-long-random-secret-for-the-upgrade-test"


def _pages(db: str) -> int:
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        return int(conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0])
    finally:
        conn.close()


def test_a_finished_thread_keeps_at_most_2kb_more_than_plain_langgraph(tmp_path: Path) -> None:
    """The same graph and input, run to the end N times by plain LangGraph and through the runner
    (both durability "exit"): what our tables add per thread (threads, review, audit entries)."""
    n, data = 200, {"document": "The quick brown fox jumps over the lazy dog. " * 20}
    plain_db, ours_db = str(tmp_path / "plain.sqlite"), str(tmp_path / "ours.sqlite")
    conn = sqlite3.connect(plain_db, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    app = document_graph().compile(checkpointer=saver)
    plain_empty = _pages(plain_db)
    for _ in range(n):
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        app.invoke(data, config, durability="exit")
        app.invoke(Command(resume={"kind": "approve", "actor": "ana"}), config, durability="exit")
    conn.close()
    plain = (_pages(plain_db) - plain_empty) / n

    with Runner(SqliteStore(ours_db), [Workflow("doc", document_graph, durability="exit")], owns_store=True) as runner:
        ours_empty = _pages(ours_db)
        for _ in range(n):
            paused = runner.start("doc", data)
            assert runner.resume(paused.thread_id, Approve(actor="ana")).status == "done"
        assert runner.audit_verify().ok
    ours = (_pages(ours_db) - ours_empty) / n
    assert ours - plain <= 2048, f"a finished thread keeps {ours - plain:.0f} bytes more than plain LangGraph's"


# -- a file written by the previous release ------------------------------------------------------------


def _as_written_by_schema_6(db: str) -> None:
    """Rewrite the file the way schema 6 stored it: every entry with its previous entry's hash and
    its own as hex text, each review's request whole, threads indexed by status."""
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT seq, thread_id, review_id, event, actor, data, at, hash FROM hitl_events ORDER BY seq").fetchall()
    requests = [(json.dumps(_whole(conn, t, r)), t, r) for t, r in conn.execute("SELECT thread_id, review_id FROM hitl_reviews")]
    conn.executescript("""
        DROP TABLE hitl_events;
        CREATE TABLE hitl_events (seq INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, review_id TEXT, event TEXT NOT NULL,
            actor TEXT, data TEXT NOT NULL, at REAL NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
        CREATE INDEX hitl_events_thread ON hitl_events (thread_id, seq);
        DROP INDEX hitl_threads_live;
        CREATE INDEX hitl_threads_status ON hitl_threads (status);
        UPDATE hitl_meta SET value = '6' WHERE key = 'schema_version';
    """)
    prev = GENESIS
    for *fields, stored in rows:
        digest = _hex(stored)
        conn.execute("INSERT INTO hitl_events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (*fields, prev, digest))
        prev = digest
    conn.executemany("UPDATE hitl_reviews SET request = ? WHERE thread_id = ? AND review_id = ?", requests)
    conn.commit()
    conn.close()


def _whole(conn: sqlite3.Connection, thread_id: str, review_id: str) -> dict[str, Any]:
    """A review's whole request, as `hitl show` reads it back."""
    with Runner(SqliteStore(conn.execute("PRAGMA database_list").fetchone()[2], audit_key=KEY), WORKFLOWS,
                owns_store=True) as runner:
        row = runner.ledger.review(thread_id, review_id)
        assert row is not None
        return row.request.model_dump(mode="json")


def _hex(stored: bytes | str) -> str:
    if isinstance(stored, str):
        return stored
    return stored.hex() if len(stored) == 32 else f"hmac:{stored[:4].hex()}:{stored[4:].hex()}"


def _seen(db: str, threads: list[str]) -> list[Any]:
    """What a person and an auditor read: each thread's history and show, the whole export."""
    out: list[Any] = []
    for thread_id in threads:
        for command in (["history", thread_id, "--json"], ["show", thread_id, "--json"]):
            result = hitl(db, *command, HITL_AUDIT_KEY=KEY)
            assert result.returncode == 0, result.stderr
            out.append(json.loads(result.stdout))
    exported = hitl(db, "audit", "export", HITL_AUDIT_KEY=KEY)
    assert exported.returncode == 0, exported.stderr
    return [*out, [json.loads(line) for line in exported.stdout.splitlines()]]


@pytest.fixture
def upgraded(db: str, effects_file: Path) -> tuple[str, list[str]]:
    """A schema-6 file with two finished threads written without a key and a paused one with it,
    opened (and so upgraded) by this release; what it showed before must read the same after."""
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        threads = [runner.start("pay", {"to": "acme", "amount": n}).thread_id for n in (5, 6)]
        for thread_id in threads:
            runner.resume(thread_id, Approve(actor="ana"))
    with Runner(SqliteStore(db, audit_key=KEY), WORKFLOWS, owns_store=True) as runner:
        threads.append(runner.start("pay", {"to": "bolt", "amount": 7}).thread_id)
    before = _seen(db, threads)
    _as_written_by_schema_6(db)
    assert _seen(db, threads) == before  # the first command upgraded the file; it reads the same
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT value FROM hitl_meta WHERE key = 'schema_version'").fetchone() == ("7",)
        assert "prev_hash" not in [c[1] for c in conn.execute("PRAGMA table_info(hitl_events)")]
    finally:
        conn.close()
    return db, threads


def test_a_chain_written_by_schema_6_verifies_after_the_upgrade_and_grows(upgraded: tuple[str, list[str]]) -> None:
    db, threads = upgraded
    assert hitl(db, "audit", "verify", HITL_AUDIT_KEY=KEY).returncode == 0
    with Runner(SqliteStore(db, audit_key=KEY), WORKFLOWS, owns_store=True) as runner:
        assert runner.resume(threads[-1], Approve(actor="ana")).status == "done"
        report = runner.audit_verify()
        assert report.ok and report.keyed and report.keyed_from is not None
    conn = sqlite3.connect(db)
    kinds = conn.execute("SELECT typeof(hash), count(*) FROM hitl_events GROUP BY 1 ORDER BY 1").fetchall()
    conn.close()
    assert [k for k, _ in kinds] == ["blob", "text"]  # old entries keep their hex; new ones are bytes


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        ("UPDATE hitl_events SET data = '{\"input_keys\": [\"to\"]}' WHERE seq = 1", "entry 1 was edited"),
        ("DELETE FROM hitl_events WHERE seq = 2", "entry 3 does not follow entry 1: an entry was deleted or reordered"),
        ("UPDATE hitl_events SET seq = -3 WHERE seq = 3; UPDATE hitl_events SET seq = 3 WHERE seq = 4; "
         "UPDATE hitl_events SET seq = 4 WHERE seq = -3", "entry 3 was edited"),
        ("UPDATE hitl_events SET seq = seq + 1000 WHERE seq >= 2; UPDATE hitl_events SET seq = seq - 999 WHERE seq >= 1002; "
         "INSERT INTO hitl_events SELECT 2, thread_id, review_id, event, actor, data, at, hash FROM hitl_events WHERE seq = 1",
         "entry 2 was edited"),
        ("UPDATE hitl_reviews SET request = json_set(request, '$.payload.amount', 5000)",
         "shows a payload other than the one the log committed to"),
    ],
    ids=["edited", "deleted", "reordered", "inserted", "payload-edited"],
)
def test_an_upgraded_chain_still_shows_a_tamper(upgraded: tuple[str, list[str]], tamper: str, problem: str) -> None:
    db, _ = upgraded
    conn = sqlite3.connect(db)
    conn.executescript(tamper)
    conn.close()
    result = hitl(db, "audit", "verify", HITL_AUDIT_KEY=KEY)
    assert result.returncode == 1 and problem in result.stderr, result.stderr

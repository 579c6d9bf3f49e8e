"""The audit log on PostgreSQL: entries linked within their thread, anchored into the global chain.

Against a real server: a transaction holding one thread's entries does not hold up another
thread's decision (it did, through the one global lock taken at the append); two appends to the
same thread still queue, so its chain never forks; a database from schema 4 upgrades and keeps
verifying, the head kept before the upgrade included; and `hitl audit verify` still finds an entry
edited, deleted or reordered, the same way it does on SQLite.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from hitl_graphs import Approve, AuditError, AuditHead, AuditKeyError, Runner
from hitl_graphs.audit import Event, chain
from hitl_graphs.storage.postgres import PostgresStore, migrate
from hitl_graphs.storage.postgres import audit as pg_audit
from hitl_graphs.storage.postgres.commits import transaction
from hitl_graphs.storage.postgres.connection import connect
from hitl_graphs.storage.postgres.schema import MIGRATIONS, SCHEMA_VERSION, read_version
from tests.conftest import hitl
from tests.workflows import WORKFLOWS, effects


@pytest.fixture(autouse=True)
def _no_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HITL_AUDIT_KEY", raising=False)


def _with_lock_timeout(url: str, ms: int) -> str:
    """The same database, on sessions that give up on a lock after `ms` instead of waiting."""
    return f"{url}?options={quote(f'-c lock_timeout={ms}')}"


def _history(runner: Runner) -> list[str]:
    """Three threads' entries interleaved: started, requested, decided, applied, ended."""
    ids = [runner.start("pay", {"to": "acme", "amount": n}).thread_id for n in (5, 6, 7)]
    for thread_id in ids[:2]:
        runner.resume(thread_id, Approve(actor="ana"))
    return ids


def test_a_transaction_holding_one_threads_entries_does_not_hold_up_another_threads_decision(
        pg_db_url: str, effects_file: Path) -> None:
    with Runner.open(pg_db_url, workflows=WORKFLOWS) as runner:
        slow, other = (runner.start("pay", {"to": "acme", "amount": n}).thread_id for n in (5, 6))
    with PostgresStore(pg_db_url) as store, transaction(store.pool, durable=True) as c:
        pg_audit.append(c, slow, [Event("note", actor="bob")], time.time(), None)  # not committed yet
        # a session that would wait for a lock fails instead: the decision must not wait at all
        with Runner.open(_with_lock_timeout(pg_db_url, 1000), workflows=WORKFLOWS) as impatient:
            assert impatient.resume(other, Approve(actor="ana")).status == "done"
    with Runner.open(pg_db_url, workflows=WORKFLOWS) as runner:
        assert [e.event for e in runner.history(slow)][-1] == "note"
        report = runner.audit_verify()
        assert report.ok, report.problem


def test_two_appends_to_one_thread_queue_so_its_chain_never_forks(pg_db_url: str, effects_file: Path) -> None:
    with Runner.open(pg_db_url, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("pay", {"to": "acme", "amount": 5}).thread_id
    with PostgresStore(pg_db_url) as first, PostgresStore(pg_db_url) as second:
        with transaction(first.pool, durable=True) as c:
            pg_audit.append(c, thread_id, [Event("note", actor="one")], time.time(), None)
            with psycopg.connect(pg_db_url) as probe:  # the first holds the thread's lock before the second asks
                _wait_for(probe, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = %s",
                          c.info.backend_pid)
            racer = threading.Thread(target=second.ledger.add_events, args=(thread_id, [Event("note", actor="two")]))
            racer.start()
            with psycopg.connect(pg_db_url) as probe:  # the second append waits on the thread's lock
                while not probe.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                                        ).fetchone()[0]:  # type: ignore[index]
                    assert racer.is_alive(), "the second append did not wait for the first"
                    time.sleep(0.01)
        racer.join()
        actors = [e.actor for e in first.ledger.history(thread_id) if e.event == "note"]
        assert actors == ["one", "two"]
        report = first.audit.verify()
        assert report.ok, report.problem


def _wait_for(probe: psycopg.Connection[tuple[object, ...]], sql: str, *args: object) -> None:
    """Poll until `sql`'s count is positive: the first statement of a pipelined transaction is
    sent when queued, but the server may run it a moment later (another session can get ahead)."""
    deadline = time.monotonic() + 30
    while not probe.execute(sql, args).fetchone()[0]:  # type: ignore[index]
        assert time.monotonic() < deadline, f"never true: {sql}"
        time.sleep(0.01)


def _schema_4_with_history(url: str) -> AuditHead:
    """A database as hitl_graphs wrote it before schema 5: one global chain, each entry linked to
    the entry before it, under the head row; returns its head."""
    with connect(url) as conn, conn.transaction():
        for _, ddl in MIGRATIONS[:4]:
            assert isinstance(ddl, str)
            for statement in ddl.split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute("INSERT INTO hitl_meta (key, value) VALUES ('schema_version', '4')")
        head: tuple[int, str] | None = None
        for thread_id in ("old-a", "old-b", "old-a"):
            rows = chain(head, thread_id, [Event("note", actor="eve", data={"n": 1})], 1_700_000_000.5, None)
            for row in rows:
                conn.execute("INSERT INTO hitl_events (seq, thread_id, review_id, event, actor, data, at, prev_hash, hash) "
                             "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", row)
            head = (rows[-1][0], rows[-1][8])
        assert head is not None
        conn.execute("INSERT INTO hitl_audit_head (id, seq, hash) VALUES (1, %s, %s)", head)
    return AuditHead(*head)


def test_a_schema_4_database_upgrades_and_its_old_and_new_entries_verify(pg_db_url: str, effects_file: Path) -> None:
    kept = _schema_4_with_history(pg_db_url)
    migrate(pg_db_url)
    with connect(pg_db_url) as conn:
        assert read_version(conn) == SCHEMA_VERSION
    with Runner.open(pg_db_url, workflows=WORKFLOWS) as runner:
        _history(runner)
        runner.ledger.add_events("old-a", [Event("note", actor="eve")])  # links to its entry from schema 4
        report = runner.audit_verify(expect_head=[kept])
        assert (report.ok, report.checked, report.kept_heads) == (True, runner.audit_head().seq, 1), report.problem
        assert report.checked > kept.seq
        assert runner.audit_verify(expect_head=[runner.audit_head()]).ok
    with psycopg.connect(pg_db_url) as conn:
        plain = conn.execute("SELECT count(*) FROM hitl_events WHERE anchor IS NULL").fetchone()[0]  # type: ignore[index]
        assert plain == 3  # only the entries from before the upgrade
        conn.execute("UPDATE hitl_events SET actor = 'mallory' WHERE seq = 2")
    verified = hitl(pg_db_url, "audit", "verify")
    assert verified.returncode == 1 and "entry 2 was edited" in verified.stderr


def _seq_of(conn: psycopg.Connection[tuple[object, ...]], thread_id: str, event: str) -> int:
    got = conn.execute("SELECT seq FROM hitl_events WHERE thread_id = %s AND event = %s ORDER BY seq LIMIT 1",
                       (thread_id, event)).fetchone()
    assert got is not None
    return int(str(got[0]))


def _swap(conn: psycopg.Connection[tuple[object, ...]], a: int, b: int) -> None:
    conn.execute("UPDATE hitl_events SET seq = -1 WHERE seq = %s", (a,))
    conn.execute("UPDATE hitl_events SET seq = %s WHERE seq = %s", (a, b))
    conn.execute("UPDATE hitl_events SET seq = %s WHERE seq = -1", (b,))


@pytest.mark.parametrize(
    ("forgery", "problem"),
    [
        ("edited", "was edited or moved: its content no longer matches its hash"),
        ("deleted", "an entry was deleted or reordered"),
        ("deleted-and-renumbered", "does not link to the entry before it"),
        ("reordered-within-a-thread", "does not link to the entry before it"),
        ("reordered-across-threads", "anchor does not follow the entries before it"),
        ("anchor-dropped", "is not anchored though entries before it are"),
        ("tail-deleted", "entries at the end were deleted"),
    ],
)
def test_verify_finds_an_entry_edited_deleted_or_reordered(pg_db_url: str, effects_file: Path, forgery: str,
                                                           problem: str) -> None:
    with Runner.open(pg_db_url, workflows=WORKFLOWS) as runner:
        first, second, _ = _history(runner)
        assert runner.audit_verify().ok
    with psycopg.connect(pg_db_url) as conn:
        decided = _seq_of(conn, first, "decided")
        match forgery:
            case "edited":
                conn.execute("UPDATE hitl_events SET data = %s WHERE seq = %s",
                             (json.dumps({"kind": "approve", "actor": "mallory"}), decided))
            case "deleted":
                conn.execute("DELETE FROM hitl_events WHERE seq = %s", (decided,))
            case "deleted-and-renumbered":
                conn.execute("DELETE FROM hitl_events WHERE seq = %s", (decided,))
                conn.execute("UPDATE hitl_events SET seq = seq - 1 WHERE seq > %s", (decided,))
                conn.execute("UPDATE hitl_audit_head SET seq = seq - 1")
            case "reordered-within-a-thread":
                _swap(conn, _seq_of(conn, first, "review_requested"), decided)
            case "reordered-across-threads":
                _swap(conn, _seq_of(conn, second, "started"), _seq_of(conn, first, "review_requested"))
            case "anchor-dropped":
                conn.execute("UPDATE hitl_events SET anchor = NULL WHERE seq = %s", (decided,))
            case "tail-deleted":
                conn.execute("DELETE FROM hitl_events WHERE seq = (SELECT max(seq) FROM hitl_events)")
    verified = hitl(pg_db_url, "audit", "verify", "--json")
    assert verified.returncode == 1
    report = json.loads(verified.stdout)
    assert report["ok"] is False and problem in report["problem"], report


def test_a_keyed_log_refuses_a_process_without_its_key_or_with_another_and_nothing_is_written(
        pg_db_url: str, effects_file: Path) -> None:
    with Runner.open(pg_db_url, workflows=WORKFLOWS, audit_key="the-right-key-0123456789abcdef") as keyed:
        thread_id = keyed.start("pay", {"to": "acme", "amount": 5}).thread_id
        before = [e.event for e in keyed.history(thread_id)]
    for other in (None, "another-key-0123456789abcdef"):
        with Runner.open(pg_db_url, workflows=WORKFLOWS, audit_key=other) as runner:
            with pytest.raises(AuditKeyError, match="HITL_AUDIT_KEY"):
                runner.start("pay", {"to": "bolt", "amount": 6})  # a new thread: its first entry links nowhere keyed
            with pytest.raises(AuditKeyError, match="HITL_AUDIT_KEY"):
                runner.resume(thread_id, Approve(actor="ana"))
    with Runner.open(pg_db_url, workflows=WORKFLOWS, audit_key="the-right-key-0123456789abcdef") as keyed:
        assert [e.event for e in keyed.history(thread_id)] == before
        assert keyed.show(thread_id).status == "paused"
        report = keyed.audit_verify()
        assert report.ok and report.keyed, report.problem
    with psycopg.connect(pg_db_url) as conn:  # the refused start left no thread behind
        assert conn.execute("SELECT count(*) FROM hitl_threads").fetchone()[0] == 1  # type: ignore[index]
    assert not any(e.startswith("pay:") for e in effects())  # nothing was paid


def test_a_deleted_head_row_stops_every_write_and_nothing_is_written(pg_db_url: str, effects_file: Path) -> None:
    with Runner.open(pg_db_url, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("pay", {"to": "acme", "amount": 5}).thread_id
    with psycopg.connect(pg_db_url) as conn:
        conn.execute("DELETE FROM hitl_audit_head")
        count = conn.execute("SELECT count(*) FROM hitl_events").fetchone()[0]  # type: ignore[index]
    with Runner.open(pg_db_url, workflows=WORKFLOWS) as runner:
        with pytest.raises(AuditError, match=f"head row is missing though the log has {count} entries"):
            runner.resume(thread_id, Approve(actor="ana"))
        assert runner.show(thread_id).status == "paused"
    with psycopg.connect(pg_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM hitl_events").fetchone()[0] == count  # type: ignore[index]
    assert not any(e.startswith("pay:") for e in effects())  # nothing was paid

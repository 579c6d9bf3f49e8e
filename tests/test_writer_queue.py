"""Writers of one SQLite file from several processes queue in the kernel (`storage/sqlite/writers.py`):
a decision waits its turn behind another process's write, a writer stuck mid-write makes it fail
cleanly after the busy timeout (nothing changed, retrying is safe), and decisions stay exactly-once."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hitl_graphs import Approve, DatabaseBusyError, Runner, SqliteStore
from tests.conftest import ROOT, fingerprint, subprocess_env
from tests.workflows import WORKFLOWS, effects

STUCK_WRITER = """
import sys, time
from hitl_graphs import SqliteStore
from hitl_graphs.storage.sqlite.connection import write_transaction
store = SqliteStore(sys.argv[1])
with write_transaction(store.conn, store.lock) as c:
    c.execute("INSERT INTO hitl_effects VALUES ('elsewhere', 'stuck', '1', 0)")
    print("writing", flush=True)
    time.sleep(600)  # stuck mid-write (a debugger, a stopped process) until killed
"""

QUEUED_WRITER = """
import sqlite3, sys, time
from hitl_graphs.storage.sqlite.writers import WriterQueue
with WriterQueue(sys.argv[1]).hold(timeout=None):
    print("queued", flush=True)
    time.sleep(1.0)  # our turn: a writer that queued after us waits for it
    conn = sqlite3.connect(sys.argv[1])
    print(conn.execute("SELECT status FROM hitl_reviews WHERE thread_id = ?", (sys.argv[2],)).fetchone()[0], flush=True)
    conn.close()
"""


def _spawn(db: str, code: str, ready: str, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", code, db, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=subprocess_env(db), cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line == ready, proc.stderr.read() if proc.stderr else line
    return proc


def test_a_decision_waits_for_the_writer_queued_before_it_in_another_process(db: str, effects_file: Path) -> None:
    with Runner(SqliteStore(db), WORKFLOWS, owns_store=True) as runner:
        thread_id = runner.start("pay", {"to": "acme", "amount": 5}).thread_id
        writer = _spawn(db, QUEUED_WRITER, "queued", thread_id)
        try:
            done = runner.resume(thread_id, Approve(actor="ana"))
        finally:
            seen, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err
        assert seen.strip() == "pending"  # the writer that queued first still saw the review waiting: we went after it
        assert done.status == "done"
        assert [e.event for e in runner.history(thread_id)].count("decided") == 1
    assert effects() == ["prepare", "pay:acme:5"]


def test_a_writer_stuck_mid_write_elsewhere_makes_a_decision_fail_cleanly_then_a_retry_decides_once(
    db: str, effects_file: Path
) -> None:
    with Runner(SqliteStore(db, busy_timeout=0.3), WORKFLOWS, owns_store=True) as runner:
        thread_id = runner.start("pay", {"to": "acme", "amount": 5}).thread_id
        before = fingerprint(db, thread_id)
        writer = _spawn(db, STUCK_WRITER, "writing")
        try:
            for _ in range(2):  # a second try while still stuck waits its turn again, and fails the same way
                with pytest.raises(DatabaseBusyError, match="database is busy.*retrying is safe"):
                    runner.resume(thread_id, Approve(actor="ana"))
            assert fingerprint(db, thread_id) == before
            assert runner.show(thread_id).status == "paused"
        finally:
            writer.send_signal(signal.SIGKILL)  # the stuck writer dies: its lock and its write go with it
            writer.communicate(timeout=30)
        done = runner.resume(thread_id, Approve(actor="ana"))
        assert done.status == "done"
        assert [e.event for e in runner.history(thread_id)].count("decided") == 1
    assert effects() == ["prepare", "pay:acme:5"]

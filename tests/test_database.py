"""The database file as found: planted payloads, newer or older schemas, other files, a busy lock."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import TypedDict

import ormsgpack
import pytest
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from hitl_graphs import Approve, Runner, SqliteStore, Workflow, review_node
from hitl_graphs.errors import ConfigError, DatabaseBusyError, SchemaVersionError, UnsafeCheckpointError
from hitl_graphs.storage.sqlite.schema import SCHEMA_VERSION
from tests.conftest import fingerprint, hitl
from tests.workflows import WORKFLOWS


def _planted(target: Path) -> ormsgpack.Ext:
    """What an attacker writes: LangGraph's "import module, call name(arg)" extension, naming os.mkdir."""
    return ormsgpack.Ext(0, ormsgpack.packb(["os", "mkdir", str(target)]))


def _paused_pay(db: str) -> str:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        return runner.start("pay", {"to": "acme", "amount": 5}).thread_id


def test_a_planted_type_in_a_checkpoint_blob_is_refused_and_nothing_runs(db: str, tmp_path: Path) -> None:
    thread_id = _paused_pay(db)
    target = tmp_path / "pwned"
    conn = sqlite3.connect(db)
    blob, checkpoint_id = conn.execute(
        "SELECT checkpoint, checkpoint_id FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id DESC LIMIT 1",
        (thread_id,)).fetchone()
    checkpoint = ormsgpack.unpackb(blob)
    checkpoint["channel_values"]["memo"] = _planted(target)
    conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?", (ormsgpack.packb(checkpoint), checkpoint_id))
    conn.commit()
    conn.close()

    shown = hitl(db, "show", thread_id)
    assert shown.returncode == 1
    assert shown.stderr.strip().count("\n") == 0, shown.stderr
    assert "os.mkdir" in shown.stderr and "refused, nothing ran" in shown.stderr
    assert not target.exists()
    with Runner.open(db, workflows=WORKFLOWS) as runner, pytest.raises(UnsafeCheckpointError, match=r"os\.mkdir"):
        runner.show(thread_id)
    assert not target.exists()


def test_a_planted_type_in_a_pending_write_is_refused_and_nothing_runs(db: str, tmp_path: Path) -> None:
    thread_id = _paused_pay(db)
    target = tmp_path / "pwned"
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM writes WHERE thread_id = ?", (thread_id,)).fetchone()[0] > 0
    conn.execute("UPDATE writes SET type = 'msgpack', value = ? WHERE thread_id = ?",
                 (ormsgpack.packb({"x": _planted(target)}), thread_id))
    conn.commit()
    conn.close()

    for command in (["show", thread_id], ["approve", thread_id]):
        result = hitl(db, *command)
        assert result.returncode == 1
        assert "os.mkdir" in result.stderr, result.stderr
    assert not target.exists()


def test_a_pickled_value_is_refused(db: str) -> None:
    thread_id = _paused_pay(db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE writes SET type = 'pickle', value = ? WHERE thread_id = ?", (b"cos\nsystem\n.", thread_id))
    conn.commit()
    conn.close()
    with Runner.open(db, workflows=WORKFLOWS) as runner, pytest.raises(UnsafeCheckpointError, match="'pickle'"):
        runner.show(thread_id)


class Invoice(BaseModel):
    number: str
    due: dt.date


class BillState(TypedDict, total=False):
    invoice: Invoice
    paid: bool


def _bill_graph() -> StateGraph[BillState]:
    g = StateGraph(BillState)
    g.add_node("review", review_node("gate", lambda s: {"number": s["invoice"].number}, title="Pay?",
                                     on_approve="pay", on_reject=END), destinations=("pay", END))
    g.add_node("pay", lambda s: {"paid": True})
    g.add_edge(START, "review")
    g.add_edge("pay", END)
    return g


def test_the_state_schemas_own_types_load(db: str) -> None:
    """What the user's state names (a pydantic model with a date) is allowed without configuration."""
    with Runner.open(db, workflows=[Workflow("bill", _bill_graph)]) as runner:
        thread_id = runner.start("bill", {"invoice": Invoice(number="A-1", due=dt.date(2026, 12, 1))}).thread_id
    with Runner.open(db, workflows=[Workflow("bill", _bill_graph)]) as runner:
        view = runner.resume(thread_id, Approve(actor="ana"))
    assert view.state["paid"] is True
    assert view.state["invoice"] == {"number": "A-1", "due": "2026-12-01"}


def test_a_database_from_a_newer_release_is_refused_in_one_line(db: str) -> None:
    thread_id = _paused_pay(db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE hitl_meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    with pytest.raises(SchemaVersionError, match=rf"schema version {SCHEMA_VERSION + 1}, newer than .* upgrade hitl-graphs"):
        Runner.open(db, workflows=WORKFLOWS)
    for command in (["show", thread_id], ["pending"], ["approve", thread_id]):
        result = hitl(db, *command)
        assert result.returncode == 1
        assert result.stderr.startswith("error: database ") and result.stderr.count("\n") == 1, result.stderr


def test_a_database_from_before_versioning_is_upgraded_in_place(db: str) -> None:
    thread_id = _paused_pay(db)
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE hitl_meta")
    conn.commit()
    conn.close()
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        assert runner.resume(thread_id, Approve(actor="ana")).status == "done"
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM hitl_meta").fetchone() == (str(SCHEMA_VERSION),)
    conn.close()


def test_opening_a_current_database_takes_no_write_lock(db: str) -> None:
    """A command that only looks (or a decision about to be pinned) does not queue behind a writer."""
    thread_id = _paused_pay(db)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        with Runner(SqliteStore(db, busy_timeout=0.2), WORKFLOWS, owns_store=True) as runner:
            assert runner.show(thread_id).status == "paused"
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_file_that_is_not_a_database_is_named(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(ConfigError, match=rf"{notes} is not a hitl_graphs database"):
        Runner.open(str(notes))
    result = hitl(str(notes), "pending")
    assert result.returncode == 1
    assert f"{notes} is not a hitl_graphs database" in result.stderr
    assert "graph raised" not in result.stderr


def test_a_write_lock_held_past_the_busy_timeout_is_a_clear_retryable_error(db: str) -> None:
    thread_id = _paused_pay(db)
    before = fingerprint(db, thread_id)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        with Runner(SqliteStore(db, busy_timeout=0.2), WORKFLOWS, owns_store=True) as runner:
            with pytest.raises(DatabaseBusyError, match="database is busy.*retrying is safe"):
                runner.resume(thread_id, Approve(actor="ana"))
            with pytest.raises(DatabaseBusyError, match="database is busy"):
                runner.start("pay", {"to": "acme", "amount": 1}, thread_id="other")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert fingerprint(db, thread_id) == before
    with Runner.open(db, workflows=WORKFLOWS) as runner:  # retrying is safe
        assert runner.resume(thread_id, Approve(actor="ana")).status == "done"

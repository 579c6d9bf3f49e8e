"""What one pause+resume cycle costs on SQLite: disk flushes shared between threads, and a large
state decoded no more often than plain LangGraph decodes it.

Counts, not timings (the timings are `python -m benchmarks --only overhead,large,async`).
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from hitl_graphs import Approve, Runner, SqliteStore, Workflow
from hitl_graphs.storage.sqlite import connection
from hitl_graphs.storage.sqlite.connection import write_transaction
from tests.test_large_states import _doc_graph  # what a user writes: a plain `interrupt()`

DOCUMENT = "Every page of this report says the same thing at length. " * 4_000  # ~230 KB


def test_writers_that_commit_during_a_flush_share_the_next_one_and_none_returns_unflushed(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads resumed at once commit at about the same time: one flush started after their
    commits covers them all (the WAL is written in order), instead of one flush each. Still, no
    writer hears back before a flush that began after its own commit has ended."""
    with SqliteStore(db) as store:
        assert store.conn.hitl_wal is not None  # FULL on WAL: the connection flushes itself
        log: list[tuple[str, str]] = []
        first_started, release_first = threading.Event(), threading.Event()
        real = connection._datasync
        flushes = 0

        def datasync(fd: int) -> None:  # the real flush, held back the first time
            nonlocal flushes
            flushes += 1
            n = str(flushes)
            log.append(("flush started", n))
            if n == "1":
                first_started.set()
                release_first.wait(30)
            real(fd)
            log.append(("flush ended", n))

        monkeypatch.setattr(connection, "_datasync", datasync)
        store.conn.set_trace_callback(
            lambda sql: log.append(("commit", threading.current_thread().name)) if sql == "COMMIT" else None)

        def write(name: str) -> None:
            with write_transaction(store.conn, store.lock) as c:
                c.execute("INSERT INTO hitl_effects VALUES (?, 'k', '1', 0)", (name,))
            log.append(("returned", name))

        first = threading.Thread(target=write, args=("a",), name="a")
        first.start()
        assert first_started.wait(30)  # a's flush runs (held)
        others = [threading.Thread(target=write, args=(n,), name=n) for n in "bcd"]
        for t in others:
            t.start()
        deadline = time.monotonic() + 30
        # b, c and d commit, then wait for a flush that covers them (their COMMIT's trace comes
        # before the commit is counted: wait for the waiters themselves, or a loaded machine
        # releases a's flush before d's commit is in and d needs a flush of its own)
        while store.conn._hitl_flush_waiters < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert [n for e, n in log if e == "commit"][0] == "a" and sum(e == "commit" for e, _ in log) == 4
        assert not any(e == "returned" for e, _ in log)
        release_first.set()
        for t in [first, *others]:
            t.join(30)
        store.conn.set_trace_callback(None)
        rows = store.conn.execute("SELECT thread_id FROM hitl_effects ORDER BY thread_id").fetchall()

    assert rows == [("a",), ("b",), ("c",), ("d",)]
    assert flushes == 2  # a's own, then one for b, c and d together
    for name in "abcd":
        committed, returned = log.index(("commit", name)), log.index(("returned", name))
        covering = [n for i, (e, n) in enumerate(log) if e == "flush started" and committed < i < returned]
        assert covering and log.index(("flush ended", covering[0])) < returned, (name, log)


def _count_large_loads(serde: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    loads: list[int] = []
    real = serde.loads_typed

    def counting(data: tuple[str, bytes]) -> Any:
        if len(data[1] or b"") > 100_000:
            loads.append(len(data[1]))
        return real(data)

    monkeypatch.setattr(serde, "loads_typed", counting)
    return loads


def test_a_large_state_is_decoded_no_more_often_than_plain_langgraph_decodes_it(
    db: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading where a run paused, before its checkpoint commits with the ledger, takes the
    checkpoint the run handed over instead of decoding (and scanning) the bytes just encoded;
    so a cycle decodes a large state once, on resume, as plain LangGraph with the same
    durability does."""
    conn = sqlite3.connect(str(tmp_path / "plain.sqlite"), check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        plain = _doc_graph().compile(checkpointer=saver)
        plain_loads = _count_large_loads(saver.serde, monkeypatch)
        config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
        assert "__interrupt__" in plain.invoke({"document": DOCUMENT}, config, durability="exit")
        assert plain.invoke(Command(resume="yes"), config, durability="exit")["published"] is True
    finally:
        conn.close()

    with Runner.open(db, workflows=[Workflow("doc", _doc_graph, durability="exit")]) as runner:
        ours_loads = _count_large_loads(runner.store.saver.serde, monkeypatch)
        paused = runner.start("doc", {"document": DOCUMENT})
        assert paused.status == "paused" and paused.reviews[0].node == "ask" and paused.state["document"] == DOCUMENT
        done = runner.resume(paused.thread_id, Approve(actor="ana"))
        assert done.status == "done" and done.state["published"] is True
        assert runner.show(paused.thread_id).state["document"] == DOCUMENT  # read back from the database

    assert len(plain_loads) == 1
    assert len(ours_loads) - 1 == len(plain_loads)  # the `show` above is the one more

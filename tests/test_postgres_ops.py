"""PostgreSQL in operation (issue 16): the CLI on a server, `hitl db migrate`, `hitl worker`, deferred
decisions, leases on the database's clock, and a crash between a pause's checkpoint and its record.

Every test runs real processes against the throwaway server of tests/pg_server.py; effects are
counted in the file `$HITL_TEST_EFFECTS` names (tests/workflows.py), across processes.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from hitl_graphs import Approve, Runner
from tests.conftest import ROOT, hitl, python, subprocess_env
from tests.workflows import effects

# -- the CLI gives the same JSON on both stores ------------------------------------------------

_VOLATILE = {"created_at", "at", "decided_at", "updated_at", "deadline", "head", "hash", "prev_hash", "seq", "head_seq"}



pytestmark = pytest.mark.slow  # every test here starts processes (workers, the CLI)

def _script(db: str) -> list[Any]:
    """One session at the terminal: start, list, look, decide each way, read the history, audit, rate."""
    outputs: list[Any] = []

    def run(*args: str) -> Any:
        done = hitl(db, *args)
        assert done.returncode == 0, (args, done.stderr)
        value = json.loads(done.stdout)
        outputs.append(value)
        return value

    threads = [run("run", "pay", "--input", json.dumps({"to": to, "amount": 100 + i}), "--json")["thread_id"]
               for i, to in enumerate(["acme", "globex", "initech"])]
    run("pending", "--workflow", "pay", "--limit", "2", "--offset", "1", "--json")
    run("show", threads[0], "--json")
    run("approve", threads[0], "--actor", "ana", "--comment", "fine", "--json")
    run("modify", threads[1], "--patch", '{"amount": 90}', "--actor", "bo", "--json")
    run("reject", threads[2], "--reason", "not this week", "--actor", "cy", "--json")
    refused = hitl(db, "approve", threads[0], "--json")
    outputs.append({"refused": refused.returncode, "stderr": refused.stderr})
    run("history", threads[1], "--json")  # who changed what, from which value
    run("audit", "verify", "--json")
    run("feedback", threads[0], "--score", "0.8", "--comment", "good", "--actor", "ana", "--json")
    run("feedback", "--list", "--json")
    return outputs


def _normal(value: Any, ids: dict[str, str]) -> Any:
    """The value with times and hashes dropped and ids numbered in order of appearance."""
    if isinstance(value, dict):
        return {k: _normal(v, ids) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_normal(v, ids) for v in value]
    if isinstance(value, str):
        # a full id, or the 12-character reference `pending` and refusals print for it
        return re.sub(r"\b[0-9a-f]{12}(?:[0-9a-f]{20})?\b", lambda m: ids.setdefault(m.group(0)[:12], f"<id{len(ids)}>"), value)
    return value


def test_the_cli_prints_the_same_json_on_sqlite_and_postgresql(db: str, pg_db_url: str, effects_file: Path) -> None:
    on_sqlite = _normal(_script(db), {})
    on_postgres = _normal(_script(pg_db_url), {})  # $HITL_DB=postgresql://...
    assert on_postgres == on_sqlite
    assert on_sqlite[-1][0]["score"] == 0.8 and on_sqlite[8]["refused"] == 1
    with psycopg.connect(pg_db_url) as conn:  # on the server, not in a file named after the URL
        rows = conn.execute("SELECT status, outcome FROM hitl_threads ORDER BY outcome").fetchall()
    assert rows == [("done", "completed"), ("done", "completed"), ("done", "rejected")]
    assert not (ROOT / "postgresql:").exists()
    # --db takes a URL as given (a path would fold its `//`)
    listed = subprocess.run([sys.executable, "-m", "hitl_graphs.cli", "--db", pg_db_url, "pending", "--json"],
                            capture_output=True, text=True, env=subprocess_env("/nonexistent.sqlite"), cwd=ROOT, timeout=60)
    assert (listed.returncode, json.loads(listed.stdout or "null"), listed.stderr) == (0, [], "")


# -- hitl db migrate ---------------------------------------------------------------------------


def test_eight_processes_migrate_an_empty_database_at_once_from_the_cli(pg_db_url: str) -> None:
    procs = [subprocess.Popen([sys.executable, "-m", "hitl_graphs.cli", "--db", pg_db_url, "db", "migrate"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env(pg_db_url),
                              cwd=ROOT) for _ in range(8)]
    results = [(p.returncode, out, err) for p in procs for out, err in [p.communicate(timeout=120)]]
    shown = pg_db_url.replace("postgresql://", "")
    assert [(code, err) for code, _, err in results] == [(0, "")] * 8
    assert all(out.strip().endswith(shown) and out.startswith("schema up to date at") for _, out, _ in results)
    with psycopg.connect(pg_db_url) as conn:
        version = conn.execute("SELECT value FROM hitl_meta WHERE key = 'schema_version'").fetchone()
        tables = conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'checkpoints'").fetchone()
    assert version is not None and int(version[0]) >= 2 and tables == (1,)


def test_db_migrate_creates_a_sqlite_file_too(tmp_path: Path) -> None:
    path = tmp_path / "new" / "hitl.sqlite"
    done = hitl(str(path), "db", "migrate")
    assert (done.returncode, done.stdout.strip(), path.exists()) == (0, f"schema up to date at {path}", True)


# -- hitl worker -------------------------------------------------------------------------------


def _worker(url: str, *args: str, **env: str) -> subprocess.Popen[str]:
    """A `hitl worker` process, returned once it listens (it says so on stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "hitl_graphs.cli", "worker", "--json", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env(url, **env),
                            cwd=ROOT)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert line.startswith("hitl worker ready on"), line + (proc.stderr.read() if proc.poll() is not None else "")
    return proc


def _wait_until(check: Any, timeout: float) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return out


def test_two_workers_apply_twenty_deferred_decisions_each_exactly_once(pg_db_url: str, effects_file: Path) -> None:
    import tests.workflows  # noqa: F401  registers "pay"

    with Runner.open(pg_db_url) as runner:
        threads = [runner.start("pay", {"to": f"vendor-{i}", "amount": i}).thread_id for i in range(20)]
        # idle 600: nothing but the database's NOTIFY can wake them in time
        workers = [_worker(pg_db_url, "--idle", "600") for _ in range(2)]
        try:
            started = time.monotonic()
            for t in threads:
                view = runner.decide(t, Approve(actor="ana"))
                assert (view.status, view.reviews, len(view.awaiting_recovery)) == ("paused", (), 1)
            decided_in = time.monotonic() - started
            _wait_until(lambda: all(runner.show(t).status == "done" for t in threads), timeout=90)
        finally:
            outputs = [_stop(w) for w in workers]
        applied = [json.loads(line)["thread_id"] for out in outputs for line in out.splitlines()]
        assert sorted(applied) == sorted(threads)  # each taken by one worker, once
        assert Counter(e for e in effects() if e.startswith("pay:")) == {f"pay:vendor-{i}:{i}": 1 for i in range(20)}
        assert all(runner.show(t).outcome == "completed" for t in threads)
        for t in threads:
            events = [e.event for e in runner.history(t)]
            assert events.count("decided") == 1 and events.count("applied") == 1
        assert runner.audit_verify().ok
    assert decided_in < 30  # recording a decision does not wait for the graph


def test_a_killed_workers_thread_is_finished_by_another_once_its_lease_ends(pg_db_url: str, effects_file: Path) -> None:
    import tests.workflows  # noqa: F401

    with Runner.open(pg_db_url) as runner:
        thread = runner.start("pay", {"to": "acme", "amount": 7}).thread_id
        doomed = _worker(pg_db_url, "--lease", "2", HITL_TEST_DIE="pay")  # SIGKILLs itself inside the payment step
        runner.decide(thread, Approve(actor="ana"))
        doomed.communicate(timeout=60)
        assert doomed.returncode == -signal.SIGKILL
        row = runner.ledger.thread(thread)
        assert row is not None and row.status == "running" and row.owner  # held by a dead run, lease running
        survivor = _worker(pg_db_url, "--lease", "2", "--idle", "0.5")
        try:
            _wait_until(lambda: runner.show(thread).status == "done", timeout=60)
        finally:
            _stop(survivor)
        assert [e for e in effects() if e.startswith("pay:")] == ["pay:acme:7"]
        assert [e.event for e in runner.history(thread)].count("decided") == 1


def test_a_worker_on_sqlite_polls_and_applies_a_deferred_cli_decision(db: str, effects_file: Path) -> None:
    started = hitl(db, "run", "pay", "--input", '{"to": "acme", "amount": 3}', "--json")
    thread = json.loads(started.stdout)["thread_id"]
    deferred = hitl(db, "approve", thread, "--defer", "--actor", "ana", "--json")
    view = json.loads(deferred.stdout)
    assert (deferred.returncode, view["status"], view["reviews"], len(view["awaiting_recovery"])) == (0, "paused", [], 1)
    assert effects() == ["prepare"]  # recorded, not run
    once = hitl(db, "worker", "--once", "--json")
    assert once.returncode == 0, once.stderr
    assert [json.loads(line)["status"] for line in once.stdout.splitlines()] == ["done"]
    assert effects() == ["prepare", "pay:acme:3"]


# -- leases on the database's clock ------------------------------------------------------------


def test_a_lease_is_measured_on_the_databases_clock_not_the_callers(pg_db_url: str, effects_file: Path) -> None:
    """A worker whose clock runs an hour ahead must not take over a run whose lease is still on."""
    import tests.workflows  # noqa: F401

    with Runner.open(pg_db_url) as runner:
        thread = runner.start("pay", {"to": "acme", "amount": 1}).thread_id
        runner.ledger.take_thread(thread, owner="elsewhere:1:0", lease_until=time.time() + 600)
        with psycopg.connect(pg_db_url) as conn:
            lease, db_now = conn.execute("SELECT lease_until, extract(epoch FROM clock_timestamp())::float8 FROM hitl_threads "
                                         "WHERE thread_id = %s", (thread,)).fetchone()
        assert 590 < lease - db_now <= 600
        ahead = python(pg_db_url, (
            "import time; time.time = lambda real=time.time: real() + 3600\n"  # this process's clock: an hour ahead
            "from hitl_graphs import Runner\n"
            f"with Runner.open({pg_db_url!r}) as r:\n"
            f"    print(r.ledger.alive(r.ledger.thread({thread!r})), r.store.queue.take_decided(owner='x:1:0', lease=5))\n"
        ))
        assert (ahead.returncode, ahead.stdout.strip()) == (0, "True None"), ahead.stderr


# -- a crash before the ledger's record of a pause ----------------------------------------------


def test_a_run_killed_before_the_ledger_records_its_pause(pg_db_url: str, effects_file: Path) -> None:
    """A run with a checkpoint per step ("pay") commits its checkpoints as it goes, after the ledger
    recorded its start: killed before the ledger records the pause, the thread stays `running` under
    its lease, and once the lease ends the pause is read back from the checkpoint. A run that writes
    one checkpoint, where it stops ("flaky-exit"), commits it in the ledger's transaction that records
    the pause (`storage.postgres.saver`): killed before that, it leaves nothing behind, neither a
    thread nor a checkpoint (nobody was told its id), as on SQLite. Nothing lost, nothing run twice."""
    for workflow in ("pay", "flaky-exit"):
        killed = python(pg_db_url, (
            "import os, signal\n"
            "from hitl_graphs import Runner\n"
            f"with Runner.open({pg_db_url!r}, lease=1) as r:\n"
            "    r.store.ledger.sync = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
            f"    r.start({workflow!r})\n"
        ))
        assert killed.returncode == -signal.SIGKILL
    with Runner.open(pg_db_url) as runner:
        assert [r.workflow for r in runner.ledger.threads_in("running")] == ["pay"]
        assert runner.ledger.threads_outside() == []  # and no checkpoint of the other run
        time.sleep(1.2)  # the dead run's lease (1 s, on the database's clock) ends
        pending = runner.pending()
        assert [r.workflow for r in pending] == ["pay"]
        assert runner.resume(pending[0].thread_id, Approve(actor="ana")).status == "done"
    assert Counter(effects())["prepare"] == 1 and Counter(e.split(":")[0] for e in effects())["pay"] == 1


NOTED = '''
from typing import TypedDict
from langgraph.graph import END, START, StateGraph
from hitl_graphs import Workflow, request_review
from hitl_graphs.effects import record_event

class S(TypedDict, total=False):
    to: str
    sent: bool

def note(state):
    record_event("noted", {"to": state["to"]})
    return {}

def send(state):
    request_review("gate", {"to": state["to"]})
    return {"sent": True}

def build():
    g = StateGraph(S)
    g.add_node("note", note)
    g.add_node("send", send)
    g.add_edge(START, "note")
    g.add_edge("note", "send")
    g.add_edge("send", END)
    return g

NOTED = Workflow("noted-exit", build, example_input={"to": "ana"}, durability="exit")
'''


def test_a_runs_history_entry_commits_with_its_checkpoint_after_its_start(pg_db_url: str, effects_file: Path) -> None:
    """A run under "exit" that records an entry before it pauses: the entry, the run's checkpoint and
    the thread's start commit together with the pause, the start first in the history (as on
    SQLite); killed before that commit, the run leaves no entry, no checkpoint and no thread."""
    scope: dict[str, Any] = {}
    exec(NOTED, scope)  # the same workflow as the killed process below
    with Runner.open(pg_db_url, workflows=[scope["NOTED"]]) as runner:
        thread_id = runner.start("noted-exit").thread_id
        events = [e.event for e in runner.history(thread_id)]
        assert events[:3] == ["started", "noted", "review_requested"], events
        assert [e.data for e in runner.history(thread_id) if e.event == "noted"] == [{"to": "ana"}]
        assert runner.audit_verify().ok
    with psycopg.connect(pg_db_url) as conn:  # the entry's key keeps no second copy of its data
        kept = conn.execute("SELECT result FROM hitl_effects WHERE thread_id = %s AND key LIKE 'event|%%'",
                            (thread_id,)).fetchall()
        assert kept == [('"recorded"',)], kept
    killed = python(pg_db_url, NOTED + (
        "import os, signal\n"
        "from hitl_graphs import Runner\n"
        f"with Runner.open({pg_db_url!r}, workflows=[NOTED]) as r:\n"
        "    r.store.ledger.sync = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
        "    r.start('noted-exit')\n"
    ))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with psycopg.connect(pg_db_url) as conn:
        for table in ("hitl_threads", "hitl_events", "checkpoints", "hitl_effects"):
            n = conn.execute(f"SELECT count(DISTINCT thread_id) FROM {table}").fetchone()[0]  # type: ignore[index]
            assert n == 1, f"{table}: {n} threads (the killed run left something)"


def test_a_checkpoint_whose_ledger_commit_rolls_back_waits_again_and_is_not_lost(pg_db_url: str) -> None:
    """A run's checkpoint waits for the ledger's transaction that records where the run stopped; when
    that transaction fails (here the thread is unknown) and rolls back, the checkpoint waits again:
    the next read through the saver commits it and finds it whole."""
    from langgraph.checkpoint.base import empty_checkpoint

    from hitl_graphs.errors import UnknownThreadError
    from hitl_graphs.storage.base import DEFER_KEY
    from hitl_graphs.storage.postgres import PostgresStore

    checkpoint = {**empty_checkpoint(), "channel_values": {"plan": ["a", "b"], "n": 2},
                  "channel_versions": {"plan": "1", "n": "1"}}
    with PostgresStore(pg_db_url) as store, psycopg.connect(pg_db_url) as probe:
        config = {"configurable": {"thread_id": "t-1", "checkpoint_ns": "", DEFER_KEY: True}}
        store.saver.put(config, checkpoint, {"source": "loop", "step": 1}, {"plan": "1", "n": "1"})  # type: ignore[arg-type]
        assert probe.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0  # type: ignore[index]
        with pytest.raises(UnknownThreadError):
            store.ledger.sync("t-1", status="done", outcome="completed", error=None, pending=[])
        assert probe.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0  # type: ignore[index]
        got = store.saver.get_tuple({"configurable": {"thread_id": "t-1", "checkpoint_ns": ""}})
        assert got is not None and got.checkpoint["id"] == checkpoint["id"]
        assert got.checkpoint["channel_values"] == {"plan": ["a", "b"], "n": 2}
        assert probe.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 1  # type: ignore[index]

"""A PostgreSQL benchmark process: `python -m benchmarks.pg_worker SPEC_JSON`.

Prints `ready` once connected, then for every line `SECONDS` read on stdin works that long and
prints one JSON line `{"cycles", "conflicts", "won", "cpu_s", "wall_s"}` (`cpu_s`: this process's
CPU time in the window, all threads; with `wall_s` it tells computing from waiting).

Kinds (`spec["kind"]`):

- `ours`: the Runner on a `PostgresStore`. Start a thread (it pauses), then take a review from
  the shared queue (`pending`, one of the `window` oldest at random) and resume it; a review
  another process decided first is a conflict (`AlreadyDecidedError`, `ThreadBusyError`...), and
  it takes another. Every process shares one queue, as a pool of workers does.
- `ours_own`: the Runner as `ours`, but each process resumes the thread it just started, as
  `plain` does: the same cycles as plain LangGraph's, with no queue to share and no race to lose.
- `plain`: plain LangGraph on `PostgresSaver` (one connection, as its docs set it up), the same
  graph shape and durability, starting and resuming its own threads (it has no queue to share).
- `audit`: append one audit entry per transaction (`ledger.add_events`) to its own thread's chain,
  numbered into the global one by the database (`storage/postgres/audit.py`),
  flushed to disk before the next (`store.flush()`), as a decision's entry is; `cycles` counts
  appends.
- `insert`: one plain row per transaction into an unchained table: the server's commit rate with
  as many writers, the reference for `audit`.
- `select`: `SELECT 1` and its answer, nothing else: how many round trips per second this machine
  gives N processes and their N server sessions (what any round trip costs as the cores fill up).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks.graphs import WORKFLOW, ours_workflow
from benchmarks.setups import INPUT, plain_cycle
from benchmarks.worker import racing


def ours(spec: dict[str, Any], rng: random.Random) -> Callable[[float], dict[str, Any]]:
    from hitl_graphs import Runner
    from hitl_graphs.storage.postgres import PostgresStore

    runner = Runner(PostgresStore(spec["url"], max_connections=2), [ours_workflow(1, spec["durability"])], owns_store=True)
    me = f"w{os.getpid()}"
    window = int(spec.get("window", 4))
    runner.start(WORKFLOW, INPUT)  # warm up, and keep a review waiting in the queue

    return racing(runner, rng, me, window)


def ours_own(spec: dict[str, Any], rng: random.Random) -> Callable[[float], dict[str, Any]]:
    from hitl_graphs import Approve, Runner
    from hitl_graphs.storage.postgres import PostgresStore

    runner = Runner(PostgresStore(spec["url"], max_connections=2), [ours_workflow(1, spec["durability"])], owns_store=True)
    me = f"w{os.getpid()}"
    won: list[str] = []

    def cycle() -> None:
        view = runner.start(WORKFLOW, INPUT)
        runner.resume(view.thread_id, Approve(actor=me), review_id=view.reviews[0].review_id)
        won.append(view.thread_id)

    cycle()  # warm up (its decision is reported with the first window's, for the check)
    loop = _loop(cycle)

    def run(seconds: float) -> dict[str, Any]:
        out = loop(seconds)
        out["won"] = list(won)
        won.clear()
        return out

    return run


def plain(spec: dict[str, Any], rng: random.Random) -> Callable[[float], dict[str, Any]]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    from benchmarks.graphs import plain_plan_review_graph

    conn = psycopg.connect(spec["url"], autocommit=True, prepare_threshold=0, row_factory=dict_row)
    app = plain_plan_review_graph().compile(checkpointer=PostgresSaver(conn))  # setup() ran once, in the parent
    cycle = plain_cycle(app, spec["durability"])
    cycle()
    return _loop(cycle)


def audit(spec: dict[str, Any], rng: random.Random) -> Callable[[float], dict[str, Any]]:
    from hitl_graphs.storage.postgres import PostgresStore
    from hitl_graphs.audit import Event

    store = PostgresStore(spec["url"], max_connections=1)
    thread_id = f"audit-{os.getpid()}"

    def append() -> None:
        store.ledger.add_events(thread_id, [Event("bench", actor="bench", data={"n": 1})])
        store.flush()  # on disk before going on, as a decision's entry (the chain's lock is already released)

    append()
    return _loop(append)


def insert(spec: dict[str, Any], rng: random.Random) -> Callable[[float], dict[str, Any]]:
    import psycopg

    conn = psycopg.connect(spec["url"], autocommit=True)
    with conn.transaction():  # the workers start at once: IF NOT EXISTS alone races in PostgreSQL's catalog
        conn.execute("SELECT pg_advisory_xact_lock(7215)")
        conn.execute("CREATE TABLE IF NOT EXISTS bench_rows (id TEXT PRIMARY KEY, at DOUBLE PRECISION NOT NULL)")

    def one() -> None:
        conn.execute("INSERT INTO bench_rows VALUES (%s, %s)", (uuid.uuid4().hex, time.time()))

    one()
    return _loop(one)


def select(spec: dict[str, Any], rng: random.Random) -> Callable[[float], dict[str, Any]]:
    import psycopg

    conn = psycopg.connect(spec["url"], autocommit=True)

    def one() -> None:
        conn.execute("SELECT 1").fetchone()

    one()
    return _loop(one)


def _loop(fn: Callable[[], None]) -> Callable[[float], dict[str, Any]]:
    def run(seconds: float) -> dict[str, Any]:
        n = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            fn()
            n += 1
        return {"cycles": n, "conflicts": 0, "won": []}

    return run


KINDS = {"ours": ours, "ours_own": ours_own, "plain": plain, "audit": audit, "insert": insert, "select": select}


def main() -> None:
    spec: dict[str, Any] = json.loads(sys.argv[1])
    rng = random.Random(spec.get("seed", 0) * 7919 + os.getpid())
    run = KINDS[spec["kind"]](spec, rng)
    print("ready", flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        c0, t0 = time.process_time(), time.perf_counter()
        out = run(float(line))
        out["cpu_s"] = round(time.process_time() - c0, 4)
        out["wall_s"] = round(time.perf_counter() - t0, 4)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

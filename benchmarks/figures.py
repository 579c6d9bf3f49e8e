"""The figures of issue 7 (plus a profile of where a cycle's time goes); throughput is `benchmarks.throughput`."""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langgraph.types import Command

from benchmarks.bulk import populate
from benchmarks.graphs import WORKFLOW, ours_workflow
from benchmarks.setups import INPUT, Ours, Plain, ours_cycle, plain_cycle
from benchmarks.stats import ratios, remove_db, rounds, summary

INTERRUPT = "__interrupt__"  # LangGraph's (private) channel for pending interrupts


# -- 1. overhead of one pause+resume cycle ---------------------------------------------------


def overhead(workdir: Path, ours: Sequence[Ours], plain: Sequence[Plain], *, n_rounds: int, per_round: int,
             pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Cycles of every configuration, side by side in shuffled rounds, on one SQLite file."""
    db = str(workdir / "overhead.sqlite")
    remove_db(db)
    variants: dict[str, Callable[[], None]] = {}
    closers: list[Callable[[], None]] = []
    about: dict[str, str] = {}
    for p in plain:
        variants[p.name], conn = p.cycle(db)
        about[p.name] = p.about
        if conn is not None:
            closers.append(conn.close)
    for o in ours:
        runner = o.runner(db)
        variants[o.name] = ours_cycle(runner)
        about[o.name] = o.about
        closers.append(runner.close)
    try:
        cpu: dict[str, list[float]] = {}
        times = rounds(variants, n_rounds=n_rounds, per_round=per_round, cpu_out=cpu)
    finally:
        for close in closers:
            close()
    out: dict[str, Any] = {
        "cycle": "start (plan -> review_plan pauses) + resume with Approve (review_plan -> execute -> end), "
                 "one-step plan, fresh thread id; all SQLite configurations on one file",
        "rounds": n_rounds,
        "cycles_per_round": per_round,
        "variants": {
            name: {
                "about": about[name],
                "cycles_per_s": summary([1 / t for t in ts], 1),
                "ms_per_cycle": summary([t * 1000 for t in ts], 3),
            }
            for name, ts in times.items()
        },
        "ratios": {},
        "cpu_ratios": {},
    }
    for a, b in pairs:
        if a in times and b in times:
            out["ratios"][f"{a} / {b}"] = summary(ratios(times, a, b), 3)
            out["cpu_ratios"][f"{a} / {b}"] = summary(ratios(cpu, a, b), 3)
    remove_db(db)
    return out


# -- where a cycle's time and commits go -------------------------------------------------------


def profile(workdir: Path, ours: Sequence[Ours], plain: Sequence[Plain], *, cycles: int) -> dict[str, Any]:
    """Count SQLite commits, checkpoint reads/writes and (for ours) the runner's I/O per cycle.

    The runner's operations are generators of effects (`Invoke`, `GetState`, `Call` of a
    ledger method...) driven by `hitl_graphs.runtime.driver.run_sync`; wrapping that function times each
    effect without touching the runner. Counts are exact; times are one pass (indicative).
    """
    import hitl_graphs.runtime.driver as runner_mod

    out: dict[str, Any] = {}
    for p in plain:
        if p.saver == "memory" or p.guarantee_commits:  # the floor adds commits to a cycle, not saver calls
            continue
        db = str(workdir / f"profile-{p.name}.sqlite")
        remove_db(db)
        app, conn = p.open(db)
        assert conn is not None
        cycle = plain_cycle(app, p.durability)
        cycle()
        counts = _count_saver(app.checkpointer)
        stmts: Counter[str] = Counter()
        conn.set_trace_callback(lambda s: stmts.update([s.split(None, 1)[0].upper()]))
        for _ in range(cycles):
            cycle()
        conn.set_trace_callback(None)
        out[p.name] = {"commits": stmts["COMMIT"] / cycles,
                       "saver_calls": {k: v / cycles for k, v in sorted(counts.items())}}
        conn.close()
        remove_db(db)
    original = runner_mod.run_sync
    for o in ours:
        db = str(workdir / f"profile-{o.name}.sqlite")
        remove_db(db)
        runner = o.runner(db)
        cycle = ours_cycle(runner)
        cycle()
        counts = _count_saver(runner.store.saver)
        stmts = Counter()
        effects: dict[str, list[float]] = defaultdict(list)
        phase = ["start"]

        def timed_run_sync(effect: Any) -> Any:
            label = _label(effect)
            t0 = time.perf_counter()
            try:
                return original(effect)
            finally:
                effects[f"{phase[0]}: {label}"].append(time.perf_counter() - t0)

        from hitl_graphs import Approve

        runner.store.conn.set_trace_callback(lambda s: stmts.update([s.split(None, 1)[0].upper()]))
        runner_mod.run_sync = timed_run_sync  # type: ignore[assignment]
        t_total = {"start": 0.0, "resume": 0.0}
        try:
            for _ in range(cycles):
                phase[0] = "start"
                t0 = time.perf_counter()
                paused = runner.start(WORKFLOW, INPUT)
                t_total["start"] += time.perf_counter() - t0
                phase[0] = "resume"
                t0 = time.perf_counter()
                runner.resume(paused.thread_id, Approve(actor="bench"))
                t_total["resume"] += time.perf_counter() - t0
        finally:
            runner_mod.run_sync = original  # type: ignore[assignment]
            runner.store.conn.set_trace_callback(None)
        runner.close()
        remove_db(db)
        out[o.name] = {
            "commits": stmts["COMMIT"] / cycles,
            "saver_calls": {k: v / cycles for k, v in sorted(counts.items())},
            "ms": {k: round(v * 1000 / cycles, 3) for k, v in t_total.items()},
            "effects": [
                {"effect": name, "per_cycle": len(ts) / cycles, "us_each": round(sum(ts) / len(ts) * 1e6, 1)}
                for name, ts in effects.items()
            ],
        }
    return out


def _label(effect: Any) -> str:
    kind = type(effect).__name__.lstrip("_")
    fn = getattr(effect, "fn", None)
    if fn is not None:
        return f"{kind} {getattr(fn, '__qualname__', getattr(fn, '__name__', '?'))}"
    if kind == "GetState":
        config = getattr(effect, "config", {}) or {}
        return "GetState" + (" (by checkpoint id)" if config.get("configurable", {}).get("checkpoint_id") else " (latest)")
    return kind


def _count_saver(saver: Any) -> Counter[str]:
    """Wrap the saver instance's methods to count calls (instance attributes shadow the class)."""
    import functools

    counts: Counter[str] = Counter()

    def counting(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)  # keeps the signature LangGraph inspects (task_path)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return method(*args, **kwargs)

        return wrapper

    for name in ("get_tuple", "put", "put_writes", "list"):
        setattr(saver, name, counting(name, getattr(saver, name)))
    return counts


# -- 2 and 3. listing pending reviews, and resuming, as the database grows --------------------


def plain_pending(saver: Any, limit: int = 50) -> tuple[list[tuple[str, str]], int]:
    """The fastest honest plain-LangGraph listing: one pass over `saver.list(None)` (newest
    checkpoint first), keeping each thread's latest checkpoint and those with a pending interrupt,
    oldest first. Returns the first page and how many paused threads there are."""
    seen: set[str] = set()
    paused: list[tuple[str, str]] = []
    for tup in saver.list(None):
        thread_id = tup.config["configurable"]["thread_id"]
        if thread_id in seen:
            continue
        seen.add(thread_id)
        if any(w[1] == INTERRUPT for w in tup.pending_writes or ()):
            paused.append((tup.checkpoint["ts"], thread_id))
    paused.sort()
    return paused[:limit], len(paused)


def first_pages(runners: dict[int, Any], reps: int, rng: random.Random) -> dict[int, list[float]]:
    """Ms to read the first page of 50 pending reviews from each runner (keyed by its thread count),
    after a warm-up, the sizes in a shuffled order each rep (SQLite and PostgreSQL alike)."""
    for r in runners.values():
        for _ in range(3):
            r.pending(limit=50)
    took: dict[int, list[float]] = {size: [] for size in runners}
    for _ in range(reps):
        order = list(runners)
        rng.shuffle(order)
        for size in order:
            t0 = time.perf_counter()
            page = runners[size].pending(limit=50)
            took[size].append((time.perf_counter() - t0) * 1000)
            assert len(page) == min(50, size)
    return took


def listing_and_resume(workdir: Path, sizes: Sequence[int], *, ours_reps: int, plain_reps: dict[int, int],
                       page_sizes: Sequence[int], resume_samples: int, seed: int = 11) -> dict[str, Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from hitl_graphs import Approve, Runner, SqliteStore

    rng = random.Random(seed)
    wf = ours_workflow()
    dbs: dict[int, str] = {}
    populated: dict[str, Any] = {}
    for size in sizes:
        db = str(workdir / f"threads-{size}.sqlite")
        remove_db(db)
        populated[str(size)] = populate(db, size, workflow=wf, input=INPUT)
        populated[str(size)]["mb"] = round(os.path.getsize(db) / 1e6, 1)
        dbs[size] = db
    runners = {size: Runner(SqliteStore(db), [wf], owns_store=True) for size, db in dbs.items()}
    try:
        # ours: first page of 50 at every size, interleaved; then other page sizes at the largest
        ours_ms = first_pages(runners, ours_reps, rng)
        largest = max(sizes)
        page_ms: dict[int, list[float]] = {p: [] for p in page_sizes}
        for _ in range(ours_reps):
            for p in page_sizes:
                t0 = time.perf_counter()
                page = runners[largest].pending(limit=p)
                page_ms[p].append((time.perf_counter() - t0) * 1000)
                assert len(page) == min(p, largest)
        # plain: a full scan per listing; each scan is paired with one of ours just before it
        plain: dict[str, Any] = {}
        for size in sizes:
            conn = sqlite3.connect(dbs[size], check_same_thread=False)
            saver = SqliteSaver(conn)
            plain_pending(saver)  # warm: imports, page cache
            scans, paired, found = [], [], 0
            for _ in range(plain_reps.get(size, 1)):
                t0 = time.perf_counter()
                runners[size].pending(limit=50)
                ours_t = time.perf_counter() - t0
                t0 = time.perf_counter()
                _, found = plain_pending(saver)
                plain_t = time.perf_counter() - t0
                scans.append(plain_t * 1000)
                paired.append(plain_t / ours_t)
            conn.close()
            plain[str(size)] = {"ms": summary(scans, 2), "plain / ours": summary(paired, 1), "paused_found": found}
        # 3. resume one random paused (bulk-copied) thread: smallest vs largest, ours and plain
        # LangGraph (the same graph on a SqliteSaver of its own), all four interleaved
        small, large = min(sizes), max(sizes)
        picks = {s: _sample_paused(dbs[s], 3 * resume_samples + 4, rng) for s in (small, large)}
        plain_apps = {s: _plain_app(dbs[s]) for s in (small, large)}
        resumed_ok = resumed = 0

        def resume_ours(size: int) -> float:
            nonlocal resumed_ok, resumed
            thread_id = picks[size].pop()
            t0 = time.perf_counter()
            view = runners[size].resume(thread_id, Approve(actor="bench"))
            took = (time.perf_counter() - t0) * 1000
            resumed += 1
            resumed_ok += view.status == "done" and view.outcome == "completed" and len(view.state.get("results") or []) == 1
            return took

        def resume_plain(size: int) -> float:
            app, _ = plain_apps[size]
            config = {"configurable": {"thread_id": picks[size].pop()}}
            t0 = time.perf_counter()
            out = app.invoke(Command(resume={"kind": "approve", "actor": "bench"}), config)
            took = (time.perf_counter() - t0) * 1000
            assert out.get("results"), out
            return took

        def measure(kinds: dict[str, Callable[[int], float]], n: int) -> dict[str, dict[int, list[float]]]:
            for fn in kinds.values():  # warm: graph compiled, code paths taken
                for size in (small, large):
                    fn(size)
            got: dict[str, dict[int, list[float]]] = {k: {small: [], large: []} for k in kinds}
            for _ in range(n):
                order = [(k, size) for k in kinds for size in (small, large)]
                rng.shuffle(order)
                for k, size in order:
                    got[k][size].append(kinds[k](size))
            return got

        got = measure({"ours": resume_ours, "plain": resume_plain}, resume_samples)
        resume_out: dict[str, Any] = {"small": small, "large": large}
        for k, per in got.items():
            resume_out[k] = _size_pair(per, small, large)
        resume_out["ours / plain"] = {str(size): round(summary(got["ours"][size])["median"] / summary(got["plain"][size])["median"], 2)
                                      for size in (small, large)}
        # the ledger reads a thread's reviews with `WHERE thread_id = ? AND status IN (...) ORDER BY
        # created_at, review_id`; without an index on (thread_id, status, ...) SQLite may pick the
        # pending-list index and scan every pending review. What an index would change:
        if not _has_index(dbs[large], "hitl_reviews", ("thread_id", "status")):
            for size in (small, large):
                runners[size].store.conn.execute(PROPOSED_INDEX)
                runners[size].store.conn.commit()
            with_index = measure({"ours": resume_ours}, resume_samples)["ours"]
            resume_out["ours_with_proposed_index"] = {"index": PROPOSED_INDEX, **_size_pair(with_index, small, large)}
        resume_out["bulk_threads_resumed_ok"] = resumed_ok
        resume_out["bulk_threads_resumed"] = resumed
        for _, conn in plain_apps.values():
            conn.close()
    finally:
        for r in runners.values():
            r.close()
    for db in dbs.values():
        remove_db(db)
    return {
        "populated": populated,
        "listing": {
            "ours_first_page_ms": {str(s): summary(v, 3) for s, v in ours_ms.items()},
            "ours_page_size_ms_at_largest": {str(p): summary(v, 3) for p, v in page_ms.items()},
            "plain_scan": plain,
            "plain_method": "saver.list(None), newest first: each thread's latest checkpoint, "
                            "paused if it has a pending __interrupt__ write; sorted oldest first",
        },
        "resume": resume_out,
    }


PROPOSED_INDEX = ("CREATE INDEX IF NOT EXISTS hitl_reviews_thread_status "
                  "ON hitl_reviews (thread_id, status, created_at, review_id)")


def _size_pair(per: dict[int, list[float]], small: int, large: int) -> dict[str, Any]:
    return {
        "ms": {str(small): summary(per[small], 3), str(large): summary(per[large], 3)},
        "large / small (pairs)": summary([b / a for a, b in zip(per[small], per[large], strict=True)], 3),
        "median large / median small": round(summary(per[large])["median"] / summary(per[small])["median"], 3),
    }


def _has_index(db: str, table: str, leading: tuple[str, ...]) -> bool:
    conn = sqlite3.connect(db)
    try:
        for _, name, *_ in conn.execute(f"PRAGMA index_list({table})").fetchall():
            columns = tuple(r[2] for r in conn.execute(f"PRAGMA index_info({name})"))
            if columns[: len(leading)] == leading:
                return True
        return False
    finally:
        conn.close()


def _plain_app(db: str) -> tuple[Any, sqlite3.Connection]:
    """The benchmark's graph compiled on a plain `SqliteSaver` (no runner, no ledger)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(db, check_same_thread=False)
    graph = ours_workflow().compile(SqliteSaver(conn))
    return graph, conn


def _sample_paused(db: str, k: int, rng: random.Random) -> list[str]:
    """`k` random paused threads (bulk copies, not the template)."""
    conn = sqlite3.connect(db)
    try:
        ids = [r[0] for r in conn.execute(
            "SELECT thread_id FROM hitl_reviews WHERE status = 'pending' AND thread_id NOT LIKE 'bulk-template-%'")]
    finally:
        conn.close()
    return rng.sample(ids, k)


# -- 5. bytes on disk per thread ---------------------------------------------------------------


def disk(workdir: Path, ours: Sequence[Ours], plain: Sequence[Plain], *, threads: int) -> dict[str, Any]:
    """Bytes per paused and per finished thread (after a checkpoint of the WAL and VACUUM)."""
    from hitl_graphs import Approve

    out: dict[str, Any] = {"threads": threads}
    for p in plain:
        if p.saver == "memory":
            continue
        db = str(workdir / f"disk-{p.name}.sqlite")
        remove_db(db)
        app, conn = p.open(db)
        assert conn is not None
        empty = _db_bytes(db)
        configs = [{"configurable": {"thread_id": f"t{i}"}} for i in range(threads)]
        from langgraph.types import Command

        for config in configs:
            app.invoke(INPUT, config, durability=p.durability)
        paused = _db_bytes(db)
        for config in configs:
            app.invoke(Command(resume={"kind": "approve", "actor": "bench"}), config, durability=p.durability)
        finished = _db_bytes(db)
        conn.close()
        out[p.name] = _per_thread(empty, paused, finished, threads)
        remove_db(db)
    for o in ours:
        db = str(workdir / f"disk-{o.name}.sqlite")
        remove_db(db)
        runner = o.runner(db)
        empty = _db_bytes(db)
        ids = [runner.start(WORKFLOW, INPUT).thread_id for _ in range(threads)]
        paused = _db_bytes(db)
        for thread_id in ids:
            runner.resume(thread_id, Approve(actor="bench"))
        finished = _db_bytes(db)
        runner.close()
        out[o.name] = _per_thread(empty, paused, finished, threads)
        remove_db(db)
    return out


def _db_bytes(db: str) -> dict[str, int]:
    """Bytes per table (its indexes included) after folding the WAL in and vacuuming."""
    conn = sqlite3.connect(db, timeout=30)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        owner = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')"))
        sizes: Counter[str] = Counter()
        try:
            for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
                sizes[owner.get(name, name)] += size
        except sqlite3.OperationalError:  # no dbstat in this SQLite build
            pass
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        sizes["total"] = conn.execute("PRAGMA page_count").fetchone()[0] * page_size
        return dict(sizes)
    finally:
        conn.close()


def _per_thread(empty: dict[str, int], paused: dict[str, int], finished: dict[str, int], n: int) -> dict[str, Any]:
    def per(sizes: dict[str, int]) -> dict[str, int]:
        return {k: round((v - empty.get(k, 0)) / n) for k, v in sorted(sizes.items()) if v - empty.get(k, 0) > 0}

    return {"paused": per(paused), "finished": per(finished)}

"""4. Throughput: 1 and 2 worker processes on one SQLite file, ours and plain LangGraph side by side.

Each configuration keeps its worker processes (`python -m benchmarks.worker`) alive across timed
windows; windows of every (configuration, workers) pair run in a shuffled order, `reps` times, so
the ratios of one run compare figures measured seconds apart. Each window reports cycles per
second and every cycle's latency (p50 / p99 / max over all the windows' cycles); afterwards every
cycle is checked, ours and plain alike: nothing lost, nothing done twice.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.graphs import ours_workflow
from benchmarks.setups import Ours, Plain
from benchmarks.stats import remove_db, summary

ROOT = Path(__file__).resolve().parent.parent


def raw_commit_rate(db: str, synchronous: str, seconds: float) -> float:
    """Tiny one-row commits per second on this disk, WAL mode: the ceiling for any durable write."""
    remove_db(db)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.commit()
    n, t0 = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < seconds:
        conn.execute("INSERT INTO t VALUES (?)", (n,))
        conn.commit()
        n += 1
    conn.close()
    remove_db(db)
    return n / elapsed


class _Pool:
    """Worker processes (`python -m benchmarks.worker`, or `module`) kept alive across timed windows.

    Each worker runs in a session of its own, as two workers started apart (two services, two
    terminals) do: Linux's scheduler (autogroup) shares the CPU between sessions first, so
    workers of one session would split one session's share on a busy machine, and two would
    measure the scheduler rather than the database."""

    def __init__(self, spec: dict[str, Any], n: int, module: str = "benchmarks.worker") -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self.procs = [
            subprocess.Popen([sys.executable, "-m", module, json.dumps({**spec, "seed": i})],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=ROOT, env=env, start_new_session=True)
            for i in range(n)
        ]

    def wait_ready(self) -> None:
        for p in self.procs:
            self._expect(p, "ready")

    def _expect(self, p: subprocess.Popen[str], what: str) -> str:
        assert p.stdout is not None
        line = p.stdout.readline()
        if not line:
            err = p.stderr.read() if p.stderr else ""
            raise RuntimeError(f"benchmark worker died: {err[-2000:]}")
        if what == "ready" and line.strip() != "ready":
            raise RuntimeError(f"benchmark worker said {line!r}")
        return line

    def run(self, k: int, seconds: float) -> list[dict[str, Any]]:
        for p in self.procs[:k]:
            assert p.stdin is not None
            p.stdin.write(f"{seconds}\n")
            p.stdin.flush()
        return [json.loads(self._expect(p, "result")) for p in self.procs[:k]]

    def close(self) -> None:
        for p in self.procs:
            if p.stdin:
                p.stdin.close()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def percentile(values: Sequence[float], q: float) -> float:
    """The `q` quantile (0..1) of `values`, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def throughput(workdir: Path, ours: Sequence[Ours], plain: Sequence[Plain], *, seconds: float, reps: int,
               workers: Sequence[int] = (1, 2), seed: int = 5) -> dict[str, Any]:
    """Completed cycles per second and cycle latency with 1 and 2 worker processes on one SQLite file.

    Our workers take reviews from the shared queue (`pending`, then `resume` one of the oldest
    few, so two workers often race for the same review) and start a new thread per cycle; plain
    workers start and resume their own threads (LangGraph cannot list what waits). A cycle's
    latency runs from its start to its won resume (a lost race included). Afterwards every
    cycle is checked: ours, each decision won once, applied once, its step executed once, nothing
    left decided or running; plain, each thread finished with its step executed once.
    """
    rng = random.Random(seed)
    raw = {s: raw_commit_rate(str(workdir / f"raw-{s}.sqlite"), s, min(1.0, seconds)) for s in ("FULL", "NORMAL")}
    configs: list[tuple[str, dict[str, Any]]] = []
    for o in ours:
        configs.append((o.name, {"kind": "ours", "synchronous": o.synchronous, "durability": o.durability}))
    for p in plain:
        configs.append((p.name, {"kind": "plain", "saver": p.saver, "synchronous": p.synchronous, "durability": p.durability}))
    dbs = {name: str(workdir / f"throughput-{name}.sqlite") for name, _ in configs}
    pools: dict[str, _Pool] = {}
    results: dict[str, dict[int, list[list[dict[str, Any]]]]] = {name: {k: [] for k in workers} for name, _ in configs}
    try:
        for name, spec in configs:  # all processes start at once; their imports overlap
            remove_db(dbs[name])
            pools[name] = _Pool({**spec, "db": dbs[name], "window": 4}, max(workers))
        for pool in pools.values():
            pool.wait_ready()
        for _ in range(reps):
            order = [(name, k) for name, _ in configs for k in workers]
            rng.shuffle(order)
            for name, k in order:
                results[name][k].append(pools[name].run(k, seconds))
    finally:
        for pool in pools.values():
            pool.close()
    out: dict[str, Any] = {"seconds_per_window": seconds, "windows": reps,
                           "raw_sqlite_commits_per_s": {s: round(v) for s, v in raw.items()}, "configs": {}}
    for name, spec in configs:
        entry: dict[str, Any] = {"kind": spec["kind"]}
        for k in workers:
            windows = results[name][k]
            ms = [x for window in windows for w in window for x in w["ms"]]  # every cycle of every window
            entry[str(k)] = {
                "cycles_per_s": summary([sum(w["cycles"] for w in window) / seconds for window in windows], 1),
                "cycles": len(ms),
                **({f"{q}_ms": round(percentile(ms, f), 2) for q, f in (("p50", 0.5), ("p99", 0.99), ("max", 1.0))}
                   if ms else {}),
                "conflicts": sum(w.get("conflicts", 0) for window in windows for w in window),
            }
        wins = [t for k in workers for window in results[name][k] for w in window for t in w["won"]]
        entry["check"] = _check_decisions(dbs[name], wins) if spec["kind"] == "ours" else _check_plain(dbs[name], wins)
        one, two = (entry[str(k)] for k in (workers[0], workers[-1]))
        entry["scaling"] = _per_window(results[name], workers, lambda ws: sum(w["cycles"] for w in ws))
        entry["p99_growth"] = _ratio(two.get("p99_ms"), one.get("p99_ms"))
        out["configs"][name] = entry
        remove_db(dbs[name])
    return out


def _per_window(windows: dict[int, list[list[dict[str, Any]]]], workers: Sequence[int], measure: Any) -> dict[str, Any]:
    """The many-workers / one-worker ratio, window by window (rep i of each), and of the medians."""
    few, many = windows[workers[0]], windows[workers[-1]]
    pairs = [measure(b) / measure(a) for a, b in zip(few, many, strict=True) if measure(a)]
    return {**summary(pairs, 2), "of_medians": _ratio(
        summary([measure(b) for b in many])["median"], summary([measure(a) for a in few])["median"])}


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def _check_plain(db: str, threads: list[str]) -> dict[str, Any]:
    """Every plain cycle's thread finished, its step executed once (plain has no decisions to double)."""
    from benchmarks.setups import Plain

    app, conn = Plain("check").open(db)
    finished_once = 0
    for thread_id in set(threads):
        snap = app.get_state({"configurable": {"thread_id": thread_id}})
        finished_once += not snap.next and len(snap.values.get("results") or []) == 1
    if conn is not None:
        conn.close()
    return {"cycles": len(threads), "threads_twice": len(threads) - len(set(threads)),
            "finished_with_one_step": finished_once,
            "ok": len(threads) == len(set(threads)) == finished_once}


def _check_decisions(db: str, wins: list[str]) -> dict[str, Any]:
    """No decision lost or doubled: every won resume applied once, executed once; nothing stuck."""
    from hitl_graphs import Runner, SqliteStore

    with Runner(SqliteStore(db), [ours_workflow()], owns_store=True) as runner:
        conn = runner.store.conn
        with runner.store.lock:
            doubled = conn.execute(
                "SELECT count(*) FROM (SELECT thread_id, review_id FROM hitl_events WHERE event = 'decided' "
                "GROUP BY thread_id, review_id HAVING count(*) > 1)").fetchone()[0]
            decided_events = conn.execute("SELECT count(*) FROM hitl_events WHERE event = 'decided'").fetchone()[0]
            applied = {r[0] for r in conn.execute("SELECT thread_id FROM hitl_reviews WHERE status = 'applied'")}
            stuck = conn.execute("SELECT count(*) FROM hitl_reviews WHERE status = 'decided'").fetchone()[0]
            running = conn.execute("SELECT count(*) FROM hitl_threads WHERE status = 'running'").fetchone()[0]
        executed_once = 0
        for thread_id in set(wins):
            view = runner.show(thread_id)
            executed_once += view.status == "done" and len(view.state.get("results") or []) == 1
    return {
        "decisions_won": len(wins),
        "won_twice": len(wins) - len(set(wins)),
        "decided_events": decided_events,
        "decided_twice": doubled,
        "won_but_not_applied": len(set(wins) - applied),
        "applied_but_not_won": len(applied - set(wins)),
        "executed_exactly_once": executed_once,
        "stuck_decided": stuck,
        "stuck_running": running,
        "ok": (len(wins) == len(set(wins)) == decided_events == len(applied) == executed_once
               and doubled == 0 and stuck == 0 and running == 0 and applied == set(wins)),
    }

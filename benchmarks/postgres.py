"""Figure 7: PostgreSQL (issue 16), on a throwaway server of its own with fsync on.

The server is started the way the tests start theirs (`tests/pg_server.py`: `initdb` + `pg_ctl` into a
temp dir, a free loopback port), but with PostgreSQL's durable defaults (fsync, synchronous commit,
full page writes), and stopped at the end. Each part gets a database of its own on it.

- **Throughput**: completed pause+resume cycles per second with 1, 2, 4 and 8 processes, ours
  two ways: `ours_own_threads` (kind `ours_own`: each process resumes the thread it started, the
  same cycles as plain LangGraph's: the like-for-like comparison) and `ours` (kind `ours`: every
  process starts threads and resumes reviews taken from the one shared queue, losing races to the
  others, as reviewers sharing an inbox do), and plain LangGraph on `PostgresSaver` (the same graph
  shape and durability, each process its own threads), in windows run in a shuffled order. For every window: the
  processes' CPU seconds, the server's, the machine's, and samples of what the sessions wait on
  (`pg_probe`). Afterwards every decision is checked: won once, decided once, applied, its step run
  once, nothing left decided or running.
- **Audit chain under contention**: appends per second with N processes appending at once, each to
  its own thread (numbered into the global chain by the database, under its lock), next to N processes committing one unchained row each (the server's commit
  rate, the ceiling); then `verify` walks the chain. Beside them, N processes doing nothing but
  `SELECT 1` round trips: what the machine itself gives as processes outnumber its cores.
- **Listing and resuming** at 1k / 10k / 100k paused threads (`pg_listing`).
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.throughput import _Pool
from benchmarks.graphs import TEMPLATE_DURABILITY, ours_workflow
from benchmarks.pg_probe import CpuClock, WaitSampler
from benchmarks.stats import summary


def create_database(server: Any, name: str) -> str:
    import psycopg

    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return str(server.url(name))


def postgres(workdir: Path, *, workers: Sequence[int], seconds: float, reps: int, audit_workers: Sequence[int],
             audit_seconds: float, listing: dict[str, Any], seed: int = 5) -> dict[str, Any]:
    from tests.pg_server import start_server

    from benchmarks.pg_listing import listing_and_resume

    t0 = time.perf_counter()
    server = start_server(durable=True)
    try:
        out: dict[str, Any] = {"server": _server_facts(server), "started_in_s": round(time.perf_counter() - t0, 2)}
        out["throughput"] = throughput(server, workers=workers, seconds=seconds, reps=reps, seed=seed)
        out["audit"] = audit_contention(server, workers=audit_workers, seconds=audit_seconds, reps=reps, seed=seed)
        out["listing"] = listing_and_resume(server, **listing)
        return out
    finally:
        server.stop()


def _server_facts(server: Any) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(server.url("postgres")) as conn:
        facts = {name: conn.execute(f"SHOW {name}").fetchone()[0]  # type: ignore[index]
                 for name in ("server_version", "fsync", "synchronous_commit", "full_page_writes", "wal_sync_method",
                              "shared_buffers")}
    return facts


def _windows(pools: dict[str, _Pool], workers: Sequence[int], reps: int, seconds: float, seed: int,
             server: Any, dbs: dict[str, str]) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """Run every (config, process count) window `reps` times in a shuffled order, with probes."""
    rng = random.Random(seed)
    got: dict[str, dict[int, list[dict[str, Any]]]] = {name: {k: [] for k in workers} for name in pools}
    for _ in range(reps):
        order = [(name, k) for name in pools for k in workers]
        rng.shuffle(order)
        for name, k in order:
            clock = CpuClock(server.data_dir)
            sampler = WaitSampler(server.url(dbs[name]), dbs[name])
            sampler.start()
            clock.start()
            procs = pools[name].run(k, seconds)
            cpu = clock.stop()
            waits = sampler.stop()
            got[name][k].append({"procs": procs, "cpu": cpu, "waits": waits})
    return got


def _summarise(runs: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    rates = [sum(p["cycles"] for p in r["procs"]) / seconds for r in runs]
    client = [sum(p["cpu_s"] for p in r["procs"]) / r["cpu"]["wall_s"] for r in runs]
    server = [r["cpu"]["server_cpu_s"] / r["cpu"]["wall_s"] for r in runs]
    machine = [r["cpu"]["machine_busy_s"] / r["cpu"]["machine_cpu_s"] for r in runs]
    states: dict[str, list[float]] = {}
    for r in runs:
        for k, v in r["waits"]["sessions_by_state"].items():
            states.setdefault(k, []).append(v)
    last = runs[-1]["waits"]
    # CPU of our processes and of the server per completed cycle: what the cores allow, whatever
    # else the machine runs (2 cores / this = the cycles/s two idle cores would give)
    cpu_ms = [1000 * (sum(p["cpu_s"] for p in r["procs"]) + r["cpu"]["server_cpu_s"]) / n
              for r in runs if (n := sum(p["cycles"] for p in r["procs"]))]
    return {
        "per_s": summary(rates, 1),
        "cpu_ms_per_cycle": summary(cpu_ms, 2),
        "cores_allow_per_s": round((os.cpu_count() or 1) * 1000 / statistics.median(cpu_ms), 1) if cpu_ms else None,
        "conflicts": sum(p.get("conflicts", 0) for r in runs for p in r["procs"]),
        "cores_busy": {"our_processes": summary(client, 2), "server": summary(server, 2),
                       "machine_fraction": summary(machine, 2)},
        "sessions_by_state": {k: summary(v, 3) for k, v in sorted(states.items())},
        "lock_waiting_sessions_mean": summary([r["waits"]["lock_waiting_sessions_mean"] for r in runs], 3),
        "top_waits_last_window": last["top_waits"],
    }


def throughput(server: Any, *, workers: Sequence[int], seconds: float, reps: int, seed: int) -> dict[str, Any]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    from hitl_graphs.storage.postgres import migrate

    dbs = {"ours": "tp_ours", "ours_own_threads": "tp_ours_own", "plain_postgres": "tp_plain"}
    urls = {name: create_database(server, db) for name, db in dbs.items()}
    migrate(urls["ours"])
    migrate(urls["ours_own_threads"])
    with psycopg.connect(urls["plain_postgres"], autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        PostgresSaver(conn).setup()  # once: its setup races when processes call it at once
    spec = {"durability": TEMPLATE_DURABILITY, "window": 4}
    got = _run_pools({"ours": {**spec, "kind": "ours", "url": urls["ours"]},
                      "ours_own_threads": {**spec, "kind": "ours_own", "url": urls["ours_own_threads"]},
                      "plain_postgres": {**spec, "kind": "plain", "url": urls["plain_postgres"]}},
                     workers, reps, seconds, seed, server, dbs)
    out: dict[str, Any] = {"seconds_per_window": seconds, "windows": reps, "durability": TEMPLATE_DURABILITY,
                           "configs": {}}
    for name in got:
        entry: dict[str, Any] = {str(k): _summarise(got[name][k], seconds) for k in workers}
        one = entry[str(workers[0])]["per_s"]["median"]
        entry["scaling"] = {str(k): round(entry[str(k)]["per_s"]["median"] / one, 2) if one else None for k in workers}
        if name != "plain_postgres":
            wins = [t for k in workers for r in got[name][k] for p in r["procs"] for t in p["won"]]
            entry["check"] = check_decisions(urls[name], wins)
        entry["vs 2 processes"] = {str(k): round(entry[str(k)]["per_s"]["median"] / entry["2"]["per_s"]["median"], 2)
                                   for k in workers if "2" in entry and entry["2"]["per_s"]["median"]}
        out["configs"][name] = entry
    for name in ("ours", "ours_own_threads"):
        out[f"{name} / plain_postgres"] = {
            str(k): round(out["configs"][name][str(k)]["per_s"]["median"]
                          / out["configs"]["plain_postgres"][str(k)]["per_s"]["median"], 2)
            for k in workers}
    return out


def _run_pools(specs: dict[str, dict[str, Any]], workers: Sequence[int], reps: int, seconds: float, seed: int,
               server: Any, dbs: dict[str, str]) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """Start a pool of `max(workers)` worker processes per spec, run the windows, stop the pools."""
    pools: dict[str, _Pool] = {}
    try:
        for name, spec in specs.items():
            pools[name] = _Pool(spec, max(workers), module="benchmarks.pg_worker")
        for pool in pools.values():
            pool.wait_ready()
        return _windows(pools, workers, reps, seconds, seed, server, dbs)
    finally:
        for pool in pools.values():
            pool.close()


def check_decisions(url: str, wins: list[str]) -> dict[str, Any]:
    """No decision lost or doubled: every won resume decided once, applied, its step run once; nothing stuck."""
    import psycopg

    won = set(wins)
    with psycopg.connect(url) as conn:
        decided = conn.execute("SELECT thread_id, count(*) FROM hitl_events WHERE event = 'decided' GROUP BY thread_id").fetchall()
        applied = {r[0] for r in conn.execute("SELECT thread_id FROM hitl_reviews WHERE status = 'applied'")}
        stuck = conn.execute("SELECT count(*) FROM hitl_reviews WHERE status = 'decided'").fetchone()[0]  # type: ignore[index]
        running = conn.execute("SELECT count(*) FROM hitl_threads WHERE status = 'running'").fetchone()[0]  # type: ignore[index]
        done = {r[0]: r[1] for r in conn.execute("SELECT thread_id, outcome FROM hitl_threads WHERE status = 'done'")}
    from hitl_graphs import Runner

    with Runner.open(url, workflows=[ours_workflow()]) as runner:
        executed_once = sum(len(runner.show(t).state.get("results") or []) == 1 for t in won)
    decided_twice = sum(1 for _, n in decided if n > 1)
    ok = (len(wins) == len(won) == len(decided) == len(applied) == executed_once and decided_twice == 0
          and stuck == 0 and running == 0 and applied == won and all(done.get(t) == "completed" for t in won))
    return {"decisions_won": len(wins), "won_twice": len(wins) - len(won), "decided_events": sum(n for _, n in decided),
            "decided_twice": decided_twice, "won_but_not_applied": len(won - applied),
            "applied_but_not_won": len(applied - won), "executed_exactly_once": executed_once,
            "stuck_decided": stuck, "stuck_running": running, "ok": ok}


def audit_contention(server: Any, *, workers: Sequence[int], seconds: float, reps: int, seed: int) -> dict[str, Any]:
    """Appends/s to the one audit chain with N processes at once, next to unchained commits/s."""
    from hitl_graphs.storage.postgres import PostgresStore, migrate

    dbs = {"audit_chain": "audit_chain", "unchained_commits": "audit_plain"}
    urls = {name: create_database(server, db) for name, db in dbs.items()}
    migrate(urls["audit_chain"])
    dbs["bare_round_trips"] = "audit_plain"  # reads nothing of it
    got = _run_pools({"audit_chain": {"kind": "audit", "url": urls["audit_chain"]},
                      "unchained_commits": {"kind": "insert", "url": urls["unchained_commits"]},
                      "bare_round_trips": {"kind": "select", "url": urls["unchained_commits"]}},
                     workers, reps, seconds, seed, server, dbs)
    out: dict[str, Any] = {"seconds_per_window": seconds, "windows": reps, "configs": {}}
    for name in got:
        out["configs"][name] = {str(k): _summarise(got[name][k], seconds) for k in workers}
    out["chain / unchained"] = {
        str(k): round(out["configs"]["audit_chain"][str(k)]["per_s"]["median"]
                      / out["configs"]["unchained_commits"][str(k)]["per_s"]["median"], 2) for k in workers}
    trips = out["configs"]["bare_round_trips"]
    out["bare_round_trips vs 2 processes"] = {  # the machine's own fall as processes outnumber cores
        str(k): round(trips[str(k)]["per_s"]["median"] / trips["2"]["per_s"]["median"], 2) for k in workers if "2" in trips}
    with PostgresStore(urls["audit_chain"]) as store:
        report = store.audit.verify()
    out["verify"] = {"ok": report.ok, "checked": report.checked, "problem": report.problem}
    return out

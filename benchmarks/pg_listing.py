"""Figure 7, listing and resuming on PostgreSQL at 1k / 10k / 100k paused threads.

Each size is a database of its own on the benchmark's server, filled by `pg_bulk.populate`. Ours:
`Runner.pending(limit=50)` at every size, interleaved in a shuffled order. Plain LangGraph: the same
scan as figure 2 (`figures.plain_pending`: one pass over `PostgresSaver.list(None)`), at the sizes
`plain_reps` names (a full scan of 100,000 threads takes long enough to leave out of a routine run).
Resume: one random bulk-copied thread at the smallest and the largest size, through the Runner and
through plain LangGraph on `PostgresSaver` (the same graph compiled on it), all four interleaved.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from langgraph.types import Command

from benchmarks.figures import _size_pair, first_pages, plain_pending
from benchmarks.graphs import ours_workflow
from benchmarks.pg_bulk import populate
from benchmarks.setups import INPUT
from benchmarks.stats import summary


def listing_and_resume(server: Any, *, sizes: Sequence[int], reps: int, plain_reps: dict[int, int],
                       resume_samples: int, seed: int = 11) -> dict[str, Any]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    from benchmarks.postgres import create_database
    from hitl_graphs import Approve, Runner

    rng = random.Random(seed)
    wf = ours_workflow()
    urls = {size: create_database(server, f"threads_{size}") for size in sizes}
    populated = {str(size): populate(urls[size], size, workflow=wf, input=INPUT) for size in sizes}
    with Runner.open(urls[min(sizes)], workflows=[wf]) as runner:  # the copies' audit chain holds
        populated[str(min(sizes))]["audit_verify_ok"] = runner.store.audit.verify().ok
    runners = {size: Runner.open(url, workflows=[wf]) for size, url in urls.items()}
    conns: list[Any] = []
    try:
        first = first_pages(runners, reps, rng)
        plain: dict[str, Any] = {}
        for size in sizes:
            if not plain_reps.get(size):
                continue
            conn = psycopg.connect(urls[size], autocommit=True, prepare_threshold=0, row_factory=dict_row)
            conns.append(conn)
            saver = PostgresSaver(conn)
            scans, found = [], 0
            for _ in range(plain_reps[size]):
                t0 = time.perf_counter()
                _, found = plain_pending(saver)
                scans.append((time.perf_counter() - t0) * 1000)
            plain[str(size)] = {"ms": summary(scans, 1), "paused_found": found}
        small, large = min(sizes), max(sizes)
        picks = {s: _sample_paused(urls[s], 2 * resume_samples + 4, rng) for s in (small, large)}
        apps = {}
        for s in (small, large):
            conn = psycopg.connect(urls[s], autocommit=True, prepare_threshold=0, row_factory=dict_row)
            conns.append(conn)
            apps[s] = wf.compile(PostgresSaver(conn))
        resumed = resumed_ok = 0

        def resume_ours(size: int) -> float:
            nonlocal resumed, resumed_ok
            thread_id = picks[size].pop()
            t0 = time.perf_counter()
            view = runners[size].resume(thread_id, Approve(actor="bench"))
            took = (time.perf_counter() - t0) * 1000
            resumed += 1
            resumed_ok += view.status == "done" and view.outcome == "completed" and len(view.state.get("results") or []) == 1
            return took

        def resume_plain(size: int) -> float:
            config = {"configurable": {"thread_id": picks[size].pop()}}
            t0 = time.perf_counter()
            out = apps[size].invoke(Command(resume={"kind": "approve", "actor": "bench"}), config,
                                    durability=wf.durability)
            took = (time.perf_counter() - t0) * 1000
            assert out.get("results"), out
            return took

        kinds: dict[str, Callable[[int], float]] = {"ours": resume_ours, "plain_postgres": resume_plain}
        for fn in kinds.values():
            for size in (small, large):
                fn(size)
        got: dict[str, dict[int, list[float]]] = {k: {small: [], large: []} for k in kinds}
        for _ in range(resume_samples):
            order = [(k, size) for k in kinds for size in (small, large)]
            rng.shuffle(order)
            for k, size in order:
                got[k][size].append(kinds[k](size))
        resume: dict[str, Any] = {"small": small, "large": large}
        for k, per in got.items():
            resume[k] = _size_pair(per, small, large)
        resume["ours / plain_postgres"] = {
            str(s): round(summary(got["ours"][s])["median"] / summary(got["plain_postgres"][s])["median"], 2)
            for s in (small, large)}
        resume["bulk_threads_resumed_ok"] = resumed_ok
        resume["bulk_threads_resumed"] = resumed
    finally:
        for r in runners.values():
            r.close()
        for conn in conns:
            conn.close()
    return {
        "populated": populated,
        "ours_first_page_ms": {str(s): summary(v, 3) for s, v in first.items()},
        "plain_scan": plain,
        "resume": resume,
    }


def _sample_paused(url: str, k: int, rng: random.Random) -> list[str]:
    import psycopg

    with psycopg.connect(url) as conn:
        ids = [r[0] for r in conn.execute(
            "SELECT thread_id FROM hitl_reviews WHERE status = 'pending' AND thread_id NOT LIKE 'bulk-template-%'")]
    return rng.sample(ids, k)

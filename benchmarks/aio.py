"""Issue 15's async figures: the runner's async twins next to plain async LangGraph.

- **Cycle**: `await runner.astart(...)` + `await runner.aresume(...)` of the plan-review template
  (durability "exit", as it declares) against plain LangGraph's `AsyncSqliteSaver` running the
  same-shaped graph with `durability="exit"` (`ainvoke` to the interrupt, `ainvoke(Command(resume))`),
  both on SQLite files with `synchronous=FULL`. Target: at most 1.15x.
- **Concurrency**: the same cycles, 8 at a time from one event loop (`asyncio.gather` over 8
  threads) against 8 one after another; throughput ratio for ours and for plain. Target: ours at
  least 1.5x.
- **Concurrency while steps wait**: the same again with each plan step blocking 5 ms on I/O first
  (`graphs.executor_for`), as a step that calls a model or an API does. Running many at once pays
  off when cycles wait; with steps that only compute, one interpreter lock runs one cycle at a time
  however many are in flight, and the gain is capped by the share of a cycle spent off that lock
  (`process_cores_busy`: about 0.9 of a core one at a time leaves about 1.1x, for plain LangGraph too).

All four variants run in every round, in a shuffled order, on one event loop kept for the whole
figure (each side keeps its connection and its pools, as a long-running server would); each ratio
is taken within a round.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from langgraph.types import Command

from benchmarks.graphs import WORKFLOW, ours_workflow, plain_plan_review_graph
from benchmarks.setups import INPUT
from benchmarks.stats import ratios, remove_db, rounds, summary

Cycle = Callable[[], Awaitable[None]]


def ours_async_cycle(runner: Any) -> Cycle:
    from hitl_graphs import Approve

    async def cycle() -> None:
        paused = await runner.astart(WORKFLOW, INPUT)
        if paused.status != "paused":
            raise RuntimeError(f"expected a pause, got {paused.status}: {paused.error}")
        done = await runner.aresume(paused.thread_id, Approve(actor="bench"))
        if done.status != "done":
            raise RuntimeError(f"expected the end, got {done.status}: {done.error}")

    return cycle


def plain_async_cycle(app: Any, durability: str = "exit") -> Cycle:
    async def cycle() -> None:
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        out = await app.ainvoke(INPUT, config, durability=durability)
        if "__interrupt__" not in out:
            raise RuntimeError("expected a pause")
        out = await app.ainvoke(Command(resume={"kind": "approve", "actor": "bench"}), config, durability=durability)
        if not out.get("results"):
            raise RuntimeError("expected the plan to run")

    return cycle


def one_after_another(cycle: Cycle, n: int) -> Cycle:
    async def run() -> None:
        for _ in range(n):
            await cycle()

    return run


def at_once(cycle: Cycle, n: int) -> Cycle:
    async def run() -> None:
        await asyncio.gather(*(cycle() for _ in range(n)))

    return run


STEP_WAIT = 0.005
"""Seconds each plan step blocks on I/O in the figure's second part."""


def async_figure(workdir: Path, *, n_rounds: int, per_round: int, concurrency: int = 8) -> dict[str, Any]:
    """Ours and plain async LangGraph, 1 and `concurrency` cycles at a time, side by side: steps that only
    compute, then (`"waiting"`) steps that first wait `STEP_WAIT` seconds on I/O."""
    figure = _async_runs(workdir, n_rounds=n_rounds, per_round=per_round, concurrency=concurrency, step_wait=0.0)
    figure["waiting"] = _async_runs(workdir, n_rounds=n_rounds, per_round=per_round, concurrency=concurrency,
                                    step_wait=STEP_WAIT)
    return figure


def _async_runs(workdir: Path, *, n_rounds: int, per_round: int, concurrency: int, step_wait: float) -> dict[str, Any]:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from hitl_graphs import Runner, SqliteStore

    ours_db, plain_db = str(workdir / "async-ours.sqlite"), str(workdir / "async-plain.sqlite")
    for db in (ours_db, plain_db):
        remove_db(db)
    loop = asyncio.new_event_loop()
    runner = Runner(SqliteStore(ours_db), [ours_workflow(step_wait=step_wait)], owns_store=True)

    async def open_plain() -> tuple[Any, Any]:
        import aiosqlite

        conn = await aiosqlite.connect(plain_db)
        saver = AsyncSqliteSaver(conn)
        await saver.setup()  # WAL, as SqliteStore; SQLite's default synchronous (FULL) on both
        return plain_plan_review_graph(step_wait=step_wait).compile(checkpointer=saver), conn

    plain_app, plain_conn = loop.run_until_complete(open_plain())
    ours, plain = ours_async_cycle(runner), plain_async_cycle(plain_app)
    n = concurrency
    batches: dict[str, Cycle] = {
        "ours_async_1": one_after_another(ours, n),
        f"ours_async_{n}": at_once(ours, n),
        "plain_async_exit_1": one_after_another(plain, n),
        f"plain_async_exit_{n}": at_once(plain, n),
    }
    variants = {name: (lambda b=batch: loop.run_until_complete(b())) for name, batch in batches.items()}
    try:
        cpu: dict[str, list[float]] = {}
        times = rounds(variants, n_rounds=n_rounds, per_round=per_round, warmup=2, cpu_out=cpu)
    finally:
        loop.run_until_complete(plain_conn.close())
        runner.close()
        loop.close()
    for db in (ours_db, plain_db):
        remove_db(db)
    per_cycle = {name: [t / n for t in ts] for name, ts in times.items()}
    gain = {  # throughput with n at a time over throughput one at a time = time(1) / time(n)
        "ours": summary(ratios(times, "ours_async_1", f"ours_async_{n}"), 3),
        "plain_async_exit": summary(ratios(times, "plain_async_exit_1", f"plain_async_exit_{n}"), 3),
    }
    return {
        "cycle": "astart (plan -> review_plan pauses) + aresume with Approve (-> execute -> end), fresh thread id; "
                 "plain: AsyncSqliteSaver, ainvoke with durability='exit'; both synchronous=FULL, WAL, one file each",
        "step_wait_ms": step_wait * 1000,
        "rounds": n_rounds,
        "batches_per_round": per_round,
        "cycles_per_batch": n,
        "variants": {name: {"cycles_per_s": summary([1 / t for t in ts], 1), "ms_per_cycle": summary([t * 1000 for t in ts], 3)}
                     for name, ts in per_cycle.items()},
        "ratios": {
            "ours_async_1 / plain_async_exit_1": summary(ratios(times, "ours_async_1", "plain_async_exit_1"), 3),
            f"ours_async_{n} / plain_async_exit_{n}": summary(ratios(times, f"ours_async_{n}", f"plain_async_exit_{n}"), 3),
        },
        "cpu_ratios": {
            "ours_async_1 / plain_async_exit_1": summary(ratios(cpu, "ours_async_1", "plain_async_exit_1"), 3),
        },
        f"throughput_{n}_vs_1": gain,
        # CPU seconds of the process (every thread) per second of the batch: at about 1 core with n at
        # once, the interpreter lock is the limit and running more at once cannot gain more
        "process_cores_busy": {name: summary([c / t for c, t in zip(cpu[name], times[name])], 2) for name in times},
        "targets": {"ours_async_1 / plain_async_exit_1": "<= 1.15", f"throughput_{n}_vs_1 ours": ">= 1.5"},
    }

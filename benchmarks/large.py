"""Large states: a pause+resume cycle and the bytes a finished thread keeps, with a 100 KB and a 1 MB field.

The graph is what a user writes: a state with a large `document` field (the run's input), a node
that drafts a short summary, one that pauses with `interrupt()` to ask a person about the summary,
and one that publishes. Ours runs that graph through the `Runner` (durability "exit", the ledger
committed with the checkpoint); plain LangGraph runs the same graph with `SqliteSaver` and the
same durability, once with LangGraph's fresh worker threads per invoke and once with the thread
reuse the runner has (`hitl_graphs.workers`), both side by side in shuffled rounds on one file.

The bytes are counted after folding the WAL in and VACUUM (`figures._db_bytes`), per finished
thread, by table: where ours keeps more than plain LangGraph shows which table holds it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from benchmarks.figures import _db_bytes, _per_thread
from benchmarks.setups import Plain
from benchmarks.stats import ratios, remove_db, rounds, summary

WORKFLOW = "bench-large"
SIZES = {"100KB": 100_000, "1MB": 1_000_000}
TEXT = "The quick brown fox jumps over the lazy dog; every field of this report is a sentence like this one. "


class DocState(TypedDict, total=False):
    document: str
    summary: str
    answer: Any
    published: bool


def document_graph() -> StateGraph[Any]:
    """The user-shaped graph: draft -> ask (interrupt) -> publish."""

    def draft(state: DocState) -> DocState:
        return {"summary": f"{len(state['document'])} characters, starting: {state['document'][:80]}"}

    def ask(state: DocState) -> DocState:
        return {"answer": interrupt({"summary": state["summary"], "question": "publish this document?"})}

    def publish(state: DocState) -> DocState:
        return {"published": True}

    graph = StateGraph(DocState)
    graph.add_node("draft", draft)
    graph.add_node("ask", ask)
    graph.add_node("publish", publish)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "ask")
    graph.add_edge("ask", "publish")
    graph.add_edge("publish", END)
    return graph


def document(size: int) -> dict[str, str]:
    """The run's input: a `document` of `size` characters."""
    return {"document": (TEXT * (size // len(TEXT) + 1))[:size]}


PLAIN = Plain("plain_exit", durability="exit", about="plain LangGraph, SqliteSaver (FULL), durability='exit'")
PLAIN_REUSED = Plain("plain_exit_reused_threads", durability="exit", reuse_threads=True,
                     about="as plain_exit, with worker threads kept across invokes as the runner keeps them")
OURS_ABOUT = "Runner, the same graph, durability='exit' committed with the ledger, synchronous=FULL"
PAIRS = [("ours", "plain_exit"), ("ours", "plain_exit_reused_threads")]


def _ours_runner(db: str) -> Any:
    from hitl_graphs import Runner, SqliteStore, Workflow

    return Runner(SqliteStore(db), [Workflow(WORKFLOW, document_graph, durability="exit")], owns_store=True)


def _ours_cycle(runner: Any, data: dict[str, str]) -> Callable[[], None]:
    from hitl_graphs import Approve

    def cycle() -> None:
        paused = runner.start(WORKFLOW, data)
        if paused.status != "paused":
            raise RuntimeError(f"expected a pause, got {paused.status}: {paused.error}")
        done = runner.resume(paused.thread_id, Approve(actor="bench"))
        if done.status != "done" or not done.state.get("published"):
            raise RuntimeError(f"expected the end, got {done.status}: {done.error}")

    return cycle


def _plain_cycle(app: Any, p: Plain, data: dict[str, str]) -> Callable[[], None]:
    from hitl_graphs.workers import LEASE_KEY, Pools, install

    if p.reuse_threads and not install():
        raise RuntimeError("hitl_graphs.workers cannot hand LangGraph a pool with this LangGraph version")
    pools = Pools() if p.reuse_threads else None

    def config(thread_id: str) -> dict[str, Any]:
        configurable: dict[str, Any] = {"thread_id": thread_id}
        if pools is not None:
            configurable[LEASE_KEY] = pools.lease()
        return {"configurable": configurable}

    def cycle() -> None:
        thread_id = uuid.uuid4().hex
        out = app.invoke(data, config(thread_id), durability=p.durability)
        if "__interrupt__" not in out:
            raise RuntimeError("expected a pause")
        out = app.invoke(Command(resume={"kind": "approve", "actor": "bench"}), config(thread_id), durability=p.durability)
        if not out.get("published"):
            raise RuntimeError("expected the document to be published")

    return cycle


def _plain_app(p: Plain, db: str) -> tuple[Any, Any]:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    return document_graph().compile(checkpointer=saver), conn


def large(workdir: Path, *, sizes: Sequence[str] = tuple(SIZES), n_rounds: int, per_round: int,
          threads: int) -> dict[str, Any]:
    """Cycle time (ratios within rounds) and bytes per finished thread, per size, ours next to plain."""
    out: dict[str, Any] = {
        "graph": "user-shaped: draft -> ask (interrupt() with a short summary) -> publish; the large field is "
                 "the input's `document`, kept in the state",
        "setups": {"ours": OURS_ABOUT, PLAIN.name: PLAIN.about, PLAIN_REUSED.name: PLAIN_REUSED.about},
        "rounds": n_rounds, "cycles_per_round": per_round, "threads": threads, "sizes": {},
    }
    for label in sizes:
        data = document(SIZES[label])
        out["sizes"][label] = {"cycle": _cycles(workdir, data, n_rounds=n_rounds, per_round=per_round),
                               "bytes": _bytes(workdir, data, threads=threads)}
    return out


def _cycles(workdir: Path, data: dict[str, str], *, n_rounds: int, per_round: int) -> dict[str, Any]:
    db = str(workdir / "large-cycles.sqlite")
    remove_db(db)
    variants: dict[str, Callable[[], None]] = {}
    closers: list[Callable[[], None]] = []
    for p in (PLAIN, PLAIN_REUSED):
        app, conn = _plain_app(p, db)
        variants[p.name] = _plain_cycle(app, p, data)
        closers.append(conn.close)
    runner = _ours_runner(db)
    variants["ours"] = _ours_cycle(runner, data)
    closers.append(runner.close)
    try:
        cpu: dict[str, list[float]] = {}
        times = rounds(variants, n_rounds=n_rounds, per_round=per_round, warmup=2, cpu_out=cpu)
    finally:
        for close in closers:
            close()
    remove_db(db)
    return {
        "ms_per_cycle": {name: summary([t * 1000 for t in ts], 2) for name, ts in times.items()},
        "ratios": {f"{a} / {b}": summary(ratios(times, a, b), 3) for a, b in PAIRS},
        "cpu_ratios": {f"{a} / {b}": summary(ratios(cpu, a, b), 3) for a, b in PAIRS},
    }


def _bytes(workdir: Path, data: dict[str, str], *, threads: int) -> dict[str, Any]:
    from hitl_graphs import Approve

    db = str(workdir / "large-bytes-plain.sqlite")
    remove_db(db)
    app, conn = _plain_app(PLAIN, db)
    empty = _db_bytes(db)
    configs = [{"configurable": {"thread_id": uuid.uuid4().hex}} for _ in range(threads)]
    for config in configs:
        app.invoke(data, config, durability="exit")
    paused = _db_bytes(db)
    for config in configs:
        app.invoke(Command(resume={"kind": "approve", "actor": "bench"}), config, durability="exit")
    finished = _db_bytes(db)
    conn.close()
    remove_db(db)
    plain = _per_thread(empty, paused, finished, threads)

    db = str(workdir / "large-bytes-ours.sqlite")
    remove_db(db)
    runner = _ours_runner(db)
    empty = _db_bytes(db)
    ids = [runner.start(WORKFLOW, data).thread_id for _ in range(threads)]
    paused = _db_bytes(db)
    for thread_id in ids:
        runner.resume(thread_id, Approve(actor="bench"))
    finished = _db_bytes(db)
    runner.close()
    remove_db(db)
    ours = _per_thread(empty, paused, finished, threads)
    extra = ours["finished"].get("total", 0) - plain["finished"].get("total", 0)
    return {"plain_exit": plain, "ours": ours, "ours_minus_plain_finished": extra}


def targets(result: dict[str, Any]) -> list[tuple[str, str, Any, bool]]:
    """Issue 15's large-state targets: (what, target, measured, met)."""
    out: list[tuple[str, str, Any, bool]] = []
    for label, entry in result.get("sizes", {}).items():
        for pair in ("ours / plain_exit", "ours / plain_exit_reused_threads"):
            r = entry["cycle"]["ratios"][pair]["median"]
            out.append((f"large {label}: cycle, {pair} (same durability)", "<= 1.15x", r, r <= 1.15))
        extra = entry["bytes"]["ours_minus_plain_finished"]
        out.append((f"large {label}: bytes per finished thread, ours - plain_exit", "<= 2048", extra, extra <= 2048))
    return out

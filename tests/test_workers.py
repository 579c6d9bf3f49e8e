"""`Runner(reuse_threads=True)`: LangGraph's worker threads kept across runs, and nothing else changed.

The runner's runs reuse one pool per calling thread instead of starting threads per `invoke`;
subgraphs, parallel branches, errors in a branch and plain LangGraph outside the runner behave as
before. If a LangGraph upgrade removes the hook, the first test here fails.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from hitl_graphs import Approve, Runner, SqliteStore, Workflow, request_review
from hitl_graphs.workers import install

PREFIX = "hitl-langgraph"


def _add(a: list[str] | None, b: list[str] | None) -> list[str]:
    return [*(a or []), *(b or [])]


class FanState(TypedDict, total=False):
    seen: Annotated[list[str], _add]


def _where(name: str, *, fail: bool = False) -> Any:
    """A node that records which thread ran it."""

    def node(state: FanState) -> FanState:
        if fail:
            raise RuntimeError(f"{name} broke")
        return {"seen": [f"{name}@{threading.current_thread().name}"]}

    return node


def _gate(state: FanState) -> FanState:
    request_review("gate", {"seen": len(state.get("seen") or [])}, title="Go on?", allowed=("approve", "reject"))
    return {}


def _subgraph() -> Any:
    """Two parallel branches inside a subgraph: its loop must get LangGraph's own pool."""
    g = StateGraph(FanState)
    g.add_node("sub_a", _where("sub_a"))
    g.add_node("sub_b", _where("sub_b"))
    g.add_edge(START, "sub_a")
    g.add_edge(START, "sub_b")
    g.add_edge("sub_a", END)
    g.add_edge("sub_b", END)
    return g.compile()


def fan_graph(*, fail: bool = False) -> StateGraph[FanState]:
    """gate, then three branches side by side (one a subgraph), then the end."""
    g = StateGraph(FanState)
    g.add_node("gate", _gate)
    g.add_node("a", _where("a", fail=fail))
    g.add_node("b", _where("b"))
    g.add_node("sub", _subgraph())
    for branch in ("a", "b", "sub"):
        g.add_edge("gate", branch)
        g.add_edge(branch, END)
    g.add_edge(START, "gate")
    return g


def line_graph() -> StateGraph[FanState]:
    """gate -> a -> b: nothing runs side by side."""
    g = StateGraph(FanState)
    g.add_node("gate", _gate)
    g.add_node("a", _where("a"))
    g.add_node("b", _where("b"))
    g.add_edge(START, "gate")
    g.add_edge("gate", "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g


def _workflows(durability: Any = "exit") -> list[Workflow]:
    return [
        Workflow("fan", fan_graph, durability=durability),
        Workflow("fan-fails", lambda: fan_graph(fail=True), durability=durability),
        Workflow("line", line_graph, durability=durability),
    ]


def _cycle(runner: Runner, name: str = "fan") -> Any:
    paused = runner.start(name, {})
    assert paused.status == "paused"
    return runner.resume(paused.thread_id, Approve(actor="ana"))


def _ours() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(PREFIX)}


def test_the_hook_is_there() -> None:
    """Fails when a LangGraph upgrade removes what `hitl_graphs.workers` replaces."""
    assert install() is True


@pytest.mark.parametrize("durability", ["exit", "async"])
def test_runs_reuse_threads_with_the_same_results(tmp_path: Path, durability: str) -> None:
    results = {}
    for reuse in (True, False):
        before = _ours()  # pools of runners other tests left open in this process are not this one's
        with Runner.open(str(tmp_path / f"{reuse}.sqlite"), workflows=_workflows(durability), reuse_threads=reuse) as runner:
            threads_seen: set[threading.Thread] = set()
            for _ in range(8):
                done = _cycle(runner)
                assert done.status == "done"
                threads_seen |= _ours() - before
            results[reuse] = sorted(s.split("@")[0] for s in done.state["seen"])
            names = {s.split("@")[1] for s in done.state["seen"]}
        if reuse:
            # a pool's handful of threads served all sixteen runs; none were started per run
            assert 0 < len(threads_seen) <= 6
            assert any(n.startswith(PREFIX) for n in names)
        else:
            assert not threads_seen
        # the subgraph's loop got a pool of LangGraph's own, not the runner's
        assert any(s.startswith("sub_") and PREFIX not in s for s in done.state["seen"])
    assert results[True] == results[False] == ["a", "b", "sub_a", "sub_b"]


@pytest.mark.parametrize("durability", ["exit", "async"])
def test_a_deferred_run_saves_its_checkpoints_in_the_calling_thread(tmp_path: Path, durability: str) -> None:
    """Under "exit" a save only appends rows to memory: no thread is woken for it. Under "async"
    each step's save writes SQLite and goes to the pool, as in LangGraph."""
    before = _ours()
    with Runner.open(str(tmp_path / "h.sqlite"), workflows=_workflows(durability)) as runner:
        for _ in range(3):
            done = _cycle(runner, "line")
            assert done.status == "done"
            assert [s.split("@")[0] for s in done.state["seen"]] == ["a", "b"]
        started = _ours() - before
        assert (not started) if durability == "exit" else started
        # and the thread reads back from the database as it ended
        assert runner.show(done.thread_id).state["seen"] == done.state["seen"]


def test_close_stops_the_threads_and_later_runs_use_langgraphs_own(tmp_path: Path) -> None:
    before = _ours()
    store = SqliteStore(str(tmp_path / "h.sqlite"))
    runner = Runner(store, _workflows())
    _cycle(runner)
    assert _ours() - before
    runner.close()
    assert not (_ours() - before)
    # the store is the caller's and still open: the runner goes on working, on LangGraph's pools
    assert _cycle(runner).status == "done"
    assert not (_ours() - before)
    store.close()


def test_each_calling_thread_gets_its_own_pool(tmp_path: Path) -> None:
    """Two threads running graphs through one runner do not queue behind each other's tasks."""
    with Runner.open(str(tmp_path / "h.sqlite"), workflows=_workflows()) as runner:
        pools: list[Any] = []
        barrier = threading.Barrier(2)

        def work() -> None:
            barrier.wait()
            for _ in range(3):
                assert _cycle(runner).status == "done"
            lease = runner._workers.lease() if runner._workers else None
            pools.append(lease.take() if lease else None)

        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(pools) == 2 and pools[0] is not None and pools[0] is not pools[1]


def test_a_forked_child_does_not_use_the_parents_pools() -> None:
    """Their threads stayed in the parent: a task queued on them in the child would never run."""
    from hitl_graphs.workers import Pools

    pools = Pools()
    assert pools.lease() is not None
    pid = os.fork()
    if pid == 0:  # the child reports through its exit status
        os._exit(0 if pools.lease() is None else 1)
    _, status = os.waitpid(pid, 0)
    pools.close()
    assert os.WEXITSTATUS(status) == 0


def test_an_error_in_a_branch_still_fails_the_run(tmp_path: Path) -> None:
    with Runner.open(str(tmp_path / "h.sqlite"), workflows=_workflows()) as runner:
        paused = runner.start("fan-fails", {})
        with pytest.raises(RuntimeError, match="a broke"):
            runner.resume(paused.thread_id, Approve(actor="ana"))
        assert runner.show(paused.thread_id).status == "failed"


def test_plain_langgraph_outside_a_runner_keeps_its_own_pools(tmp_path: Path) -> None:
    with Runner.open(str(tmp_path / "h.sqlite"), workflows=_workflows()) as runner:
        _cycle(runner)  # the hook is installed and a pool is alive
        g = StateGraph(FanState)
        g.add_node("a", _where("a"))
        g.add_node("b", _where("b"))
        g.add_edge(START, "a")
        g.add_edge(START, "b")
        app = g.compile(checkpointer=InMemorySaver())
        out = app.invoke({}, {"configurable": {"thread_id": "plain"}})
    assert sorted(s.split("@")[0] for s in out["seen"]) == ["a", "b"]
    assert not any(PREFIX in s for s in out["seen"])

"""Every touch of a LangGraph private name, in one fenced place.

The rest of the package uses LangGraph's public API only. What is here depends on LangGraph's
internals, each with a fallback that is slower, never wrong, and a test
(`tests/test_langgraph_compat.py`) pinned to the versions we support (`TESTED`) that fails
loudly when an upgrade moves one:

- `replace_executor_factory`: the thread pool LangGraph's loop takes for a run
  (`langgraph.pregel._executor.get_executor_for_config`); used by `hitl_graphs.workers` to keep
  threads across runs. `factory_is_called` proves LangGraph still calls it (an attribute that
  exists but is no longer called would silently turn thread reuse off).
- `is_loop_save`: recognises the loop's "save after the previous save" task by its name.
- `writes_have_task_path`: whether `SqliteSaver`'s `writes` table has its `task_path` column
  (the saver records it on a private attribute during `setup`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from concurrent.futures import Executor
from typing import Any

TESTED = {"langgraph": ("1.2", "1.3"), "langgraph-checkpoint-sqlite": ("3.1.2", "4")}
"""Version ranges [low, high) the fenced names were checked against by the compat test."""

ExecutorFactory = Callable[[Any], AbstractContextManager[Executor]]


def replace_executor_factory(wrap: Callable[[ExecutorFactory], ExecutorFactory]) -> bool:
    """Replace LangGraph's per-run executor factory with `wrap(original)`; False if it is gone."""
    try:
        from langgraph.pregel import _executor
    except ImportError:
        return False
    original = getattr(_executor, "get_executor_for_config", None)
    if original is None or not callable(original):
        return False
    _executor.get_executor_for_config = wrap(original)  # type: ignore[attr-defined, assignment]  # private, patched
    return True


def factory_is_called(probe_key: str) -> bool:
    """Whether LangGraph's sync loop still asks the (replaced) factory for its pool: runs a
    one-node graph with `probe_key` in its config and reports whether the factory saw it."""
    from typing import TypedDict

    from langgraph.graph import START, StateGraph

    from hitl_graphs import workers

    class _S(TypedDict, total=False):
        n: int

    graph = StateGraph(_S)
    graph.add_node("n", lambda s: {"n": 1})
    graph.add_edge(START, "n")
    seen: list[bool] = []
    with workers.probing(probe_key, seen):
        graph.compile().invoke({}, {"configurable": {probe_key: True}})
    return bool(seen)


def is_loop_save(task: Any) -> bool:
    """The loop's "save the checkpoint after the previous save" step (a private function)."""
    return getattr(task, "__name__", "") == "_checkpointer_put_after_previous"


def writes_have_task_path(saver: Any) -> bool:
    """Whether the saver's `writes` table has `task_path` (False only for an old read-only file)."""
    return bool(getattr(saver, "_has_task_path", True))

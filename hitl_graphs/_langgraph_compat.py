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
- `StatementCapture`: `PostgresSaver.put` / `put_writes` send their statements through the
  private `_cursor`; within `capturing(out)` they land in `out` instead of on the server, so the
  ledger's transaction can run them (`storage.postgres.saver`). The compat test proves a put still
  sends nothing else (a statement sent behind our back would commit on its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from concurrent.futures import Executor
from typing import Any

TESTED = {"langgraph": ("1.2", "1.3"), "langgraph-checkpoint-sqlite": ("3.1.2", "4"),
          "langgraph-checkpoint-postgres": ("3.2", "4")}
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


Statement = tuple[str, Any, bool]
"""A captured statement: its SQL, its parameters (a list of tuples when `many`), and `many`."""

_CAPTURE: ContextVar[list[Statement] | None] = ContextVar("hitl_pg_capture", default=None)


class _Recorder:
    """Stands in for the cursor `PostgresSaver._cursor` yields: keeps what would be sent."""

    def __init__(self, out: list[Statement]) -> None:
        self.out = out

    def execute(self, query: Any, params: Any = None, **_: Any) -> _Recorder:
        self.out.append((query, params, False))
        return self

    def executemany(self, query: Any, params_seq: Any, **_: Any) -> None:
        self.out.append((query, list(params_seq), True))


class StatementCapture:
    """Mix in before `PostgresSaver`: its statements go to the list `capturing` gives, if any."""

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Any]:
        out = _CAPTURE.get()
        if out is None:
            with super()._cursor(pipeline=pipeline) as cur:  # type: ignore[misc]  # the saver's own
                yield cur
        else:
            yield _Recorder(out)


@contextmanager
def capturing(out: list[Statement]) -> Iterator[None]:
    """Within the block (this thread or task), a `StatementCapture` saver's writes land in `out`."""
    token = _CAPTURE.set(out)
    try:
        yield
    finally:
        _CAPTURE.reset(token)

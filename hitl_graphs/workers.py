"""LangGraph's worker threads, kept from one run to the next.

Every sync `invoke` makes LangGraph start a fresh thread pool (`BackgroundExecutor`, one per run)
and, on its first background task, a fresh thread: the checkpoint written when a run stops, a
node run beside another, a checkpoint per step under `durability="async"`. Starting and joining
those threads costs about 0.15 ms a thread, plus the hand-off of the interpreter lock between the
new thread and the caller: per pause+resume cycle, about as much as all of the ledger's work
(`make bench`: `ours_normal_fresh_threads`).

The runner hands LangGraph a pool that lives as long as the runner, one per calling thread, for
its own top-level runs only:

- The pool rides in the run's config as a one-shot `Lease`. The first pool LangGraph asks for in
  the run (the top-level loop's, asked for before any node runs) takes it; every pool asked for
  after (a subgraph's loop, which copies the parent's config) gets LangGraph's usual fresh one.
  So only the runner's own loop shares threads, and a node that waits on its subgraph's tasks
  never waits behind its own pool.
- One pool per calling thread: two threads running graphs through one runner get two pools, as
  they would from LangGraph, so neither queues behind the other. A forked child never uses its
  parent's pools (their threads did not survive the fork); it gets LangGraph's own.
- LangGraph still waits for its own tasks on exit and raises their errors; only the pool's
  shutdown is skipped. `Runner.close` shuts the pools down.
- A run whose checkpoints wait for the ledger's commit (`DEFER_KEY`, see `hitl_graphs.storage.sqlite.saver`)
  saves them in the calling thread: such a save only appends rows to memory, so handing it to
  another thread and waiting for it costs more than doing it. Nodes still run on the pool.

This replaces one function of a private LangGraph module, through `hitl_graphs._langgraph_compat`
(the one place that touches LangGraph's private names), which is why it is guarded: if LangGraph
no longer has it, or no longer calls it (`install` runs a one-node graph to see), `install`
returns False and runs keep LangGraph's own pools (slower, not wrong).
`tests/test_langgraph_compat.py` fails if that happens, so an upgrade that breaks it shows. Pass
`Runner(reuse_threads=False)` to opt out.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from langchain_core.runnables.config import ContextThreadPoolExecutor
from langgraph.checkpoint.base import BaseCheckpointSaver

from hitl_graphs import _langgraph_compat as compat

LEASE_KEY = "__hitl_workers"
"""In a run's `configurable`: a `Lease` on the pool the run's top-level loop uses."""

_installed = False
_install_lock = threading.Lock()


class Lease:
    """A pool that the first taker gets, and nobody after it."""

    __slots__ = ("_pool",)

    def __init__(self, pool: Executor) -> None:
        self._pool: Executor | None = pool

    def take(self) -> Executor | None:
        pool, self._pool = self._pool, None
        return pool


class Pools:
    """One long-lived pool per calling thread; `close` shuts them all down."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._all: list[ContextThreadPoolExecutor] = []
        self._lock = threading.Lock()
        self._closed = False
        self._pid = os.getpid()

    def lease(self, *, saves_inline: bool = False) -> Lease | None:
        """A lease on this thread's pool, or None once closed (runs then use LangGraph's own).

        `saves_inline`: the run's checkpoint saves only append to memory; run them in the caller.
        """
        if self._closed or os.getpid() != self._pid:  # a forked child: the threads stayed in the parent
            return None
        pool: ContextThreadPoolExecutor | None = getattr(self._local, "pool", None)
        if pool is None:
            with self._lock:
                if self._closed:
                    return None
                pool = ContextThreadPoolExecutor(thread_name_prefix="hitl-langgraph")
                self._all.append(pool)
            self._local.pool = pool
        return Lease(_SavesInline(pool) if saves_inline else pool)

    def close(self) -> None:
        with self._lock:
            self._closed, pools, self._all = True, self._all, []
        for pool in pools:
            pool.shutdown(wait=True)


class _SavesInline(Executor):
    """The pool, except for checkpoint saves, which run in the calling thread."""

    def __init__(self, pool: Executor) -> None:
        self._pool = pool

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        # LangGraph submits `Context.run(task, ...)`, the task being the first argument
        if not (args and _is_context_run(fn) and _is_save(args[0])):
            return self._pool.submit(fn, *args, **kwargs)
        done: Future[Any] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - handed to LangGraph through the future, as the pool does
            done.set_exception(exc)
        return done


def _is_context_run(fn: Any) -> bool:
    return isinstance(getattr(fn, "__self__", None), contextvars.Context) and getattr(fn, "__name__", "") == "run"


def _is_save(task: Any) -> bool:
    """A checkpointer method, or the loop's "save after the previous save" step."""
    return isinstance(getattr(task, "__self__", None), BaseCheckpointSaver) or compat.is_loop_save(task)


def install() -> bool:
    """Let LangGraph's loops take a leased pool; True if LangGraph has the hook to replace.

    Idempotent. Runs whose config holds no lease (anything not started by a runner) get exactly
    what LangGraph would have given them.
    """
    global _installed, _replaced
    with _install_lock:
        if _installed:
            return True
        if not _replaced:
            if not compat.replace_executor_factory(_leasing):
                return False
            _replaced = True
        # the attribute may exist and no longer be called: prove LangGraph asks for it
        _installed = compat.factory_is_called("__hitl_probe")
        return _installed


_replaced = False
_probes: list[tuple[str, list[bool]]] = []


@contextmanager
def probing(key: str, seen: list[bool]) -> Iterator[None]:
    """While open, a run whose config holds `key` makes the replaced factory append to `seen`."""
    entry = (key, seen)
    _probes.append(entry)
    try:
        yield
    finally:
        _probes.remove(entry)


def _leasing(original: Callable[[Any], AbstractContextManager[Executor]]) -> Callable[[Any], AbstractContextManager[Executor]]:
    @contextmanager
    def get_executor_for_config(config: Any) -> Iterator[Executor]:
        config = config or {}
        configurable = config.get("configurable") or {}
        for key, seen in _probes:
            if key in configurable:
                seen.append(True)
        lease = configurable.get(LEASE_KEY)
        pool = lease.take() if isinstance(lease, Lease) else None
        if config.get("max_concurrency"):  # a pool sized for this run: LangGraph's own
            pool = None
        if pool is None:
            with original(config) as executor:
                yield executor
        else:
            yield pool  # not shut down here: it outlives the run

    get_executor_for_config.__wrapped__ = original  # type: ignore[attr-defined]
    return get_executor_for_config

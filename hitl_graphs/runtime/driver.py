"""The effect vocabulary of the flows and its two drivers.

Every operation of the runner is written once, as a generator that yields the I/O it needs (run
the graph, read a checkpoint, call the ledger): `Invoke`, `GetState`, `UpdateState`, `Call` (built
with the typed `call`), `Sleep`. `drive` runs a flow with `invoke` and plain calls; `adrive` with
`ainvoke` and worker threads. Only the I/O differs (httpx's auth flows serve both clients the same way).
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.types import Durability

from hitl_graphs.storage.base import DEFER_KEY
from hitl_graphs.workers import LEASE_KEY, Pools

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")
Graph = CompiledStateGraph[Any, Any, Any, Any]


@dataclass(frozen=True, slots=True)
class Invoke:
    graph: Graph
    input: Any
    config: RunnableConfig
    durability: Durability
    workers: Pools | None = None
    """Threads kept across runs for LangGraph's loop (sync runs only; see `hitl_graphs.workers`)."""


@dataclass(frozen=True, slots=True)
class GetState:
    graph: Graph
    config: RunnableConfig


@dataclass(frozen=True, slots=True)
class UpdateState:
    graph: Graph
    config: RunnableConfig
    values: Any
    as_node: str | None


@dataclass(frozen=True, slots=True)
class Call:
    """A ledger call: plain SQLite, run on a worker thread by the async driver. Flows build it
    with `call`, which keeps the arguments' and the result's types checked."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


Effect = Invoke | GetState | UpdateState | Call | Sleep


class StreamClosed(Exception):
    """Thrown into a flow at its `Invoke` when the caller stopped reading a stream of the run
    (`hitl_graphs.runtime.streaming`): the run stopped mid-way, and the flow settles it as such."""


Flow = Generator[Effect, Any, T]


def call(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> Flow[R]:
    """In a flow: `row = yield from call(ledger.thread, thread_id)`: `fn(*args, **kwargs)`, run by
    the driver (inline when sync, on a worker thread when async), with its types checked."""
    result: R = yield Call(fn, args, kwargs)
    return result


_ASYNC_ONLY: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = weakref.WeakKeyDictionary()


sync_drive = threading.local()  # .in_loop: a sync method was called inside a running event loop


def async_only(graph: Any) -> tuple[str, ...]:
    """Nodes (and routing functions) of `graph` written only as `async def`; usually none.

    LangGraph's sync `invoke` refuses such a graph ("No synchronous function provided"), so the
    sync driver runs it with `ainvoke` on an event loop of its own. Worked out once per compiled
    graph (subgraphs included), so a sync graph's run pays one dictionary lookup."""
    try:
        return _ASYNC_ONLY[graph]
    except KeyError:
        pass
    names = [name for name, node in graph.nodes.items() if _needs_async(node.bound)]
    for branches in getattr(getattr(graph, "builder", None), "branches", {}).values():
        names += [name for name, branch in branches.items() if _needs_async(branch.path)]
    _ASYNC_ONLY[graph] = found = tuple(names)
    return found


def _needs_async(runnable: Any) -> bool:
    if isinstance(runnable, Pregel):  # a subgraph as a node
        return bool(async_only(runnable))
    if getattr(runnable, "afunc", None) is not None and getattr(runnable, "func", None) is None:
        return True  # LangGraph's RunnableCallable, LangChain's RunnableLambda, built from a coroutine function
    return any(_needs_async(step) for step in getattr(runnable, "steps", ()))


def run_sync(effect: Effect) -> Any:
    match effect:
        case Invoke(graph, input, config, durability, _) if async_only(graph):
            # no loop runs in this thread: `Runner.graph` refused the call otherwise
            return asyncio.run(graph.ainvoke(input, config, durability=durability))
        case Invoke(graph, input, config, durability, workers):
            configurable = config.get("configurable", {})
            lease = workers.lease(saves_inline=bool(configurable.get(DEFER_KEY))) if workers is not None else None
            if lease is not None:
                config = {**config, "configurable": {**configurable, LEASE_KEY: lease}}
            return graph.invoke(input, config, durability=durability)
        case GetState(graph, config):
            return graph.get_state(config)
        case UpdateState(graph, config, values, as_node):
            return graph.update_state(config, values, as_node=as_node)
        case Call(fn, args, kwargs):
            return fn(*args, **(kwargs or {}))
        case Sleep(seconds):
            time.sleep(seconds)


def drive(flow: Flow[T]) -> T:
    if asyncio._get_running_loop() is not None and not getattr(sync_drive, "in_loop", False):
        sync_drive.in_loop = True  # a sync method called from a coroutine: see `Runner.graph`
        try:
            return drive(flow)
        finally:
            sync_drive.in_loop = False
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        try:
            send = run_sync(effect)
        except Exception as exc:  # handed back to the flow, which decides
            error = exc


async def run_async(effect: Effect) -> Any:
    match effect:
        case Invoke(graph, input, config, durability, _):
            return await graph.ainvoke(input, config, durability=durability)
        case GetState(graph, config):
            return await graph.aget_state(config)
        case UpdateState(graph, config, values, as_node):
            return await graph.aupdate_state(config, values, as_node=as_node)
        case Call(fn, args, kwargs):
            return await asyncio.to_thread(fn, *args, **(kwargs or {}))
        case Sleep(seconds):
            await asyncio.sleep(seconds)


async def adrive(flow: Flow[T]) -> T:
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        try:
            send = await run_async(effect)
        except Exception as exc:
            error = exc


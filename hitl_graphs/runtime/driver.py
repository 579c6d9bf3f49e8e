"""The effect vocabulary of the flows and its two drivers.

Every operation of the runner is written once, as a generator that yields the I/O it needs (run
the graph, read a checkpoint, call the ledger): `Invoke`, `GetState`, `GetTuple`, `UpdateState`, `Call` (built
with the typed `call`), `Sleep`. `drive` runs a flow with `invoke` and plain calls; `adrive` with
`ainvoke` and worker threads. Only the I/O differs (httpx's auth flows serve both clients the same way).

**Hops.** The ledger and the saver are plain (blocking) SQLite or psycopg, so the async driver must
not run them on the event loop; but each hand-off to a worker thread and back costs a wake-up of
the loop and of the thread, and the interpreter lock passed between them (on a busy machine up to
a thread switch interval, 5 ms). So `adrive` does not hop once per effect: it hands the flow
itself to a worker thread, which runs the flow's Python and every effect that blocks (ledger
calls, checkpoint reads and updates, and the run of a graph whose nodes are all plain functions,
which LangGraph's `ainvoke` would send to threads one node at a time anyway) until the flow ends
or reaches an effect that needs the loop: a `Sleep`, or the run of a graph with `async def` nodes
(`ainvoke`, on the caller's loop, so those nodes share it). A `resume` of a template is then one
hop instead of a dozen; only one thread advances a flow at any time.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
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
class GetTuple:
    """One checkpoint as the saver stores it (`CheckpointTuple`: its channel versions, what each node
    has seen, its parent), for what a `StateSnapshot` does not carry."""

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


Effect = Invoke | GetState | GetTuple | UpdateState | Call | Sleep


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


_SYNC_ONLY: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def sync_only(graph: Any) -> bool:
    """Whether every node and routing function of `graph` (subgraphs included) is a plain function.

    Such a graph runs the same with `invoke` as with `ainvoke`, where LangGraph would run each
    node on a worker thread anyway; so the async driver runs it with `invoke` on the worker thread
    that already runs the flow. Anything else (an `async def` node, a LangChain runnable with
    async I/O of its own, such as a chat model) keeps `ainvoke` on the caller's loop. Worked out
    once per compiled graph."""
    try:
        return _SYNC_ONLY[graph]
    except KeyError:
        pass
    runnables = [node.bound for node in graph.nodes.values()]
    for branches in getattr(getattr(graph, "builder", None), "branches", {}).values():
        runnables += [branch.path for branch in branches.values()]
    _SYNC_ONLY[graph] = found = all(_plain_function(r) for r in runnables)
    return found


def _plain_function(runnable: Any) -> bool:
    if isinstance(runnable, Pregel):
        return sync_only(runnable)
    func, afunc = getattr(runnable, "func", None), getattr(runnable, "afunc", None)
    # LangGraph's RunnableCallable of a plain function: no async twin, or the function itself sent
    # to an executor (`functools.wraps(func)(partial(run_in_executor, None, func))`); anything it
    # does not recognise counts as async, which is always correct, only slower
    return func is not None and (afunc is None or getattr(afunc, "__wrapped__", None) is func)


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
        case GetTuple(graph, config):
            return _saver(graph).get_tuple(config)
        case UpdateState(graph, config, values, as_node):
            return graph.update_state(config, values, as_node=as_node)
        case Call(fn, args, kwargs):
            return fn(*args, **(kwargs or {}))
        case Sleep(seconds):
            time.sleep(seconds)


def _saver(graph: Graph) -> BaseCheckpointSaver[Any]:
    saver = graph.checkpointer
    if not isinstance(saver, BaseCheckpointSaver):
        raise TypeError("reading a checkpoint needs a graph bound to a saver (`Runner.graph` binds one)")
    return saver


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
        case GetTuple(graph, config):
            return await _saver(graph).aget_tuple(config)
        case UpdateState(graph, config, values, as_node):
            return await graph.aupdate_state(config, values, as_node=as_node)
        case Call(fn, args, kwargs):
            return await asyncio.to_thread(fn, *args, **(kwargs or {}))
        case Sleep(seconds):
            await asyncio.sleep(seconds)


def blocks(effect: Effect) -> bool:
    """Whether the async driver runs `effect` with the sync I/O on a worker thread (see "Hops")."""
    match effect:
        case Call() | GetState() | GetTuple() | UpdateState():
            return True
        case Invoke(graph=graph):
            return sync_only(graph)
        case _:
            return False


def _run_blocking(flow: Flow[T], effect: Effect) -> tuple[bool, Any]:
    """On a worker thread: run `effect`, then the flow on, through every effect that `blocks`.

    Returns `(True, result)` when the flow ended, `(False, effect)` at an effect for the loop."""
    while True:
        send: Any = None
        error: BaseException | None = None
        try:
            send = run_sync(effect)
        except Exception as exc:  # handed back to the flow, which decides
            error = exc
        try:
            effect = flow.throw(error) if error is not None else flow.send(send)
        except StopIteration as stop:
            return True, stop.value
        if not blocks(effect):
            return False, effect


async def adrive(flow: Flow[T]) -> T:
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        if blocks(effect):
            ended, after = await asyncio.to_thread(_run_blocking, flow, effect)
            if ended:
                return cast(T, after)
            effect = after
        try:
            send = await run_async(effect)
        except Exception as exc:
            error = exc


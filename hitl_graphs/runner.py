"""The runner: start, list, show, resume, cancel and recover threads, sync and async.

Every operation is written once, as a generator that yields the I/O it needs (run the graph,
read a checkpoint, touch the ledger). `Runner` drives it with `invoke`; the async twins drive the
same generator with `ainvoke` and worker threads. Only the I/O differs.

What the runner adds to plain LangGraph, per operation:

- `start` refuses a thread id already used (LangGraph would append to it).
- `resume` refuses an unknown thread (LangGraph silently starts a new run), a thread with nothing
  pending (LangGraph silently does nothing), a review id that is not pending, a decision kind the
  review does not allow, and a patch that does not fit; all before writing anything. Then it
  claims the review in the ledger, so of two processes deciding at once exactly one goes on.
- A decision recorded by a process that died before applying it is applied by `recover()` with
  the recorded decision; nobody is asked again and a second decision is refused.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TextIO, TypeVar, assert_never

from langchain_core.runnables import RunnableConfig
from langgraph.constants import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, Durability, StateSnapshot

from hitl_graphs import audit
from hitl_graphs import feedback as feedback_mod
from hitl_graphs.audit import AuditHead, AuditReport
from hitl_graphs.decisions import (
    Approve,
    Decision,
    Escalate,
    Modify,
    Reject,
    Respond,
    decision_to_json,
    parse_decision,
)
from hitl_graphs.effects import CONFIG_KEY as EFFECTS_KEY
from hitl_graphs.effects import EffectLog
from hitl_graphs.errors import (
    AlreadyDecidedError,
    ConfigError,
    DecisionError,
    InvalidDecisionError,
    NoPendingReviewError,
    PermissionDeniedError,
    ReviewNotPendingError,
    StaleReviewError,
    ThreadBusyError,
    ThreadExistsError,
    UnknownThreadError,
    UnknownWorkflowError,
)
from hitl_graphs.feedback import Feedback, FeedbackClient
from hitl_graphs.gate import to_json
from hitl_graphs.ledger import (
    Event,
    Ledger,
    NewThread,
    ReviewRow,
    Synced,
    ThreadRow,
)
from hitl_graphs.patches import check_needs, state_fields, validate_patch, validate_payload_patch
from hitl_graphs.pauses import Pause, pause_from_output, read_pause
from hitl_graphs.registry import Workflow, get_workflow
from hitl_graphs.reviews import HistoryEntry, Outcome, ReviewRequest, ThreadView
from hitl_graphs.serde import GuardedSerializer, graph_types
from hitl_graphs.store import DEFER_KEY, SqliteStore
from hitl_graphs.workers import LEASE_KEY, Pools
from hitl_graphs.workers import install as install_workers

T = TypeVar("T")
log = logging.getLogger("hitl_graphs")
Graph = CompiledStateGraph[Any, Any, Any, Any]


# -- the I/O an operation asks for ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Invoke:
    graph: Graph
    input: Any
    config: RunnableConfig
    durability: Durability
    workers: Pools | None = None
    """Threads kept across runs for LangGraph's loop (sync runs only; see `hitl_graphs.workers`)."""


@dataclass(frozen=True, slots=True)
class _GetState:
    graph: Graph
    config: RunnableConfig


@dataclass(frozen=True, slots=True)
class _UpdateState:
    graph: Graph
    config: RunnableConfig
    values: Any
    as_node: str | None


@dataclass(frozen=True, slots=True)
class _Call:
    """A ledger call: plain SQLite, run on a worker thread by the async driver."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class _Sleep:
    seconds: float


_Effect = _Invoke | _GetState | _UpdateState | _Call | _Sleep
Flow = Generator[_Effect, Any, T]


_ASYNC_ONLY: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = weakref.WeakKeyDictionary()
_sync_drive = threading.local()  # .in_loop: a sync method was called inside a running event loop


def _async_only(graph: Any) -> tuple[str, ...]:
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
        return bool(_async_only(runnable))
    if getattr(runnable, "afunc", None) is not None and getattr(runnable, "func", None) is None:
        return True  # LangGraph's RunnableCallable, LangChain's RunnableLambda, built from a coroutine function
    return any(_needs_async(step) for step in getattr(runnable, "steps", ()))


def _run_sync(effect: _Effect) -> Any:
    match effect:
        case _Invoke(graph, input, config, durability, _) if _async_only(graph):
            # no loop runs in this thread: `Runner.graph` refused the call otherwise
            return asyncio.run(graph.ainvoke(input, config, durability=durability))
        case _Invoke(graph, input, config, durability, workers):
            configurable = config.get("configurable", {})
            lease = workers.lease(saves_inline=bool(configurable.get(DEFER_KEY))) if workers is not None else None
            if lease is not None:
                config = {**config, "configurable": {**configurable, LEASE_KEY: lease}}
            return graph.invoke(input, config, durability=durability)
        case _GetState(graph, config):
            return graph.get_state(config)
        case _UpdateState(graph, config, values, as_node):
            return graph.update_state(config, values, as_node=as_node)
        case _Call(fn, args, kwargs):
            return fn(*args, **(kwargs or {}))
        case _Sleep(seconds):
            time.sleep(seconds)


async def _run_async(effect: _Effect) -> Any:
    match effect:
        case _Invoke(graph, input, config, durability, _):
            return await graph.ainvoke(input, config, durability=durability)
        case _GetState(graph, config):
            return await graph.aget_state(config)
        case _UpdateState(graph, config, values, as_node):
            return await graph.aupdate_state(config, values, as_node=as_node)
        case _Call(fn, args, kwargs):
            return await asyncio.to_thread(fn, *args, **(kwargs or {}))
        case _Sleep(seconds):
            await asyncio.sleep(seconds)


def _drive(flow: Flow[T]) -> T:
    if asyncio._get_running_loop() is not None and not getattr(_sync_drive, "in_loop", False):
        _sync_drive.in_loop = True  # a sync method called from a coroutine: see `Runner.graph`
        try:
            return _drive(flow)
        finally:
            _sync_drive.in_loop = False
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        try:
            send = _run_sync(effect)
        except Exception as exc:  # handed back to the flow, which decides
            error = exc


async def _adrive(flow: Flow[T]) -> T:
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        try:
            send = await _run_async(effect)
        except Exception as exc:
            error = exc


# -- the runner ------------------------------------------------------------------------------


class Runner:
    """Run registered workflows on one database and answer their reviews.

    Args:
        store: The open database (see `Runner.open` for the usual way in).
        workflows: Workflows this runner knows; by default every registered one.
        lease: Seconds a run on another host is trusted before its thread counts as crashed.
        durability: LangGraph durability for the runs of workflows that do not declare one
            (`Workflow(durability=...)`); `None`: LangGraph's default, `"async"`. With `"exit"` a
            run writes one checkpoint, where it stops, committed together with the ledger's
            record of the pause (see `hitl_graphs.store`).
        on_review: Called once for every review the ledger records (a new pause), after it is
            committed: send a notification, post to a chat. Errors are logged, not raised.
        reuse_threads: Keep LangGraph's worker threads from one sync run to the next instead
            of starting new ones per `invoke` (see `hitl_graphs.workers`); `close` stops them.
        max_attempts: How many times `recover` runs a step that raised again (a service that did
            not answer), with the recorded decision, before leaving the thread failed for a
            person (`retry` then tries once more).

    Example:
        >>> from hitl_graphs.examples import email_workflow
        >>> with Runner.open(":memory:", workflows=[email_workflow()]) as runner:
        ...     view = runner.start("email", {"to": "ana@example.com", "topic": "lunch"})
        ...     view.status, view.reviews[0].kind
        ...     runner.resume(view.thread_id, Approve(actor="ana")).state["sent"]
        ('paused', 'gate')
        True
    """

    def __init__(
        self,
        store: SqliteStore,
        workflows: Iterable[Workflow] | None = None,
        *,
        lease: float = 600.0,
        durability: Durability | None = None,
        on_review: Callable[[ReviewRequest], None] | None = None,
        owns_store: bool = False,
        reuse_threads: bool = True,
        max_attempts: int = 3,
    ) -> None:
        self.store = store
        self.ledger = Ledger(store.conn, store.lock, store.marks)
        self.effects = EffectLog(store.conn, store.lock)
        self._workflows = {w.name: w for w in workflows} if workflows is not None else None
        self._graphs: dict[str, Graph] = {}
        self.lease = lease
        self.durability = durability
        self.on_review = on_review
        self._owns_store = owns_store
        self.max_attempts = max_attempts
        self._workers = Pools() if reuse_threads and install_workers() else None

    @classmethod
    def open(
        cls,
        path: str | None = None,
        workflows: Iterable[Workflow] | None = None,
        *,
        lease: float = 600.0,
        durability: Durability | None = None,
        on_review: Callable[[ReviewRequest], None] | None = None,
        reuse_threads: bool = True,
        max_attempts: int = 3,
    ) -> Runner:
        """Open (or create) the database at `path` and return a runner that closes it on exit.

        `path` defaults to `$HITL_DB`, else `checkpoints/hitl.sqlite`.
        """
        return cls(SqliteStore(path), workflows, lease=lease, durability=durability, on_review=on_review,
                   owns_store=True, reuse_threads=reuse_threads, max_attempts=max_attempts)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop the runner's worker threads, and close the database if this runner opened it."""
        if self._workers is not None:
            self._workers.close()
        if self._owns_store:
            self.store.close()

    # -- public API: sync ------------------------------------------------------------------

    def start(
        self, workflow: str, input: Mapping[str, Any] | None = None, *, thread_id: str | None = None, actor: str | None = None
    ) -> ThreadView:
        """Start a thread and run it to its first review or its end.

        `actor` is who asked for the run (reviews with separation of duties refuse their decision).

        Raises:
            UnknownWorkflowError: no such workflow.
            ThreadExistsError: `thread_id` is already used.
        """
        return _drive(self._start(workflow, input, thread_id, actor))

    def pending(
        self, *, workflow: str | None = None, roles: Sequence[str] | None = None, limit: int = 50, offset: int = 0
    ) -> list[ReviewRequest]:
        """Pending reviews across all threads, oldest first (reads the ledger's index).

        With `roles`, only what an actor holding those roles may decide.
        """
        return _drive(self._pending(workflow, roles, limit, offset))

    def show(self, thread_id: str) -> ThreadView:
        """A thread's status, pending reviews and current state.

        Raises:
            UnknownThreadError: no such thread.
        """
        return _drive(self._show(thread_id))

    def resume(
        self,
        thread_id: str,
        decision: Decision | Mapping[str, Any] | str,
        *,
        review_id: str | None = None,
        roles: Sequence[str] = (),
    ) -> ThreadView:
        """Answer a pending review and run the thread to its next review or its end.

        Args:
            thread_id: The paused thread.
            decision: `Approve`, `Modify`, `Reject`, ... (or its dict / JSON form); its `actor`
                is who decides.
            review_id: Which review, when several are pending (its id, a unique prefix, or its key).
            roles: The roles the actor holds (checked against the review's `required_role`). As
                given: verify the caller's identity before passing them.

        Raises:
            UnknownThreadError, NoPendingReviewError, ReviewNotPendingError, InvalidDecisionError,
            PatchError, PermissionDeniedError, StaleReviewError, ReviewExpiredError,
            AlreadyDecidedError, ThreadBusyError: each before the thread changes (a refused
            decision is recorded in the audit log).
        """
        return _drive(self._resume(thread_id, decision, review_id, tuple(roles)))

    def cancel(self, thread_id: str, *, actor: str | None = None, reason: str | None = None) -> ThreadView:
        """End a thread without running anything more; its pending reviews become cancelled."""
        return _drive(self._cancel(thread_id, actor, reason))

    def history(self, thread_id: str) -> list[HistoryEntry]:
        """Every event of a thread: started, review requested, decided (who, what), applied, ended."""
        return _drive(self._history(thread_id))

    def recover(self) -> list[ThreadView]:
        """Finish what crashed processes and failed steps left: apply recorded decisions, continue
        stalled runs, run a step that raised again (up to `max_attempts` times per decision)."""
        return _drive(self._recover())

    def stranded(self) -> list[str]:
        """Threads holding a decision that no live process is applying (a crash or a failed step
        left it; `recover` applies it)."""
        ids = self.ledger.threads_with_decided_reviews()
        rows = [self.ledger.thread(t) for t in ids]
        return [row.thread_id for row in rows if row is not None and not self.ledger.alive(row)]

    def retry(self, thread_id: str, *, actor: str | None = None) -> ThreadView:
        """Run a failed thread's failed step again, also after `recover` gave up on it.

        Raises:
            UnknownThreadError: no such thread.
            NoPendingReviewError: the thread has not failed.
            ThreadBusyError: a live process runs it.
        """
        return _drive(self._retry(thread_id, actor))

    def sweep(self) -> list[ThreadView]:
        """Resolve every review whose deadline has passed with its default decision.

        Safe to run from any number of processes at once (each review is claimed once); run it
        periodically: `hitl sweep --every 30`, cron, or a systemd timer. A review a person
        decided first is left alone; the audit log says who won (`by`: `person` or `deadline`).
        """
        return _drive(self._sweep())

    def wait_for_decision(self, thread_id: str, *, review_id: str | None = None, timeout: float, poll: float = 0.2) -> ThreadView:
        """Wait until someone (any process) decides the pending review; after `timeout` seconds
        apply its default decision (a reject unless the review set one) and return the thread."""
        return _drive(self._wait(thread_id, review_id, timeout, poll))

    def feedback(
        self, thread_id: str, score: float, *, comment: str | None = None, actor: str | None = None, key: str = "helpfulness"
    ) -> Feedback:
        """Rate a finished thread's output (0 to 1); stored locally, listed by `feedback_list`."""
        row = self.ledger.thread(thread_id)
        if row is None:
            raise UnknownThreadError(f"thread {thread_id!r} does not exist")
        if row.status != "done":
            raise NoPendingReviewError(f"thread {thread_id!r} has not finished (status {row.status}); rate it once it has")
        fb = Feedback(thread_id=thread_id, workflow=row.workflow, score=score, comment=comment, actor=actor, key=key,
                      at=feedback_mod.now())
        feedback_mod.record(self.store.conn, self.store.lock, fb)
        self.ledger.add_events(thread_id, [Event("feedback", actor=actor, data={"key": key, "score": score, "comment": comment})])
        return fb

    def feedback_list(self, *, workflow: str | None = None) -> list[Feedback]:
        """Ratings, oldest first, optionally of one workflow."""
        return [fb for _, fb in feedback_mod.listing(self.store.conn, self.store.lock, workflow=workflow)]

    def export_feedback(self, client: FeedbackClient, *, run_id_for: Callable[[Feedback], Any]) -> int:
        """Send ratings not yet exported to `client` (e.g. `langsmith.Client()`); opt-in only."""
        return feedback_mod.export_feedback(self.store.conn, self.store.lock, client, run_id_for=run_id_for)

    def audit_verify(self, *, expect_head: Sequence[AuditHead | str] = ()) -> AuditReport:
        """Check the audit log: its hash chain (keyed with the store's `audit_key`, if any), its
        head, the ledger's decisions against it, and heads kept elsewhere (`expect_head`, each an
        `AuditHead` or the `SEQ:HASH` text `audit_head()` gave). Names the first problem.

        Raises:
            ConfigError: an `expect_head` text is not `SEQ:HASH`.
        """
        try:
            heads = [h if isinstance(h, AuditHead) else AuditHead.parse(h) for h in expect_head]
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        return audit.verify(self.store.conn, self.store.lock, key=self.store.audit_key, expect_heads=heads)

    def audit_head(self) -> AuditHead:
        """The audit log's last entry (`str()` of it is `SEQ:HASH`): keep it where the database's
        writers cannot write, and pass it to `audit_verify(expect_head=...)` later."""
        return audit.head(self.store.conn, self.store.lock)

    def audit_export(self, out: TextIO, *, thread_id: str | None = None) -> int:
        """Write the audit log (or one thread's part) as JSON Lines; returns the entry count."""
        return audit.export(self.store.conn, self.store.lock, out, thread_id=thread_id)

    # -- public API: async -----------------------------------------------------------------

    async def astart(
        self, workflow: str, input: Mapping[str, Any] | None = None, *, thread_id: str | None = None, actor: str | None = None
    ) -> ThreadView:
        """Async `start`."""
        return await _adrive(self._start(workflow, input, thread_id, actor))

    async def apending(
        self, *, workflow: str | None = None, roles: Sequence[str] | None = None, limit: int = 50, offset: int = 0
    ) -> list[ReviewRequest]:
        """Async `pending`."""
        return await _adrive(self._pending(workflow, roles, limit, offset))

    async def ashow(self, thread_id: str) -> ThreadView:
        """Async `show`."""
        return await _adrive(self._show(thread_id))

    async def aresume(
        self,
        thread_id: str,
        decision: Decision | Mapping[str, Any] | str,
        *,
        review_id: str | None = None,
        roles: Sequence[str] = (),
    ) -> ThreadView:
        """Async `resume`."""
        return await _adrive(self._resume(thread_id, decision, review_id, tuple(roles)))

    async def asweep(self) -> list[ThreadView]:
        """Async `sweep`."""
        return await _adrive(self._sweep())

    async def await_decision(self, thread_id: str, *, review_id: str | None = None, timeout: float, poll: float = 0.2) -> ThreadView:
        """Async `wait_for_decision`: the seed's `asyncio.wait_for(user_input(), timeout)`, durable."""
        return await _adrive(self._wait(thread_id, review_id, timeout, poll))

    async def acancel(self, thread_id: str, *, actor: str | None = None, reason: str | None = None) -> ThreadView:
        """Async `cancel`."""
        return await _adrive(self._cancel(thread_id, actor, reason))

    async def ahistory(self, thread_id: str) -> list[HistoryEntry]:
        """Async `history`."""
        return await _adrive(self._history(thread_id))

    async def arecover(self) -> list[ThreadView]:
        """Async `recover`."""
        return await _adrive(self._recover())

    async def aretry(self, thread_id: str, *, actor: str | None = None) -> ThreadView:
        """Async `retry`."""
        return await _adrive(self._retry(thread_id, actor))

    # -- workflows -------------------------------------------------------------------------

    def workflow(self, name: str) -> Workflow:
        """The workflow called `name` that this runner knows."""
        if self._workflows is None:
            return get_workflow(name)
        try:
            return self._workflows[name]
        except KeyError:
            known = ", ".join(sorted(self._workflows)) or "none"
            raise UnknownWorkflowError(f"no workflow named {name!r}; this runner knows: {known}") from None

    def graph(self, name: str) -> Graph:
        """The workflow's graph compiled on this runner's checkpointer (built once)."""
        if name not in self._graphs:
            wf = self.workflow(name)
            graph = wf.compile(self.store.saver)
            serde = self.store.saver.serde
            if isinstance(serde, GuardedSerializer):  # the types this graph's state may hold may load
                serde.allow(graph_types(graph) | set(wf.serde_types))
            self._graphs[name] = graph
        graph = self._graphs[name]
        if getattr(_sync_drive, "in_loop", False) and _async_only(graph):
            # refused before the flow writes anything; asyncio.run cannot nest in a running loop
            raise ConfigError(
                f"workflow {name!r} has async-only nodes ({', '.join(_async_only(graph))}), which a sync Runner "
                "method cannot run inside a running event loop; use its async twin (`await runner.astart(...)`, "
                "`aresume`, `acancel`, `arecover`, ...)"
            )
        return graph

    def _knows(self, name: str) -> bool:
        try:
            self.workflow(name)
        except UnknownWorkflowError:
            return False
        return True

    # -- flows -----------------------------------------------------------------------------

    def _start(self, name: str, input: Mapping[str, Any] | None, thread_id: str | None, actor: str | None) -> Flow[ThreadView]:
        wf = self.workflow(name)
        graph = self.graph(name)
        data = dict(input if input is not None else (wf.example_input or {}))
        new = NewThread(name, actor, {"input": to_json(data)})
        if thread_id is None and self._durability(wf, graph) == "exit":
            # nobody knows this id before the run returns and the run writes nothing before it
            # stops: the thread's start is recorded with its first pause, in one transaction
            return (yield from self._run(wf, graph, uuid.uuid4().hex, data, outcome_if_done="completed", new=new))
        if thread_id is not None:  # an id given may already be used outside the runner
            existing: str | None = yield _Call(self.store.saver.latest_checkpoint_id, (thread_id,))
            if existing is not None:
                raise ThreadExistsError(f"thread {thread_id!r} already has checkpoints; resume it or start with another id")
        thread_id = thread_id or uuid.uuid4().hex
        with self.store.marks.hold() as owner:
            yield _Call(self.ledger.create_thread, (thread_id, name),
                        {"owner": owner, "lease_until": time.time() + self.lease, "data": new.data, "actor": actor})
            return (yield from self._run(wf, graph, thread_id, data, outcome_if_done="completed"))

    def _pending(self, workflow: str | None, roles: Sequence[str] | None, limit: int, offset: int) -> Flow[list[ReviewRequest]]:
        yield from self._reconcile_stale()
        reviews: list[ReviewRequest] = yield _Call(
            self.ledger.pending, (), {"workflow": workflow, "roles": roles, "limit": limit, "offset": offset}
        )
        return reviews

    def _show(self, thread_id: str) -> Flow[ThreadView]:
        row = yield from self._thread(thread_id)
        return (yield from self._view(row))

    def _history(self, thread_id: str) -> Flow[list[HistoryEntry]]:
        yield from self._thread(thread_id)
        entries: list[HistoryEntry] = yield _Call(self.ledger.history, (thread_id,))
        return entries

    def _resume(
        self, thread_id: str, raw: Decision | Mapping[str, Any] | str, review_id: str | None, roles: tuple[str, ...]
    ) -> Flow[ThreadView]:
        asked_at = time.time()
        decision = parse_decision(raw)
        row = yield from self._thread(thread_id)
        try:
            return (yield from self._decide(row, decision, review_id, roles, asked_at))
        except (DecisionError, NoPendingReviewError, ThreadBusyError) as exc:
            refused = Event("refused", review_id, decision.actor, {"kind": decision.kind, "error": str(exc)})
            yield _Call(self.ledger.add_events, (thread_id, [refused]))
            raise

    def _decide(
        self, row: ThreadRow, decision: Decision, review_id: str | None, roles: tuple[str, ...], asked_at: float
    ) -> Flow[ThreadView]:
        thread_id = row.thread_id
        wf = self.workflow(row.workflow)
        graph = self.graph(row.workflow)
        if self.ledger.alive(row):  # what is pending is about to change: the person has not seen it
            decided = yield _Call(self.ledger.reviews, (thread_id, ("decided",)))
            if not decided:
                raise ThreadBusyError(f"thread {thread_id!r} is being run by another process ({row.owner}); "
                                      f"look again once it pauses (`hitl show {thread_id}`)")
        pending: list[ReviewRow] = yield _Call(self.ledger.reviews, (thread_id, ("pending",)))
        if not pending:
            yield from self._explain_nothing_pending(row, review_id)
        review = yield from self._pick(row, pending, review_id)
        if review_id is None and review.request.created_at.timestamp() > asked_at:
            # the thread moved on between the call and our read: this is not what the caller saw
            raise StaleReviewError(
                f"thread {thread_id!r} paused again at review {review.review_id!r} after this decision was asked "
                f"for; nothing was decided: look at it (`hitl show {thread_id}`) and pass review_id"
            )
        clean = _check(decision, review.request, graph, roles=roles, started_by=row.started_by)
        values: Any = None
        latest: str | None = yield _Call(self.store.saver.latest_checkpoint_id, (thread_id,))
        state_patch = isinstance(clean, Modify) and review.request.patch_target == "state"
        if latest is None or latest != review.checkpoint_id or state_patch:
            # the checkpoint moved since the ledger recorded the review (or we need its values):
            # read it, and make sure the review still waits there, showing the same payload
            values = yield from self._check_still_pending(wf, graph, row, review)
        if isinstance(clean, Modify):  # what the node needs of the patch, before anything is recorded
            check_needs(clean.patch, review.request, graph=graph, model=wf.patch_model, values=values)
        with self.store.marks.hold() as owner:
            yield _Call(self.ledger.claim, (thread_id, review.review_id, decision_to_json(clean)),
                        {"owner": owner, "lease_until": time.time() + self.lease,
                         "record": _replaced(clean, review.request, values)})
            return (yield from self._apply(wf, graph, thread_id, review, clean))

    def _check_still_pending(self, wf: Workflow, graph: Graph, row: ThreadRow, review: ReviewRow) -> Flow[Any]:
        thread_id = row.thread_id
        pause = yield from self._read(wf, graph, thread_id)
        current = {r.review_id: r for r in pause.reviews}.get(review.review_id)
        if current is None:
            # decided by a racing process since we read the ledger, or answered outside the runner
            yield from self._refuse_decided(row, review.review_id)
            now_row: ThreadRow | None = yield _Call(self.ledger.thread, (thread_id,))
            if now_row is not None and not self.ledger.alive(now_row):
                yield from self._sync(thread_id, pause, "completed", None)
            raise ReviewNotPendingError(
                f"review {review.review_id!r} is no longer pending on thread {thread_id!r}: the thread moved on "
                "outside this runner; `hitl show` has its current reviews"
            )
        if current.payload_hash != review.request.payload_hash:
            raise StaleReviewError(
                f"what review {review.review_id!r} shows has changed since it was listed; look again (`hitl show {thread_id}`)"
            )
        return pause.values

    def _sweep(self) -> Flow[list[ThreadView]]:
        due: list[ReviewRow] = yield _Call(self.ledger.due, (time.time(),))
        views: list[ThreadView] = []
        for review in due:
            view = yield from self._default(review, "hitl:deadline", by_deadline=True)
            if view is not None:
                views.append(view)
        return views

    def _default(self, review: ReviewRow, actor: str, *, by_deadline: bool) -> Flow[ThreadView | None]:
        """Claim and apply a review's default decision; None if a person (or another sweeper) won."""
        request = review.request
        if not self._knows(request.workflow):
            return None
        default = request.default_decision or {"kind": "reject", "reason": "no decision in time"}
        decision = parse_decision({**default, "actor": actor})
        with self.store.marks.hold() as owner:
            try:
                yield _Call(self.ledger.claim, (request.thread_id, review.review_id, decision_to_json(decision)),
                            {"owner": owner, "lease_until": time.time() + self.lease, "by_deadline": by_deadline})
            except (AlreadyDecidedError, ReviewNotPendingError, ThreadBusyError):
                return None
            wf, graph = self.workflow(request.workflow), self.graph(request.workflow)
            try:
                return (yield from self._apply(wf, graph, request.thread_id, review, decision))
            except Exception:  # the thread is marked failed; one bad graph must not stop the sweep
                log.exception("applying the default decision of review %s failed", review.review_id)
                return None

    def _wait(self, thread_id: str, review_id: str | None, timeout: float, poll: float) -> Flow[ThreadView]:
        row = yield from self._thread(thread_id)
        end = time.monotonic() + timeout
        pending: list[ReviewRow] = yield _Call(self.ledger.reviews, (thread_id, ("pending",)))
        try:
            if not pending:
                yield from self._explain_nothing_pending(row, review_id)
            review = yield from self._pick(row, pending, review_id)
        except AlreadyDecidedError:
            # decided just before we looked: what was waited for has happened; return where the
            # thread stands once the run that applies it has stopped
            while True:
                row = yield from self._thread(thread_id)
                if not self.ledger.alive(row) or time.monotonic() >= end:
                    return (yield from self._view(row))
                yield _Sleep(poll)
        while True:
            now: ReviewRow | None = yield _Call(self.ledger.review, (thread_id, review.review_id))
            row = yield from self._thread(thread_id)
            if now is not None and now.status != "pending" and row.status != "running":
                return (yield from self._view(row))
            if now is not None and now.status == "pending" and time.monotonic() >= end:
                expired = review.request.deadline is not None and review.request.deadline.timestamp() <= time.time()
                view = yield from self._default(now, "hitl:timeout", by_deadline=expired)
                if view is not None:
                    return view
            yield _Sleep(poll)

    def _cancel(self, thread_id: str, actor: str | None, reason: str | None) -> Flow[ThreadView]:
        row = yield from self._thread(thread_id)
        graph = self.graph(row.workflow)
        if row.status == "done":
            raise NoPendingReviewError(f"thread {thread_id!r} already ended ({row.outcome}); nothing to cancel")
        with self.store.marks.hold() as owner:
            # the status is read again under the write lock: a decision applied meanwhile wins
            yield _Call(self.ledger.take_thread, (thread_id,),
                        {"owner": owner, "lease_until": time.time() + self.lease, "expect": ("paused", "failed")})
            waiting: list[ReviewRow] = yield _Call(self.ledger.reviews, (thread_id, ("pending",)))
            yield _UpdateState(graph, _config(thread_id), None, END)
            where = [{"review_id": r.review_id, "node": r.request.node, "position": r.request.position} for r in waiting]
            yield _Call(self.ledger.add_events, (thread_id, [Event("cancel_requested", actor=actor,
                                                                   data={"reason": reason, "at": where})]))
            return (yield from self._settle(self.workflow(row.workflow), graph, thread_id, outcome_if_done="cancelled"))

    def _recover(self) -> Flow[list[ThreadView]]:
        reconciled = yield from self._reconcile_stale()
        views: list[ThreadView] = []
        decided: list[str] = yield _Call(self.ledger.threads_with_decided_reviews)
        failed: list[ThreadRow] = yield _Call(self.ledger.threads_in, ("failed",))
        for thread_id in [*decided, *(r.thread_id for r in failed if r.thread_id not in decided)]:
            try:
                view = yield from self._recover_one(thread_id)
            except Exception as exc:  # the thread is marked failed with its error; recover the others
                log.warning("recovering thread %s failed: %s: %s", thread_id, type(exc).__name__, exc)
                view = yield from self._show(thread_id)
            if view is not None:
                views.append(view)
        seen = {v.thread_id for v in views}  # a thread reconciled and then run on is listed once, as it ended
        return [v for v in reconciled if v.thread_id not in seen] + views

    def _refuse_unaudited(self, thread_id: str, review: ReviewRow, recorded: dict[str, Any] | None) -> Flow[ThreadView]:
        """A decision in the ledger that the audit log does not record is not applied: someone
        wrote it there directly. The thread is marked failed for a person to look at."""
        what = "has no audit record" if recorded is None else "differs from the one its audit record holds"
        message = (f"the decision of review {review.review_id!r} in the ledger {what}; it was not applied (the database "
                   "was edited?): check `hitl audit verify`, then `hitl cancel` the thread or decide it anew")
        yield _Call(self.ledger.fail_thread, (thread_id, message, [
            Event("refused_unaudited", review.review_id, data={"ledger": review.decision, "audit": recorded})]))
        return (yield from self._show(thread_id))

    def _retry(self, thread_id: str, actor: str | None) -> Flow[ThreadView]:
        row = yield from self._thread(thread_id)
        if self.ledger.alive(row):
            raise ThreadBusyError(f"thread {thread_id!r} is being run by another process ({row.owner}); retry once it stops")
        if row.status != "failed":
            raise NoPendingReviewError(f"thread {thread_id!r} has not failed (status {row.status}); nothing to retry")
        yield _Call(self.ledger.add_events, (thread_id, [Event("retry_requested", actor=actor)]))
        view = yield from self._recover_one(thread_id, forced=True)
        if view is None:
            raise ThreadBusyError(f"thread {thread_id!r} was taken by another process meanwhile; `hitl show` has its status")
        return view

    def _recover_one(self, thread_id: str, *, forced: bool = False) -> Flow[ThreadView | None]:
        """Finish one thread a crash or an error left: apply its recorded decision, continue a
        stalled run, run a step that raised again (at most `max_attempts` times unless `forced`),
        or run a start killed before its first checkpoint again from its input."""
        row: ThreadRow | None = yield _Call(self.ledger.thread, (thread_id,))
        if row is None or not self._knows(row.workflow) or self.ledger.alive(row):
            return None
        if row.status == "failed" and not forced:
            attempts: int = yield _Call(self.ledger.recover_attempts, (thread_id,))
            if attempts >= self.max_attempts:
                return None  # left for a person: `hitl show` says so, `hitl retry` tries again
        wf, graph = self.workflow(row.workflow), self.graph(row.workflow)
        with self.store.marks.hold() as owner:
            if not (yield from self._take(thread_id, owner)):
                return None  # another process is recovering it right now
            reviews: list[ReviewRow] = yield _Call(self.ledger.reviews, (thread_id, ("decided",)))
            review = reviews[0] if reviews else None
            pause = yield from self._read(wf, graph, thread_id)
            outcome = _outcome(review) if review is not None else "completed"
            about: dict[str, Any] = {}
            input: Any = None
            if review is not None and review.review_id in {r.review_id for r in pause.reviews}:
                about = {"apply": review.review_id}
            elif pause.stalled_at:
                about = {"stalled_at": list(pause.stalled_at)}
            elif pause.error:
                about = {"retry": pause.error}
            elif review is None and pause.checkpoint_id is None:
                input = yield _Call(self.ledger.started_input, (thread_id,))
                about = {"from": "input"}
            if "apply" in about and review is not None:
                recorded = yield _Call(audit.recorded_decision, (self.store.conn, self.store.lock, thread_id, review.review_id))
                if recorded is None or recorded != review.decision:
                    return (yield from self._refuse_unaudited(thread_id, review, recorded))
            if not about or (about.get("from") == "input" and input is None):
                # nothing to run: the graph took the decision before the crash, or there is
                # nothing to run again; only the ledger had not heard where the thread stands
                return (yield from self._settle(wf, graph, thread_id, outcome_if_done=outcome, pause=pause))
            yield _Call(self.ledger.add_events, (thread_id, [Event("recovering", review.review_id if review else None,
                                                                   data=about)]))
            if "apply" in about:
                assert review is not None
                return (yield from self._apply(wf, graph, thread_id, review, parse_decision(review.decision or {})))
            return (yield from self._run(wf, graph, thread_id, input, outcome_if_done=outcome))

    # -- flow pieces -----------------------------------------------------------------------

    def _take(self, thread_id: str, owner: str) -> Flow[bool]:
        """Hold a thread for this run; False if another live run holds it."""
        try:
            yield _Call(self.ledger.take_thread, (thread_id,), {"owner": owner, "lease_until": time.time() + self.lease})
        except ThreadBusyError:
            return False
        return True

    def _thread(self, thread_id: str) -> Flow[ThreadRow]:
        row: ThreadRow | None = yield _Call(self.ledger.thread, (thread_id,))
        if row is None:
            raise UnknownThreadError(
                f"thread {thread_id!r} does not exist; nothing was started (`hitl pending` lists paused threads)"
            )
        if row.status == "running" and not self.ledger.alive(row) and self._knows(row.workflow):
            yield from self._reconcile(row)
            row = yield _Call(self.ledger.thread, (thread_id,))
        assert row is not None
        return row

    def _pick(self, row: ThreadRow, pending: list[ReviewRow], review_id: str | None) -> Flow[ReviewRow]:
        if review_id is None:
            if len(pending) == 1:
                return pending[0]
            listing = "; ".join(f"{r.review_id} ({r.request.node})" for r in pending)
            raise ReviewNotPendingError(
                f"thread {row.thread_id!r} has {len(pending)} pending reviews; pass a review id: {listing}"
            )
        matches = [r for r in pending if review_id in (r.review_id, r.request.key)]
        if not matches:
            _check_prefix(review_id, row.thread_id)
            matches = [r for r in pending if r.review_id.startswith(review_id)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ReviewNotPendingError(f"review id prefix {review_id!r} matches {len(matches)} pending reviews; give more of it")
        yield from self._refuse_decided(row, review_id)
        listing = ", ".join(r.review_id for r in pending)
        raise ReviewNotPendingError(f"review {review_id!r} is not pending on thread {row.thread_id!r}; pending: {listing}")

    def _refuse_decided(self, row: ThreadRow, review_id: str) -> Flow[None]:
        _check_prefix(review_id, row.thread_id)
        others: list[ReviewRow] = yield _Call(self.ledger.reviews, (row.thread_id, ("decided", "applied", "cancelled", "superseded")))
        for r in others:
            if r.review_id == review_id or r.review_id.startswith(review_id):
                if r.status in ("cancelled", "superseded"):
                    raise ReviewNotPendingError(f"review {r.review_id!r} of thread {row.thread_id!r} was {r.status}")
                who = f" by {r.decision.get('actor')}" if r.decision and r.decision.get("actor") else ""
                kind = r.decision.get("kind") if r.decision else "?"
                raise AlreadyDecidedError(f"review {r.review_id!r} of thread {row.thread_id!r} was already decided ({kind}{who})")

    def _explain_nothing_pending(self, row: ThreadRow, review_id: str | None) -> Flow[None]:
        fresh: ThreadRow | None = yield _Call(self.ledger.thread, (row.thread_id,))  # a racer may have finished it
        row = fresh or row
        busy = self.ledger.alive(row)
        decided: list[ReviewRow] = yield _Call(self.ledger.reviews, (row.thread_id, ("decided",)))
        if decided:
            d = decided[0].decision or {}
            state = "is being applied by another process" if busy else "awaits recovery; run `hitl recover`"
            raise AlreadyDecidedError(
                f"thread {row.thread_id!r}: review {decided[0].review_id!r} was already decided ({d.get('kind')}"
                f"{' by ' + d['actor'] if d.get('actor') else ''}) and {state}"
            )
        if busy:
            raise ThreadBusyError(f"thread {row.thread_id!r} is being run by another process ({row.owner}); retry once it pauses")
        if review_id is not None:
            yield from self._refuse_decided(row, review_id)
        if row.status in ("done", "failed"):
            applied: list[ReviewRow] = yield _Call(self.ledger.reviews, (row.thread_id, ("applied",)))
            if applied:
                last = max(applied, key=lambda r: r.decided_at or 0.0)
                d = last.decision or {}
                ended = f"ended ({row.outcome})" if row.status == "done" else f"failed: {row.error}"
                raise AlreadyDecidedError(
                    f"thread {row.thread_id!r} has no pending review: its last review {last.review_id!r} was already "
                    f"decided ({d.get('kind')}{' by ' + d['actor'] if d.get('actor') else ''}) and the thread {ended}"
                )
        if row.status == "done":
            raise NoPendingReviewError(f"thread {row.thread_id!r} has no pending review; it ended ({row.outcome})")
        if row.status == "failed":
            raise NoPendingReviewError(f"thread {row.thread_id!r} has no pending review; it failed: {row.error}")
        if review_id is not None:
            raise ReviewNotPendingError(f"review {review_id!r} is not pending on thread {row.thread_id!r}; nothing is")
        raise NoPendingReviewError(f"thread {row.thread_id!r} has no pending review (status {row.status})")

    def _apply(self, wf: Workflow, graph: Graph, thread_id: str, review: ReviewRow, decision: Decision) -> Flow[ThreadView]:
        """Run the graph on with a claimed decision (also what `recover` does with a recorded one).

        The caller has checked that the review is still pending in the latest checkpoint.
        """
        config = _config(thread_id)
        request = review.request
        outcome: Outcome = "rejected" if isinstance(decision, Reject) else "completed"
        if request.source == "interrupt":
            patch = decision.patch if isinstance(decision, Modify) and request.patch_target == "state" else None
            return (yield from self._run(
                wf, graph, thread_id,
                Command(resume={review.review_id: decision_to_json(decision)}, update=patch),
                outcome_if_done=outcome,
            ))
        update: dict[str, Any]
        match decision:
            case Approve():
                update = dict(wf.on_approve)
            case Modify(patch=patch):
                update = {**wf.on_approve, **patch}
            case Reject(reason=reason):
                if wf.on_reject is None:
                    yield _UpdateState(graph, config, None, END)
                    return (yield from self._settle(wf, graph, thread_id, outcome_if_done="rejected"))
                update = dict(wf.on_reject)
                if wf.reason_field:
                    update[wf.reason_field] = reason
            case Respond() | Escalate():  # a breakpoint review allows approve, modify and reject only
                raise InvalidDecisionError(f"a static breakpoint cannot take {decision.kind!r}")
            case _:
                assert_never(decision)
        return (yield from self._run(wf, graph, thread_id, Command(update=update) if update else None, outcome_if_done=outcome))

    def _run(
        self, wf: Workflow, graph: Graph, thread_id: str, input: Any, *, outcome_if_done: Outcome, new: NewThread | None = None
    ) -> Flow[ThreadView]:
        """Invoke the graph, then make the ledger agree with where it stopped."""
        try:
            durability = self._durability(wf, graph)
            output = yield _Invoke(graph, input, _config(thread_id, self.effects, defer=durability == "exit"), durability,
                                   self._workers)
        except Exception as exc:
            yield from self._settle(wf, graph, thread_id, outcome_if_done=outcome_if_done, error=exc, new=new)
            raise
        pause = None
        builder = getattr(graph, "builder", None)
        whole_state = builder is not None and getattr(builder, "output_schema", None) is getattr(builder, "state_schema", None)
        if whole_state and not graph.interrupt_before_nodes and not graph.interrupt_after_nodes:
            # the output already says where the run stopped; skip re-reading the checkpoint
            latest: str | None = yield _Call(self.store.saver.latest_checkpoint_id, (thread_id,))
            pause = pause_from_output(output, thread_id=thread_id, workflow=wf.name, checkpoint_id=latest,
                                      editable=self._editable(wf, graph))
        return (yield from self._settle(wf, graph, thread_id, outcome_if_done=outcome_if_done, pause=pause, new=new))

    def _settle(
        self,
        wf: Workflow,
        graph: Graph,
        thread_id: str,
        *,
        outcome_if_done: Outcome,
        error: Exception | None = None,
        pause: Pause | None = None,
        new: NewThread | None = None,
    ) -> Flow[ThreadView]:
        if pause is None:
            pause = yield from self._read(wf, graph, thread_id)
        if pause.done and wf.outcome is not None and outcome_if_done != "cancelled" and isinstance(pause.values, dict):
            outcome_if_done = wf.outcome(pause.values) or outcome_if_done
        synced = yield from self._sync(thread_id, pause, outcome_if_done, error, new)
        return _thread_view(synced.thread, pause.values, synced.pending, synced.decided)

    def _read(self, wf: Workflow, graph: Graph, thread_id: str) -> Flow[Pause]:
        config = _config(thread_id)
        snapshot: StateSnapshot = yield _GetState(graph, config)
        parent: tuple[str, ...] = ()
        if graph.interrupt_after_nodes and snapshot.parent_config and snapshot.next and not snapshot.interrupts:
            parent_snapshot: StateSnapshot = yield _GetState(graph, snapshot.parent_config)
            parent = tuple(parent_snapshot.next)
        editable = self._editable(wf, graph)
        return read_pause(
            snapshot,
            thread_id=thread_id,
            workflow=wf.name,
            interrupt_before=_names(graph.interrupt_before_nodes),
            interrupt_after=_names(graph.interrupt_after_nodes),
            parent_next=lambda: parent,
            editable=editable,
        )

    def _durability(self, wf: Workflow, graph: Graph) -> Durability:
        chosen = wf.durability or self.durability or "async"
        # a pause after a node (interrupt_after) is told by the checkpoint before it, which
        # "exit" does not write
        return "async" if chosen == "exit" and graph.interrupt_after_nodes else chosen

    @staticmethod
    def _editable(wf: Workflow, graph: Graph) -> tuple[str, ...]:
        return tuple(wf.editable) if wf.editable is not None else _schema_fields(graph)

    def _sync(
        self, thread_id: str, pause: Pause, outcome_if_done: Outcome, error: Exception | None, new: NewThread | None = None
    ) -> Flow[Synced]:
        if pause.reviews:
            status, outcome, message = "paused", None, None
        elif pause.done:
            status, outcome, message = "done", outcome_if_done, None
        else:
            status, outcome = "failed", None
            if error is not None or pause.error:
                message = f"{type(error).__name__}: {error}" if error is not None else pause.error
                attempts: int = yield _Call(self.ledger.recover_attempts, (thread_id,))
                left = self.max_attempts - attempts
                message += (f"; `hitl recover` runs the failed step again ({left} of {self.max_attempts} attempts left)"
                            if left > 0 else
                            f"; `hitl recover` gave up after {attempts} attempts: fix the cause, then `hitl retry {thread_id}`")
            elif pause.stalled_at:
                message = f"the run stopped before finishing {', '.join(pause.stalled_at)}; `hitl recover` continues it"
            else:
                message = "the run stopped before its first checkpoint; `hitl recover` runs it again from its input"
        synced: Synced = yield _Call(self.ledger.sync, (thread_id,), {
            "status": status, "outcome": outcome, "error": message,
            "pending": [(r, pause.checkpoint_id) for r in pause.reviews], "new": new,
        })
        if self.on_review is not None:
            for review in synced.added:
                try:
                    self.on_review(review)
                except Exception:  # a failing notifier must not fail the run it reports on
                    log.exception("on_review hook failed for review %s", review.review_id)
        return synced

    def _view(self, row: ThreadRow) -> Flow[ThreadView]:
        values: Any = {}
        if self._knows(row.workflow):
            snapshot: StateSnapshot = yield _GetState(self.graph(row.workflow), _config(row.thread_id))
            values = snapshot.values
        open_reviews: list[ReviewRow] = yield _Call(self.ledger.reviews, (row.thread_id, ("pending", "decided")))
        return _thread_view(row, values, [r.request for r in open_reviews if r.status == "pending"],
                     [r.review_id for r in open_reviews if r.status == "decided"])

    def _reconcile(self, row: ThreadRow) -> Flow[ThreadView]:
        """Bring one crashed thread's ledger rows in line with its latest checkpoint (read-only)."""
        wf, graph = self.workflow(row.workflow), self.graph(row.workflow)
        pause = yield from self._read(wf, graph, row.thread_id)
        yield _Call(self.ledger.add_events, (row.thread_id, [Event("reconciled", data={"owner": row.owner})]))
        synced = yield from self._sync(row.thread_id, pause, "completed", None)
        return _thread_view(synced.thread, pause.values, synced.pending, synced.decided)

    def _reconcile_stale(self) -> Flow[list[ThreadView]]:
        """Reconcile every thread marked running whose run is over (crashed, or ended unrecorded)."""
        running: list[ThreadRow] = yield _Call(self.ledger.threads_in, ("running",))
        views: list[ThreadView] = []
        for row in running:
            if not self.ledger.alive(row) and self._knows(row.workflow):
                views.append((yield from self._reconcile(row)))
        return views


MIN_PREFIX = 6
"""The fewest characters of a review id that name it (ids are 32; their keys match in full)."""


def _check_prefix(review_id: str, thread_id: str) -> None:
    if len(review_id.strip()) < MIN_PREFIX:
        raise ReviewNotPendingError(
            f"review id {review_id!r} is too short to name a review of thread {thread_id!r}: give at least "
            f"{MIN_PREFIX} characters of its id, or its key (`hitl show {thread_id}` lists them)"
        )


def _thread_view(row: ThreadRow, values: Any, pending: Sequence[ReviewRequest], decided: Sequence[str]) -> ThreadView:
    values = to_json(values)
    return ThreadView(
        thread_id=row.thread_id,
        workflow=row.workflow,
        status=row.status,
        outcome=row.outcome,
        reviews=tuple(pending),
        state=values if isinstance(values, dict) else {"value": values},
        error=row.error,
        awaiting_recovery=tuple(decided) if row.status != "running" else (),
    )


def _replaced(decision: Decision, request: ReviewRequest, values: Any) -> dict[str, Any] | None:
    """For the audit log: the values a `Modify` replaces, next to the new ones in its patch."""
    if not isinstance(decision, Modify):
        return None
    source = request.payload if request.patch_target == "payload" else values
    source = source if isinstance(source, dict) else {}
    return {"original": {k: to_json(source.get(k)) for k in decision.patch}}


def _outcome(review: ReviewRow) -> Outcome:
    return "rejected" if review.decision and review.decision.get("kind") == "reject" else "completed"


def _config(thread_id: str, effects: EffectLog | None = None, *, defer: bool = False) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if effects is not None:
        configurable[EFFECTS_KEY] = effects
    if defer:  # the run's checkpoint joins the ledger's commit of where it stopped
        configurable[DEFER_KEY] = True
    return {"configurable": configurable}


def _names(nodes: Any) -> tuple[str, ...]:
    if nodes == "*" or nodes is None:
        return () if nodes is None else ("*",)
    return tuple(nodes)


def _schema_fields(graph: Graph) -> tuple[str, ...]:
    schema = getattr(getattr(graph, "builder", None), "state_schema", None)
    return _fields_of(schema) if schema is not None else ()


@functools.lru_cache(maxsize=128)
def _fields_of(schema: type) -> tuple[str, ...]:
    # get_type_hints costs ~0.15 ms; a state schema does not change while the process runs
    return tuple(state_fields(schema))


def _check(
    decision: Decision, request: ReviewRequest, graph: Graph, *, roles: Sequence[str] = (), started_by: str | None = None
) -> Decision:
    """Refuse a decision the review does not allow; return it with its patch validated."""
    if request.required_role is not None and request.required_role not in roles:
        who = f"actor {decision.actor!r}" if decision.actor else "the actor"
        raise PermissionDeniedError(
            f"review {request.review_id!r} requires role {request.required_role!r}; {who} has roles: {', '.join(roles) or 'none'}"
        )
    if request.separation_of_duties:
        if decision.actor is None:
            raise PermissionDeniedError(f"review {request.review_id!r} needs a named actor (separation of duties)")
        if decision.actor == started_by:
            raise PermissionDeniedError(
                f"actor {decision.actor!r} started thread {request.thread_id!r} and may not decide its review "
                f"{request.review_id!r} (separation of duties)"
            )
    if decision.seen is not None and decision.seen != request.payload_hash:
        raise StaleReviewError(
            f"review {request.review_id!r} changed since you saw it (payload hash {decision.seen[:12]} is now "
            f"{request.payload_hash[:12]}); look again (`hitl show {request.thread_id}`)"
        )
    if decision.kind not in request.allowed:
        raise InvalidDecisionError(
            f"review {request.review_id!r} does not allow {decision.kind!r}; allowed: {', '.join(request.allowed)}"
        )
    if request.verify_phrase is not None and isinstance(decision, Approve | Modify):
        if decision.verification != request.verify_phrase:
            raise InvalidDecisionError(
                f"review {request.review_id!r} needs the verification phrase {request.verify_phrase!r} typed exactly; "
                f"got {decision.verification!r}"
            )
    if isinstance(decision, Modify):
        if request.patch_target == "payload":
            return decision.model_copy(update={"patch": validate_payload_patch(decision.patch, request)})
        schema = getattr(getattr(graph, "builder", None), "state_schema", None)
        patch = validate_patch(decision.patch, editable=request.editable, state_schema=schema)
        return decision.model_copy(update={"patch": to_json(patch)})
    return decision

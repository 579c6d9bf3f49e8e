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
import time
import uuid
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar, assert_never

from langchain_core.runnables import RunnableConfig
from langgraph.constants import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Durability, StateSnapshot

from hitl_graphs.decisions import Approve, Decision, Modify, Reject, decision_to_json, parse_decision
from hitl_graphs.errors import (
    AlreadyDecidedError,
    InvalidDecisionError,
    NoPendingReviewError,
    ReviewNotPendingError,
    ThreadBusyError,
    ThreadExistsError,
    UnknownThreadError,
    UnknownWorkflowError,
)
from hitl_graphs.gate import to_json
from hitl_graphs.ledger import Event, Ledger, ReviewRow, ThreadRow, owner_alive, this_owner
from hitl_graphs.patches import state_fields, validate_patch, validate_payload_patch
from hitl_graphs.pauses import Pause, read_pause
from hitl_graphs.registry import Workflow, get_workflow
from hitl_graphs.reviews import HistoryEntry, Outcome, ReviewRequest, ThreadView
from hitl_graphs.store import SqliteStore

T = TypeVar("T")
Graph = CompiledStateGraph[Any, Any, Any, Any]


# -- the I/O an operation asks for ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Invoke:
    graph: Graph
    input: Any
    config: RunnableConfig
    durability: Durability | None


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


_Effect = _Invoke | _GetState | _UpdateState | _Call
Flow = Generator[_Effect, Any, T]


def _run_sync(effect: _Effect) -> Any:
    match effect:
        case _Invoke(graph, input, config, durability):
            return graph.invoke(input, config, durability=durability)
        case _GetState(graph, config):
            return graph.get_state(config)
        case _UpdateState(graph, config, values, as_node):
            return graph.update_state(config, values, as_node=as_node)
        case _Call(fn, args, kwargs):
            return fn(*args, **(kwargs or {}))


async def _run_async(effect: _Effect) -> Any:
    match effect:
        case _Invoke(graph, input, config, durability):
            return await graph.ainvoke(input, config, durability=durability)
        case _GetState(graph, config):
            return await graph.aget_state(config)
        case _UpdateState(graph, config, values, as_node):
            return await graph.aupdate_state(config, values, as_node=as_node)
        case _Call(fn, args, kwargs):
            return await asyncio.to_thread(fn, *args, **(kwargs or {}))


def _drive(flow: Flow[T]) -> T:
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
        durability: LangGraph durability for every run (`sync`, `async` or `exit`); `None` keeps
            LangGraph's default.

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
        owns_store: bool = False,
    ) -> None:
        self.store = store
        self.ledger = Ledger(store.conn, store.lock)
        self._workflows = {w.name: w for w in workflows} if workflows is not None else None
        self._graphs: dict[str, Graph] = {}
        self.lease = lease
        self.durability = durability
        self._owns_store = owns_store

    @classmethod
    def open(
        cls,
        path: str | None = None,
        workflows: Iterable[Workflow] | None = None,
        *,
        lease: float = 600.0,
        durability: Durability | None = None,
    ) -> Runner:
        """Open (or create) the database at `path` and return a runner that closes it on exit.

        `path` defaults to `$HITL_DB`, else `checkpoints/hitl.sqlite`.
        """
        return cls(SqliteStore(path), workflows, lease=lease, durability=durability, owns_store=True)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the database if this runner opened it."""
        if self._owns_store:
            self.store.close()

    # -- public API: sync ------------------------------------------------------------------

    def start(self, workflow: str, input: Mapping[str, Any] | None = None, *, thread_id: str | None = None) -> ThreadView:
        """Start a thread and run it to its first review or its end.

        Raises:
            UnknownWorkflowError: no such workflow.
            ThreadExistsError: `thread_id` is already used.
        """
        return _drive(self._start(workflow, input, thread_id))

    def pending(self, *, workflow: str | None = None, limit: int = 50, offset: int = 0) -> list[ReviewRequest]:
        """Pending reviews across all threads, oldest first (reads the ledger's index)."""
        return _drive(self._pending(workflow, limit, offset))

    def show(self, thread_id: str) -> ThreadView:
        """A thread's status, pending reviews and current state.

        Raises:
            UnknownThreadError: no such thread.
        """
        return _drive(self._show(thread_id))

    def resume(self, thread_id: str, decision: Decision | Mapping[str, Any] | str, *, review_id: str | None = None) -> ThreadView:
        """Answer a pending review and run the thread to its next review or its end.

        Args:
            thread_id: The paused thread.
            decision: `Approve`, `Modify` or `Reject` (or its dict / JSON form).
            review_id: Which review, when several are pending (a unique prefix is enough).

        Raises:
            UnknownThreadError, NoPendingReviewError, ReviewNotPendingError, InvalidDecisionError,
            PatchError, AlreadyDecidedError, ThreadBusyError: each before anything is written.
        """
        return _drive(self._resume(thread_id, decision, review_id))

    def cancel(self, thread_id: str, *, actor: str | None = None, reason: str | None = None) -> ThreadView:
        """End a thread without running anything more; its pending reviews become cancelled."""
        return _drive(self._cancel(thread_id, actor, reason))

    def history(self, thread_id: str) -> list[HistoryEntry]:
        """Every event of a thread: started, review requested, decided (who, what), applied, ended."""
        return _drive(self._history(thread_id))

    def recover(self) -> list[ThreadView]:
        """Finish what crashed processes left: apply recorded decisions, continue stalled runs."""
        return _drive(self._recover())

    # -- public API: async -----------------------------------------------------------------

    async def astart(self, workflow: str, input: Mapping[str, Any] | None = None, *, thread_id: str | None = None) -> ThreadView:
        """Async `start`."""
        return await _adrive(self._start(workflow, input, thread_id))

    async def apending(self, *, workflow: str | None = None, limit: int = 50, offset: int = 0) -> list[ReviewRequest]:
        """Async `pending`."""
        return await _adrive(self._pending(workflow, limit, offset))

    async def ashow(self, thread_id: str) -> ThreadView:
        """Async `show`."""
        return await _adrive(self._show(thread_id))

    async def aresume(self, thread_id: str, decision: Decision | Mapping[str, Any] | str, *, review_id: str | None = None) -> ThreadView:
        """Async `resume`."""
        return await _adrive(self._resume(thread_id, decision, review_id))

    async def acancel(self, thread_id: str, *, actor: str | None = None, reason: str | None = None) -> ThreadView:
        """Async `cancel`."""
        return await _adrive(self._cancel(thread_id, actor, reason))

    async def ahistory(self, thread_id: str) -> list[HistoryEntry]:
        """Async `history`."""
        return await _adrive(self._history(thread_id))

    async def arecover(self) -> list[ThreadView]:
        """Async `recover`."""
        return await _adrive(self._recover())

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
            self._graphs[name] = self.workflow(name).compile(self.store.saver)
        return self._graphs[name]

    def _knows(self, name: str) -> bool:
        try:
            self.workflow(name)
        except UnknownWorkflowError:
            return False
        return True

    # -- flows -----------------------------------------------------------------------------

    def _start(self, name: str, input: Mapping[str, Any] | None, thread_id: str | None) -> Flow[ThreadView]:
        wf = self.workflow(name)
        graph = self.graph(name)
        thread_id = thread_id or uuid.uuid4().hex
        config = _config(thread_id)
        existing: StateSnapshot = yield _GetState(graph, config)
        if existing.created_at is not None:
            raise ThreadExistsError(f"thread {thread_id!r} already has checkpoints; resume it or start with another id")
        data = dict(input if input is not None else (wf.example_input or {}))
        yield _Call(self.ledger.create_thread, (thread_id, name),
                    {"owner": this_owner(), "lease_until": time.time() + self.lease, "data": {"input": to_json(data)}})
        return (yield from self._run(wf, graph, thread_id, data, outcome_if_done="completed"))

    def _pending(self, workflow: str | None, limit: int, offset: int) -> Flow[list[ReviewRequest]]:
        yield from self._reconcile_stale()
        reviews: list[ReviewRequest] = yield _Call(self.ledger.pending, (), {"workflow": workflow, "limit": limit, "offset": offset})
        return reviews

    def _show(self, thread_id: str) -> Flow[ThreadView]:
        row = yield from self._thread(thread_id)
        return (yield from self._view(row))

    def _history(self, thread_id: str) -> Flow[list[HistoryEntry]]:
        yield from self._thread(thread_id)
        entries: list[HistoryEntry] = yield _Call(self.ledger.history, (thread_id,))
        return entries

    def _resume(self, thread_id: str, raw: Decision | Mapping[str, Any] | str, review_id: str | None) -> Flow[ThreadView]:
        decision = parse_decision(raw)
        row = yield from self._thread(thread_id)
        wf = self.workflow(row.workflow)
        graph = self.graph(row.workflow)
        pending: list[ReviewRow] = yield _Call(self.ledger.reviews, (thread_id, ("pending",)))
        if not pending:
            yield from self._explain_nothing_pending(row, review_id)
        review = yield from self._pick(row, pending, review_id)
        clean = _check(decision, review.request, graph)
        pause = yield from self._read(wf, graph, thread_id)
        if review.review_id not in {r.review_id for r in pause.reviews}:
            # decided by a racing process since we read the ledger, or answered outside the runner
            yield from self._refuse_decided(row, review.review_id)
            now_row: ThreadRow | None = yield _Call(self.ledger.thread, (thread_id,))
            if now_row is not None and not (now_row.status == "running" and owner_alive(now_row.owner, now_row.lease_until, time.time())):
                yield from self._sync(thread_id, pause, "completed", None)
            raise ReviewNotPendingError(
                f"review {review.review_id!r} is no longer pending on thread {thread_id!r}: the thread moved on "
                "outside this runner; `hitl show` has its current reviews"
            )
        yield _Call(self.ledger.claim, (thread_id, review.review_id, decision_to_json(clean)),
                    {"owner": this_owner(), "lease_until": time.time() + self.lease})
        return (yield from self._apply(wf, graph, thread_id, review, clean))

    def _cancel(self, thread_id: str, actor: str | None, reason: str | None) -> Flow[ThreadView]:
        row = yield from self._thread(thread_id)
        graph = self.graph(row.workflow)
        if row.status == "done":
            raise NoPendingReviewError(f"thread {thread_id!r} already ended ({row.outcome}); nothing to cancel")
        yield _Call(self.ledger.take_thread, (thread_id,), {"owner": this_owner(), "lease_until": time.time() + self.lease})
        yield _UpdateState(graph, _config(thread_id), None, END)
        yield _Call(self.ledger.add_events, (thread_id, [Event("cancel_requested", actor=actor, data={"reason": reason})]))
        return (yield from self._settle(self.workflow(row.workflow), graph, thread_id, outcome_if_done="cancelled"))

    def _recover(self) -> Flow[list[ThreadView]]:
        yield from self._reconcile_stale()
        views: list[ThreadView] = []
        decided: list[str] = yield _Call(self.ledger.threads_with_reviews, ("decided",))
        for thread_id in decided:
            row: ThreadRow | None = yield _Call(self.ledger.thread, (thread_id,))
            if row is None or not self._knows(row.workflow):
                continue
            if row.status == "running" and owner_alive(row.owner, row.lease_until, time.time()):
                continue
            reviews: list[ReviewRow] = yield _Call(self.ledger.reviews, (thread_id, ("decided",)))
            wf, graph = self.workflow(row.workflow), self.graph(row.workflow)
            yield _Call(self.ledger.take_thread, (thread_id,), {"owner": this_owner(), "lease_until": time.time() + self.lease})
            review = reviews[0]
            yield _Call(self.ledger.add_events, (thread_id, [Event("recovering", review.review_id)]))
            pause = yield from self._read(wf, graph, thread_id)
            if review.review_id not in {r.review_id for r in pause.reviews}:
                # the graph took the decision before the crash: continue the run if it stopped
                # mid-way, else only the ledger had not heard
                if pause.stalled_at:
                    views.append((yield from self._run(wf, graph, thread_id, None, outcome_if_done=_outcome(review))))
                else:
                    views.append((yield from self._settle(wf, graph, thread_id, outcome_if_done=_outcome(review), pause=pause)))
                continue
            decision = parse_decision(review.decision or {})
            views.append((yield from self._apply(wf, graph, thread_id, review, decision)))
        failed: list[ThreadRow] = yield _Call(self.ledger.threads_in, ("failed",))
        for row in failed:
            if not self._knows(row.workflow) or row.thread_id in decided:
                continue
            wf, graph = self.workflow(row.workflow), self.graph(row.workflow)
            pause = yield from self._read(wf, graph, row.thread_id)
            if not pause.stalled_at:
                continue
            yield _Call(self.ledger.take_thread, (row.thread_id,), {"owner": this_owner(), "lease_until": time.time() + self.lease})
            yield _Call(self.ledger.add_events, (row.thread_id, [Event("recovering", data={"stalled_at": list(pause.stalled_at)})]))
            views.append((yield from self._run(wf, graph, row.thread_id, None, outcome_if_done="completed")))
        return views

    # -- flow pieces -----------------------------------------------------------------------

    def _thread(self, thread_id: str) -> Flow[ThreadRow]:
        row: ThreadRow | None = yield _Call(self.ledger.thread, (thread_id,))
        if row is None:
            raise UnknownThreadError(
                f"thread {thread_id!r} does not exist; nothing was started (`hitl pending` lists paused threads)"
            )
        if row.status == "running" and not owner_alive(row.owner, row.lease_until, time.time()) and self._knows(row.workflow):
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
        matches = (
            [r for r in pending if review_id in (r.review_id, r.request.key)]
            or [r for r in pending if r.review_id.startswith(review_id)]
        )
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ReviewNotPendingError(f"review id prefix {review_id!r} matches {len(matches)} pending reviews; give more of it")
        yield from self._refuse_decided(row, review_id)
        listing = ", ".join(r.review_id for r in pending)
        raise ReviewNotPendingError(f"review {review_id!r} is not pending on thread {row.thread_id!r}; pending: {listing}")

    def _refuse_decided(self, row: ThreadRow, review_id: str) -> Flow[None]:
        others: list[ReviewRow] = yield _Call(self.ledger.reviews, (row.thread_id, ("decided", "applied", "cancelled", "superseded")))
        for r in others:
            if r.review_id == review_id or r.review_id.startswith(review_id):
                if r.status in ("cancelled", "superseded"):
                    raise ReviewNotPendingError(f"review {r.review_id!r} of thread {row.thread_id!r} was {r.status}")
                who = f" by {r.decision.get('actor')}" if r.decision and r.decision.get("actor") else ""
                kind = r.decision.get("kind") if r.decision else "?"
                raise AlreadyDecidedError(f"review {r.review_id!r} of thread {row.thread_id!r} was already decided ({kind}{who})")

    def _explain_nothing_pending(self, row: ThreadRow, review_id: str | None) -> Flow[None]:
        busy = row.status == "running" and owner_alive(row.owner, row.lease_until, time.time())
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
            case _:
                assert_never(decision)
        return (yield from self._run(wf, graph, thread_id, Command(update=update) if update else None, outcome_if_done=outcome))

    def _run(self, wf: Workflow, graph: Graph, thread_id: str, input: Any, *, outcome_if_done: Outcome) -> Flow[ThreadView]:
        """Invoke the graph, then make the ledger agree with where it stopped."""
        try:
            yield _Invoke(graph, input, _config(thread_id), self.durability)
        except Exception as exc:
            yield from self._settle(wf, graph, thread_id, outcome_if_done=outcome_if_done, error=exc)
            raise
        return (yield from self._settle(wf, graph, thread_id, outcome_if_done=outcome_if_done))

    def _settle(
        self,
        wf: Workflow,
        graph: Graph,
        thread_id: str,
        *,
        outcome_if_done: Outcome,
        error: Exception | None = None,
        pause: Pause | None = None,
    ) -> Flow[ThreadView]:
        if pause is None:
            pause = yield from self._read(wf, graph, thread_id)
        yield from self._sync(thread_id, pause, outcome_if_done, error)
        row = yield from self._thread(thread_id)
        return (yield from self._view(row, pause))

    def _read(self, wf: Workflow, graph: Graph, thread_id: str) -> Flow[Pause]:
        config = _config(thread_id)
        snapshot: StateSnapshot = yield _GetState(graph, config)
        parent: tuple[str, ...] = ()
        if graph.interrupt_after_nodes and snapshot.parent_config and snapshot.next and not snapshot.interrupts:
            parent_snapshot: StateSnapshot = yield _GetState(graph, snapshot.parent_config)
            parent = tuple(parent_snapshot.next)
        editable = wf.editable if wf.editable is not None else tuple(_schema_fields(graph))
        return read_pause(
            snapshot,
            thread_id=thread_id,
            workflow=wf.name,
            interrupt_before=_names(graph.interrupt_before_nodes),
            interrupt_after=_names(graph.interrupt_after_nodes),
            parent_next=lambda: parent,
            editable=editable,
        )

    def _sync(self, thread_id: str, pause: Pause, outcome_if_done: Outcome, error: Exception | None) -> Flow[None]:
        if pause.reviews:
            status, outcome, message = "paused", None, None
        elif pause.done:
            status, outcome, message = "done", outcome_if_done, None
        else:
            status, outcome = "failed", None
            if error is not None:
                message = f"{type(error).__name__}: {error}"
            elif pause.error:
                message = pause.error
            elif pause.stalled_at:
                message = f"the run stopped before finishing {', '.join(pause.stalled_at)}; `hitl recover` continues it"
            else:
                message = "the run stopped before its first checkpoint; start the thread again"
        yield _Call(self.ledger.sync, (thread_id,), {
            "status": status, "outcome": outcome, "error": message,
            "pending": [(r, pause.checkpoint_id) for r in pause.reviews],
        })

    def _view(self, row: ThreadRow, pause: Pause | None = None) -> Flow[ThreadView]:
        values: Any = pause.values if pause is not None else {}
        if pause is None and self._knows(row.workflow):
            snapshot: StateSnapshot = yield _GetState(self.graph(row.workflow), _config(row.thread_id))
            values = snapshot.values
        values = to_json(values)
        state = values if isinstance(values, dict) else {"value": values}
        pending: list[ReviewRow] = yield _Call(self.ledger.reviews, (row.thread_id, ("pending",)))
        decided: list[ReviewRow] = yield _Call(self.ledger.reviews, (row.thread_id, ("decided",)))
        return ThreadView(
            thread_id=row.thread_id,
            workflow=row.workflow,
            status=row.status,
            outcome=row.outcome,
            reviews=tuple(r.request for r in pending),
            state=state,
            error=row.error,
            awaiting_recovery=tuple(r.review_id for r in decided) if row.status != "running" else (),
        )

    def _reconcile(self, row: ThreadRow) -> Flow[None]:
        """Bring one crashed thread's ledger rows in line with its latest checkpoint (read-only)."""
        wf, graph = self.workflow(row.workflow), self.graph(row.workflow)
        pause = yield from self._read(wf, graph, row.thread_id)
        yield _Call(self.ledger.add_events, (row.thread_id, [Event("reconciled", data={"owner": row.owner})]))
        yield from self._sync(row.thread_id, pause, "completed", None)

    def _reconcile_stale(self) -> Flow[None]:
        running: list[ThreadRow] = yield _Call(self.ledger.threads_in, ("running",))
        now = time.time()
        for row in running:
            if not owner_alive(row.owner, row.lease_until, now) and self._knows(row.workflow):
                yield from self._reconcile(row)


def _outcome(review: ReviewRow) -> Outcome:
    return "rejected" if review.decision and review.decision.get("kind") == "reject" else "completed"


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def _names(nodes: Any) -> tuple[str, ...]:
    if nodes == "*" or nodes is None:
        return () if nodes is None else ("*",)
    return tuple(nodes)


def _schema_fields(graph: Graph) -> list[str]:
    schema = getattr(getattr(graph, "builder", None), "state_schema", None)
    return list(state_fields(schema)) if schema is not None else []


def _check(decision: Decision, request: ReviewRequest, graph: Graph) -> Decision:
    """Refuse a decision the review does not allow; return it with its patch validated."""
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

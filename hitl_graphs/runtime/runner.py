"""The runner: start, list, show, resume, cancel and recover threads, sync and async.

`Runner` is a facade: each public method drives one flow (`hitl_graphs.runtime.running`,
`deciding`, `recovering`, `deadlines`) with the sync or the async driver
(`hitl_graphs.runtime.driver`); decisions are checked by `hitl_graphs.runtime.admission`.

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

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from langgraph.types import Durability

from hitl_graphs.decisions import (
    Decision,
    DecisionDict,
    decision_from,
)
from hitl_graphs.errors import (
    ConfigError,
    UnknownWorkflowError,
)
from hitl_graphs.identity import Tokens
from hitl_graphs.webhooks import Webhooks
from hitl_graphs.registry import Workflow, get_workflow, registered
from hitl_graphs.reviews import HistoryEntry, ReviewRequest, ThreadView
from hitl_graphs.runtime.adopting import AdoptFlows
from hitl_graphs.runtime.deadlines import DeadlineFlows
from hitl_graphs.runtime.deciding import DecideFlows
from hitl_graphs.runtime.driver import (
    adrive,
    async_only,
    drive,
    sync_drive,
)
from hitl_graphs.runtime.records import RecordFlows
from hitl_graphs.runtime.recovering import RecoverFlows
from hitl_graphs.runtime.running import RunFlows
from hitl_graphs.runtime.savers import not_a_store
from hitl_graphs.runtime.streaming import StreamMethods
from hitl_graphs.runtime.working import WorkFlows
from hitl_graphs.runtime.support import (
    Graph,
)
from hitl_graphs.serde import GuardedSerializer, graph_types
from hitl_graphs.storage import Store, open_store
from hitl_graphs.workers import Pools
from hitl_graphs.workers import install as install_workers


class Runner(RecordFlows, RunFlows, DecideFlows, RecoverFlows, DeadlineFlows, StreamMethods, AdoptFlows, WorkFlows):
    """Run registered workflows on one database and answer their reviews.

    Args:
        store: The open database (see `Runner.open` for the usual way in).
        workflows: Workflows this runner knows; by default every registered one.
        lease: Seconds a run on another host is trusted before its thread counts as crashed.
        durability: LangGraph durability for the runs of workflows that do not declare one
            (`Workflow(durability=...)`); `None`: LangGraph's default, `"async"`. With `"exit"` a
            run writes one checkpoint, where it stops, committed together with the ledger's
            record of the pause (see `hitl_graphs.storage.sqlite.saver`).
        on_review: Called once for every review the ledger records (a new pause), after it is
            committed: send a notification, post to a chat. Errors are logged, not raised.
        reuse_threads: Keep LangGraph's worker threads from one sync run to the next instead
            of starting new ones per `invoke` (see `hitl_graphs.workers`); `close` stops them.
        max_attempts: How many times `recover` runs a step that raised again (a service that did
            not answer), with the recorded decision, before leaving the thread failed for a
            person (`retry` then tries once more).

    Example:
        >>> from hitl_graphs import Approve
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
        store: Store,
        workflows: Iterable[Workflow] | None = None,
        *,
        lease: float = 600.0,
        durability: Durability | None = None,
        on_review: Callable[[ReviewRequest], None] | None = None,
        owns_store: bool = False,
        reuse_threads: bool = True,
        max_attempts: int = 3,
    ) -> None:
        if not all(hasattr(store, part) for part in ("saver", "ledger", "effects", "marks")):
            raise ConfigError(not_a_store(store))
        self.store = store
        self.ledger = store.ledger
        self.effects = store.effects
        self.tokens = Tokens(store.tokens)
        """API tokens: issue, list, revoke, authenticate (`hitl_graphs.identity`)."""
        self.webhooks = Webhooks(store.webhooks, store.marks)
        """Where notifications go, and their delivery log (`hitl_graphs.webhooks`, `hitl_graphs.notify`)."""
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
        audit_key: str | None = None,
    ) -> Runner:
        """Open (or create) the database at `path` and return a runner that closes it on exit.

        `path` defaults to `$HITL_DB`, else `checkpoints/hitl.sqlite` in the project root (the
        nearest folder up from the working directory with a `pyproject.toml` or `.git`; see
        `hitl_graphs.locations`), so a notebook and `hitl` find the same file; `audit_key` to
        `$HITL_AUDIT_KEY` (see `hitl_graphs.audit`).
        """
        return cls(open_store(path, audit_key=audit_key), workflows, lease=lease, durability=durability,
                   on_review=on_review, owns_store=True, reuse_threads=reuse_threads, max_attempts=max_attempts)

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

    def start(
        self, workflow: str, input: Mapping[str, Any] | None = None, *, thread_id: str | None = None, actor: str | None = None
    ) -> ThreadView:
        """Start a thread and run it to its first review or its end.

        `actor` is who asked for the run (reviews with separation of duties refuse their decision).

        Raises:
            UnknownWorkflowError: no such workflow.
            ThreadExistsError: `thread_id` is already used.
        """
        return drive(self._start(workflow, input, thread_id, actor))

    def pending(
        self, *, workflow: str | None = None, roles: Sequence[str] | None = None, limit: int = 50, offset: int = 0
    ) -> list[ReviewRequest]:
        """Pending reviews across all threads, oldest first (reads the ledger's index).

        With `roles`, only what an actor holding those roles may decide.
        """
        return drive(self._pending(workflow, roles, limit, offset))

    def show(self, thread_id: str) -> ThreadView:
        """A thread's status, pending reviews and current state.

        Raises:
            UnknownThreadError: no such thread.
        """
        return drive(self._show(thread_id))

    def resume(
        self,
        thread_id: str,
        decision: Decision | DecisionDict | Mapping[str, Any] | str,
        *,
        review_id: str | None = None,
        roles: Sequence[str] = (),
    ) -> ThreadView:
        """Answer a pending review and run the thread to its next review or its end.

        Args:
            thread_id: The paused thread.
            decision: `Approve()`, `Modify(patch={...})` (or `Modify({...})`), `Reject(reason=...)`
                (or `Reject("...")`), ..., or its dict form; its `actor` is who decides. What is
                not a decision (`"approve"`, the class `Approve`, `True`) is refused naming the
                fix; a JSON string still works but is deprecated (`parse_decision(text)`).
            review_id: Which review, when several are pending: what `pending` and `show` print
                (its key, e.g. a tool call id, else the start of its id), its full id, or the
                name of the tool it calls when only one pending review calls it.
            roles: The roles the actor holds (checked against the review's `required_role`). As
                given: verify the caller's identity before passing them.

        Raises:
            UnknownThreadError, NoPendingReviewError, ReviewNotPendingError, InvalidDecisionError,
            PatchError, PermissionDeniedError, StaleReviewError, ReviewExpiredError,
            AlreadyDecidedError, ThreadBusyError: each before the thread changes (a refused
            decision is recorded in the audit log).
        """
        return drive(self._resume(thread_id, decision_from(decision, stacklevel=2), review_id, tuple(roles)))

    def cancel(self, thread_id: str, *, actor: str | None = None, reason: str | None = None) -> ThreadView:
        """End a thread without running anything more; its pending reviews become cancelled."""
        return drive(self._cancel(thread_id, actor, reason))

    def history(self, thread_id: str) -> list[HistoryEntry]:
        """Every event of a thread: started, review requested, decided (who, what), applied, ended."""
        return drive(self._history(thread_id))

    def recover(self) -> list[ThreadView]:
        """Finish what crashed processes and failed steps left: apply recorded decisions, continue
        stalled runs, run a step that raised again (up to `max_attempts` times per decision)."""
        return drive(self._recover())

    def stranded(self) -> list[str]:
        """Threads holding a decision that no live process is applying (a crash or a failed step
        left it; `recover` applies it)."""
        ids = self.ledger.threads_with_decided_reviews()
        rows = [self.ledger.thread(t) for t in ids]
        return [row.thread_id for row in rows if row is not None and not self.ledger.alive(row)]

    def events_after(self, seq: int, *, limit: int = 100) -> list[HistoryEntry]:
        """Every thread's history after entry `seq`, in order (what a live feed follows; keep the
        last `seq` seen and nothing is missed or seen twice, across restarts)."""
        return self.ledger.events_after(seq, limit=limit)

    def workflow_of(self, thread_id: str) -> str | None:
        """The workflow a thread runs (None for an unknown thread): one index lookup, no checkpoint read."""
        row = self.ledger.thread(thread_id)
        return row.workflow if row is not None else None

    def workflow_names(self) -> list[str]:
        """The names of the workflows this runner knows (those it was given, else every registered one)."""
        return sorted(self._workflows) if self._workflows is not None else sorted(registered())

    def retry(self, thread_id: str, *, actor: str | None = None) -> ThreadView:
        """Run a failed thread's failed step again, also after `recover` gave up on it.

        Raises:
            UnknownThreadError: no such thread.
            NoPendingReviewError: the thread has not failed.
            ThreadBusyError: a live process runs it.
        """
        return drive(self._retry(thread_id, actor))

    def sweep(self) -> list[ThreadView]:
        """Resolve every review whose deadline has passed with its default decision.

        Safe to run from any number of processes at once (each review is claimed once); run it
        periodically: `hitl sweep --every 30`, cron, or a systemd timer. A review a person
        decided first is left alone; the audit log says who won (`by`: `person` or `deadline`).
        """
        return drive(self._sweep())

    def wait_for_decision(self, thread_id: str, *, review_id: str | None = None, timeout: float, poll: float = 0.2) -> ThreadView:
        """Wait until someone (any process) decides the pending review; after `timeout` seconds
        apply its default decision (a reject unless the review set one) and return the thread."""
        return drive(self._wait(thread_id, review_id, timeout, poll))

    async def astart(
        self, workflow: str, input: Mapping[str, Any] | None = None, *, thread_id: str | None = None, actor: str | None = None
    ) -> ThreadView:
        """Async `start`."""
        return await adrive(self._start(workflow, input, thread_id, actor))

    async def apending(
        self, *, workflow: str | None = None, roles: Sequence[str] | None = None, limit: int = 50, offset: int = 0
    ) -> list[ReviewRequest]:
        """Async `pending`."""
        return await adrive(self._pending(workflow, roles, limit, offset))

    async def ashow(self, thread_id: str) -> ThreadView:
        """Async `show`."""
        return await adrive(self._show(thread_id))

    async def aresume(
        self,
        thread_id: str,
        decision: Decision | DecisionDict | Mapping[str, Any] | str,
        *,
        review_id: str | None = None,
        roles: Sequence[str] = (),
    ) -> ThreadView:
        """Async `resume`."""
        return await adrive(self._resume(thread_id, decision_from(decision, stacklevel=2), review_id, tuple(roles)))

    async def asweep(self) -> list[ThreadView]:
        """Async `sweep`."""
        return await adrive(self._sweep())

    async def await_for_decision(self, thread_id: str, *, review_id: str | None = None, timeout: float, poll: float = 0.2) -> ThreadView:
        """Async `wait_for_decision`: the seed's `asyncio.wait_for(user_input(), timeout)`, durable."""
        return await adrive(self._wait(thread_id, review_id, timeout, poll))

    async def await_decision(self, thread_id: str, *, review_id: str | None = None, timeout: float, poll: float = 0.2) -> ThreadView:
        """The old name of `await_for_decision` (which follows the `x` / `ax` rule of every other
        twin); kept working."""
        return await self.await_for_decision(thread_id, review_id=review_id, timeout=timeout, poll=poll)

    async def acancel(self, thread_id: str, *, actor: str | None = None, reason: str | None = None) -> ThreadView:
        """Async `cancel`."""
        return await adrive(self._cancel(thread_id, actor, reason))

    async def ahistory(self, thread_id: str) -> list[HistoryEntry]:
        """Async `history`."""
        return await adrive(self._history(thread_id))

    async def arecover(self) -> list[ThreadView]:
        """Async `recover`."""
        return await adrive(self._recover())

    async def aretry(self, thread_id: str, *, actor: str | None = None) -> ThreadView:
        """Async `retry`."""
        return await adrive(self._retry(thread_id, actor))

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
        if getattr(sync_drive, "in_loop", False) and async_only(graph):
            # refused before the flow writes anything; asyncio.run cannot nest in a running loop
            raise ConfigError(
                f"workflow {name!r} has async-only nodes ({', '.join(async_only(graph))}), which a sync Runner "
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


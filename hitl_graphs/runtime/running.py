"""Starting a thread, running its graph and making the ledger agree with where it stopped.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.types import Durability, StateSnapshot

from hitl_graphs.errors import (
    ThreadBusyError,
    ThreadExistsError,
    UnknownThreadError,
)
from hitl_graphs.gate import to_json
from hitl_graphs.audit import Event
from hitl_graphs.storage.base import NewThread, ReviewRow, Synced, ThreadRow
from hitl_graphs.breakpoint_changes import MAX_HOPS, changes, lists_among, seen_clock, started_from, unseen_keys
from hitl_graphs.pauses import Pause, breakpoint_at, pause_from_output, read_pause
from hitl_graphs.registry import Workflow
from hitl_graphs.reviews import HistoryEntry, Outcome, Position, ReviewRequest, ThreadStatus, ThreadView
from hitl_graphs.runtime.driver import (
    Flow,
    GetState,
    GetTuple,
    Invoke,
    call,
)
from hitl_graphs.runtime.support import (
    Graph,
    agent_tool_schemas,
    ending_outcome,
    log,
    node_names,
    run_config,
    schema_fields,
    thread_view,
)

if TYPE_CHECKING:
    from hitl_graphs.runtime.host import RunnerHost as Runner  # a Protocol: the type of `self` in a part (host.py says why)



def outside_the_runner(thread_id: str) -> str:
    """What to do about a thread that has checkpoints and no ledger row."""
    return (f"thread {thread_id!r} has checkpoints but the ledger does not know it: it was run outside the runner "
            f"(plain `graph.invoke` / `graph.stream`); bring it in with `runner.adopt({thread_id!r}, WORKFLOW)` "
            f"(`hitl adopt --workflow WORKFLOW {thread_id}`), and stream later runs with `runner.stream(...)` / "
            "`runner.stream_resume(...)`, which keep the ledger")


def unseen_payload(graph: Graph, snapshot: StateSnapshot, at: tuple[tuple[str, ...], Position],
                   parent_values: Any) -> Flow[dict[str, Any]]:
    """A breakpoint review's payload: what the paused nodes have not seen (`breakpoint_changes`).

    One checkpoint read for the versions (a `StateSnapshot` has none); when a list key changed,
    the ancestors back to the checkpoint the node started from (for "after", the parent, read
    already), so only the list's new items are stored.
    """
    nodes, position = at
    values: dict[str, Any] = snapshot.values
    found: CheckpointTuple | None = yield GetTuple(graph, snapshot.config)
    if found is None:
        return changes(values, snapshot.next, list(values), None)
    clock = seen_clock(found.checkpoint, nodes)
    keys = unseen_keys(values, found.checkpoint, clock)
    earlier: Any = None
    if clock is not None and lists_among(values, keys):
        if position == "after":
            earlier = parent_values
        else:
            step, hops = found, 0
            while step is not None and step.parent_config is not None and hops < MAX_HOPS:
                step, hops = (yield GetTuple(graph, step.parent_config)), hops + 1
                if step is not None and started_from(step.checkpoint, clock):
                    earlier = step.checkpoint["channel_values"]
                    break
    return changes(values, snapshot.next, keys, earlier if isinstance(earlier, dict) else None)


class RunFlows:
    """Starting a thread, running its graph and making the ledger agree with where it stopped. (A part of `Runner`.)"""

    def _start(self: Runner, name: str, input: Mapping[str, Any] | None, thread_id: str | None, actor: str | None) -> Flow[ThreadView]:
        wf = self.workflow(name)
        graph = self.graph(name)
        data = dict(input if input is not None else (wf.example_input or {}))
        given = to_json(data)
        # the log names the input's fields; the input itself is in the checkpoints (and, until the
        # first one, where `recover` reads it). Not hashed: canonical JSON of a 1 MB input costs
        # more CPU than LangGraph's whole cycle spends on it.
        new = NewThread(name, actor, {"input_keys": sorted(map(str, given)) if isinstance(given, dict) else None}, given)
        if thread_id is None and self._durability(wf, graph) == "exit" and getattr(self.store.saver, "commits_with_ledger", False):
            # nobody knows this id before the run returns and the run writes nothing before it
            # stops: the thread's start is recorded with its first pause, in one transaction
            # (where the checkpoint commits on its own, a saver of the user's, the start is recorded first)
            return (yield from self._run(wf, graph, uuid.uuid4().hex, data, outcome_if_done="completed", new=new))
        if thread_id is not None:  # an id given may already be used outside the runner
            existing: str | None = yield from call(self.store.latest_checkpoint_id, thread_id)
            if existing is not None:
                known: ThreadRow | None = yield from call(self.ledger.thread, thread_id)
                if known is not None:
                    raise ThreadExistsError(f"thread {thread_id!r} already exists (status {known.status}); "
                                            "resume it or start with another id")
                raise ThreadExistsError(f"{outside_the_runner(thread_id)}; or start with another id")
        thread_id = thread_id or uuid.uuid4().hex
        with self.store.marks.hold() as owner:
            yield from call(self.ledger.create_thread, thread_id, name, owner=owner, lease_until=time.time() + self.lease,
                            data=new.data, actor=actor, input=new.input)
            return (yield from self._run(wf, graph, thread_id, data, outcome_if_done="completed"))

    def _pending(self: Runner, workflow: str | None, roles: Sequence[str] | None, limit: int, offset: int) -> Flow[list[ReviewRequest]]:
        yield from self._reconcile_stale()
        reviews = yield from call(self.ledger.pending, workflow=workflow, roles=roles, limit=limit, offset=offset)
        return reviews

    def _show(self: Runner, thread_id: str) -> Flow[ThreadView]:
        row = yield from self._thread(thread_id)
        return (yield from self._view(row))

    def _history(self: Runner, thread_id: str) -> Flow[list[HistoryEntry]]:
        yield from self._thread(thread_id)
        entries: list[HistoryEntry] = yield from call(self.ledger.history, thread_id)
        return entries

    def _take(self: Runner, thread_id: str, owner: str) -> Flow[bool]:
        """Hold a thread for this run; False if another live run holds it."""
        try:
            yield from call(self.ledger.take_thread, thread_id, owner=owner, lease_until=time.time() + self.lease)
        except ThreadBusyError:
            return False
        return True

    def _thread(self: Runner, thread_id: str) -> Flow[ThreadRow]:
        row: ThreadRow | None = yield from call(self.ledger.thread, thread_id)
        if row is None:
            outside: str | None = yield from call(self.store.latest_checkpoint_id, thread_id)
            if outside is not None:
                raise UnknownThreadError(outside_the_runner(thread_id))
            raise UnknownThreadError(
                f"thread {thread_id!r} does not exist; nothing was started (`hitl pending` lists paused threads)"
            )
        if self._died(row):
            yield from self._reconcile(row)
            row = yield from call(self.ledger.thread, thread_id)
        assert row is not None
        return row

    def _died(self: Runner, row: ThreadRow) -> bool:
        """Whether the run holding the thread died (no live process, a workflow we can reconcile)."""
        return row.status == "running" and not self.ledger.alive(row) and self._knows(row.workflow)

    def _run(self: Runner, wf: Workflow, graph: Graph, thread_id: str, input: Any, *, outcome_if_done: Outcome, new: NewThread | None = None
    ) -> Flow[ThreadView]:
        """Invoke the graph, then make the ledger agree with where it stopped."""
        try:
            durability = self._durability(wf, graph)
            written: list[str] = []
            output = yield Invoke(graph, input, run_config(thread_id, self.effects, defer=durability == "exit", written=written),
                                  durability, self._workers)
        except Exception as exc:
            yield from self._settle(wf, graph, thread_id, outcome_if_done=outcome_if_done, error=exc, new=new)
            raise
        pause = None
        builder = getattr(graph, "builder", None)
        whole_state = builder is not None and getattr(builder, "output_schema", None) is getattr(builder, "state_schema", None)
        if whole_state and not graph.interrupt_before_nodes and not graph.interrupt_after_nodes:
            # the output already says where the run stopped; skip re-reading the checkpoint (and its
            # id, when the saver told us which it wrote last)
            latest: str | None = written[-1] if written else (yield from call(self.store.latest_checkpoint_id, thread_id))
            pause = pause_from_output(output, thread_id=thread_id, workflow=wf.name, checkpoint_id=latest,
                                      editable=self._editable(wf, graph))
        return (yield from self._settle(wf, graph, thread_id, outcome_if_done=outcome_if_done, pause=pause, new=new))

    def _settle(self: Runner,
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
        if pause.done and outcome_if_done != "cancelled" and isinstance(pause.values, dict):
            # the workflow's own reading first, then the template's ending record, then the decision's kind
            read = wf.outcome(pause.values) if wf.outcome is not None else ending_outcome(graph, pause.values)
            outcome_if_done = read or outcome_if_done
        synced = yield from self._sync(thread_id, pause, outcome_if_done, error, new)
        return thread_view(synced.thread, pause.values, synced.pending, synced.decided)

    def _read(self: Runner, wf: Workflow, graph: Graph, thread_id: str) -> Flow[Pause]:
        config = run_config(thread_id)
        snapshot: StateSnapshot = yield GetState(graph, config)
        parent: tuple[str, ...] = ()
        parent_values: Any = None
        if graph.interrupt_after_nodes and snapshot.parent_config and snapshot.next and not snapshot.interrupts:
            parent_snapshot: StateSnapshot = yield GetState(graph, snapshot.parent_config)
            parent, parent_values = tuple(parent_snapshot.next), parent_snapshot.values
        before, after = node_names(graph.interrupt_before_nodes), node_names(graph.interrupt_after_nodes)
        at = breakpoint_at(snapshot, interrupt_before=before, interrupt_after=after, parent_next=lambda: parent)
        payload = None
        if at is not None and isinstance(snapshot.values, dict):
            payload = yield from unseen_payload(graph, snapshot, at, parent_values)
        editable = self._editable(wf, graph)
        return read_pause(
            snapshot,
            thread_id=thread_id,
            workflow=wf.name,
            interrupt_before=before,
            interrupt_after=after,
            parent_next=lambda: parent,
            editable=editable,
            tool_schemas=agent_tool_schemas(graph),
            breakpoint_payload=payload,
        )

    def _durability(self: Runner, wf: Workflow, graph: Graph) -> Durability:
        chosen = wf.durability or self.durability or "async"
        # a pause after a node (interrupt_after) is told by the checkpoint before it, which
        # "exit" does not write
        return "async" if chosen == "exit" and graph.interrupt_after_nodes else chosen

    @staticmethod
    def _editable(wf: Workflow, graph: Graph) -> tuple[str, ...]:
        return tuple(wf.editable) if wf.editable is not None else schema_fields(graph)

    def _sync(self: Runner, thread_id: str, pause: Pause, outcome_if_done: Outcome, error: Exception | None, new: NewThread | None = None
    ) -> Flow[Synced]:
        status: ThreadStatus
        if pause.reviews:
            status, outcome, message = "paused", None, None
        elif pause.done:
            status, outcome, message = "done", outcome_if_done, None
        else:
            status, outcome = "failed", None
            if error is not None or pause.error:
                message = f"{type(error).__name__}: {error}" if error is not None else pause.error or ""
                attempts: int = yield from call(self.ledger.recover_attempts, thread_id)
                left = self.max_attempts - attempts
                message += (f"; `hitl recover` runs the failed step again ({left} of {self.max_attempts} attempts left)"
                            if left > 0 else
                            f"; `hitl recover` gave up after {attempts} attempts: fix the cause, then `hitl retry {thread_id}`")
            elif pause.stalled_at:
                message = f"the run stopped before finishing {', '.join(pause.stalled_at)}; `hitl recover` continues it"
            else:
                message = "the run stopped before its first checkpoint; `hitl recover` runs it again from its input"
        synced = yield from call(self.ledger.sync, thread_id, status=status, outcome=outcome, error=message,
                                 pending=[(r, pause.checkpoint_id) for r in pause.reviews], new=new)
        if self.on_review is not None:
            for review in synced.added:
                try:
                    self.on_review(review)
                except Exception:  # a failing notifier must not fail the run it reports on
                    log.exception("on_review hook failed for review %s", review.review_id)
        return synced

    def _view(self: Runner, row: ThreadRow) -> Flow[ThreadView]:
        values: Any = {}
        if self._knows(row.workflow):
            snapshot: StateSnapshot = yield GetState(self.graph(row.workflow), run_config(row.thread_id))
            values = snapshot.values
        open_reviews: list[ReviewRow] = yield from call(self.ledger.reviews, row.thread_id, ("pending", "decided"))
        return thread_view(row, values, [r.request for r in open_reviews if r.status == "pending"],
                     [r.review_id for r in open_reviews if r.status == "decided"])

    def _reconcile(self: Runner, row: ThreadRow) -> Flow[ThreadView]:
        """Bring one crashed thread's ledger rows in line with its latest checkpoint (read-only)."""
        wf, graph = self.workflow(row.workflow), self.graph(row.workflow)
        pause = yield from self._read(wf, graph, row.thread_id)
        yield from call(self.ledger.add_events, row.thread_id, [Event("reconciled", data={"owner": row.owner})])
        synced = yield from self._sync(row.thread_id, pause, "completed", None)
        return thread_view(synced.thread, pause.values, synced.pending, synced.decided)

    def _reconcile_stale(self: Runner) -> Flow[list[ThreadView]]:
        """Reconcile every thread marked running whose run is over (crashed, or ended unrecorded)."""
        running: list[ThreadRow] = yield from call(self.ledger.threads_in, "running")
        views: list[ThreadView] = []
        for row in running:
            if not self.ledger.alive(row) and self._knows(row.workflow):
                views.append((yield from self._reconcile(row)))
        return views

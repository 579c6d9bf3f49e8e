"""Adopting threads that plain LangGraph ran on the same SQLite file.

A team that used LangGraph's `SqliteSaver` before this toolkit has threads paused in that file:
LangGraph's `checkpoints` and `writes` tables are the very tables the runner's saver reads, but
the ledger (what `pending`, `show` and `resume` consult) has never heard of them. `adopt` reads
where such a thread stands in its latest checkpoint, as the runner reads its own (its
`interrupt()` calls, the static breakpoints of the workflow's graph, a run that stopped mid-way,
an end), and records the thread and its reviews in the ledger in one transaction. From then on it
is a thread like any other: listed, shown, resumed, audited. Nothing runs and no checkpoint is
written.

`adopt` checks that the thread fits the workflow named: a pause at a node the workflow's graph
does not have is refused (the thread was run by another graph). Which graph ran a thread is not
written in its checkpoints, so `--all` adopts every thread the ledger does not know as the one
workflow given: run it on files of one graph, or name the threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.types import StateSnapshot

from hitl_graphs.errors import ConfigError, ThreadExistsError, UnknownThreadError
from hitl_graphs.storage.base import NewThread, ThreadRow
from hitl_graphs.reviews import ThreadView
from hitl_graphs.runtime.driver import Flow, GetState, adrive, call, drive
from hitl_graphs.runtime.support import run_config, thread_view

if TYPE_CHECKING:
    from hitl_graphs.runtime.host import RunnerHost as Runner  # a Protocol: the type of `self` in a part (host.py says why)


class AdoptFlows:
    """`adopt` / `aadopt` and `outside_threads`. (A part of `Runner`.)"""

    def adopt(self: Runner, thread_id: str, workflow: str) -> ThreadView:
        """Bring a thread that plain LangGraph ran on this database into the ledger, as `workflow`.

        Reads where it paused (its pending `interrupt()` calls, a static breakpoint of the
        workflow's graph) so `pending`, `show` and `resume` work on it; a finished thread is
        recorded as done. Nothing runs. See `hitl_graphs.runtime.adopting`.

        Example:
            >>> from hitl_graphs import Approve, Runner
            >>> from hitl_graphs.examples import email_workflow
            >>> with Runner.open(":memory:", workflows=[email_workflow()]) as runner:
            ...     # a thread run by plain LangGraph on the same file (the runner's graph, its saver)
            ...     _ = runner.graph("email").invoke({"to": "ana@example.com", "topic": "lunch"},
            ...                                      {"configurable": {"thread_id": "old-1"}})
            ...     runner.outside_threads()
            ...     runner.adopt("old-1", "email").status
            ...     runner.resume("old-1", Approve(actor="ana")).state["sent"]
            ['old-1']
            'paused'
            True

        Raises:
            UnknownWorkflowError: no such workflow.
            UnknownThreadError: the thread has no checkpoints in this database.
            ThreadExistsError: the ledger already knows the thread.
            ConfigError: the thread paused at a node the workflow's graph does not have.
        """
        return drive(self._adopt(thread_id, workflow))

    async def aadopt(self: Runner, thread_id: str, workflow: str) -> ThreadView:
        """Async `adopt`."""
        return await adrive(self._adopt(thread_id, workflow))

    def outside_threads(self: Runner) -> list[str]:
        """Ids of threads with checkpoints in this database that the ledger does not know (run by
        plain LangGraph: `adopt` brings them in)."""
        return self.ledger.threads_outside()

    def _adopt(self: Runner, thread_id: str, name: str) -> Flow[ThreadView]:
        wf, graph = self.workflow(name), self.graph(name)
        known: ThreadRow | None = yield from call(self.ledger.thread, thread_id)
        if known is not None:
            raise ThreadExistsError(f"thread {thread_id!r} is already in the ledger (workflow {known.workflow!r}, "
                                    f"status {known.status}); nothing to adopt: `hitl show {thread_id}`")
        latest: str | None = yield from call(self.store.latest_checkpoint_id, thread_id)
        if latest is None:
            raise UnknownThreadError(
                f"thread {thread_id!r} has no checkpoints in this database, so there is nothing to adopt: open the "
                "file your SqliteSaver wrote (`hitl --db PATH adopt ...`); `hitl adopt --workflow W --all` adopts "
                "every thread it holds"
            )
        saved: CheckpointTuple | None = yield from call(self.store.saver.get_tuple, run_config(thread_id))
        snapshot: StateSnapshot = yield GetState(graph, run_config(thread_id))
        foreign = _nodes_not_in(saved, snapshot, set(graph.nodes))
        if foreign:
            raise ConfigError(
                f"thread {thread_id!r} ran or stands at node(s) {', '.join(sorted(foreign))}, which workflow {name!r} "
                "does not have: it was run by another graph; adopt it with the workflow of that graph"
            )
        pause = yield from self._read(wf, graph, thread_id)
        new = NewThread(name, None, {"input": None, "adopted": {"checkpoint_id": latest}})
        synced = yield from self._sync(thread_id, pause, "completed", None, new)
        return thread_view(synced.thread, pause.values, synced.pending, synced.decided)


def _nodes_not_in(saved: CheckpointTuple | None, snapshot: StateSnapshot, nodes: set[str]) -> Sequence[str]:
    """Nodes the thread ran (the checkpoint's `versions_seen` is keyed by node) or stands at
    that the graph does not have."""
    ran = saved.checkpoint.get("versions_seen", {}) if saved is not None else {}
    at = {*ran, *snapshot.next, *(task.name for task in snapshot.tasks)}
    return [n for n in at if n not in nodes and not n.startswith("__")]

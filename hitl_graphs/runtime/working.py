"""Decisions recorded now and applied elsewhere: `Runner.decide` and the worker loop (`Runner.work`).

`resume` records a decision and runs the graph on in the caller's process: what a person at a
terminal wants (the answer shows what happened). A reviewer's request to an HTTP server, or a
CLI on a laptop, should not wait for an agent's next model calls, and should not need the
agent's code at all. `decide` records the decision with every check `resume` makes (one winner,
audit entry, refusal leaving the thread as it was) and returns at once; the thread stays paused
holding the decision, and a worker (`work`, `hitl worker`) on any machine applies it: the same
path `recover` takes with a decision a crash left, so nothing new can go wrong in between.

The worker takes threads one at a time from the store's queue (`WorkQueue.take_decided`:
`FOR UPDATE SKIP LOCKED` on PostgreSQL), applies expired deadlines (`sweep`), and now and then
runs `recover` for what crashed runs and failed steps left. Idle, it sleeps until the database
announces work (PostgreSQL `LISTEN/NOTIFY`) or, where it cannot (SQLite), polls.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hitl_graphs.decisions import Decision, DecisionDict, decision_from
from hitl_graphs.registry import registered
from hitl_graphs.reviews import ThreadView
from hitl_graphs.runtime.driver import Flow, adrive, call, drive
from hitl_graphs.runtime.support import log
from hitl_graphs.storage.base import ThreadRow

if TYPE_CHECKING:
    from hitl_graphs.runtime.host import RunnerHost as Runner  # a Protocol: the type of `self` in a part (host.py says why)


class WorkFlows:
    """Deferred decisions and the worker loop. (A part of `Runner`.)"""

    def decide(
        self: Runner,
        thread_id: str,
        decision: Decision | DecisionDict | Mapping[str, Any] | str,
        *,
        review_id: str | None = None,
        roles: Sequence[str] = (),
    ) -> ThreadView:
        """Record a decision without running the graph on: a worker (`work`, `hitl worker`) applies it.

        Every check of `resume` runs first and refuses the same way (nothing recorded); the
        returned view is the thread paused, with the review in `awaiting_recovery` until a worker
        has applied it. Use `resume` when the caller wants to see what the decision led to.

        Example:
            >>> from hitl_graphs import Approve, Runner
            >>> from hitl_graphs.examples import email_workflow
            >>> with Runner.open(":memory:", workflows=[email_workflow()]) as runner:
            ...     paused = runner.start("email", {"to": "ana@example.com", "topic": "lunch"})
            ...     view = runner.decide(paused.thread_id, Approve(actor="ana"))
            ...     view.status, len(view.awaiting_recovery), runner.work(once=True)
            ...     runner.show(paused.thread_id).state["sent"]
            ('paused', 1, 1)
            True
        """
        return drive(self._resume(thread_id, decision_from(decision, stacklevel=2), review_id, tuple(roles), True))

    async def adecide(
        self: Runner,
        thread_id: str,
        decision: Decision | DecisionDict | Mapping[str, Any] | str,
        *,
        review_id: str | None = None,
        roles: Sequence[str] = (),
    ) -> ThreadView:
        """Async `decide`."""
        return await adrive(self._resume(thread_id, decision_from(decision, stacklevel=2), review_id, tuple(roles), True))

    def work(
        self: Runner,
        *,
        once: bool = False,
        idle: float = 30.0,
        poll: float = 1.0,
        stop: threading.Event | None = None,
        on_done: Callable[[ThreadView], None] | None = None,
    ) -> int:
        """Apply decided reviews and expired deadlines until `stop` is set (or, with `once`, what
        is there now); returns how many threads it moved on.

        Args:
            once: Take what waits now, sweep, recover, and return.
            idle: Seconds between two `recover` passes (crashed runs, failed steps), and the
                longest sleep where the database announces work (PostgreSQL).
            poll: Seconds between looks where it does not (SQLite).
            stop: Set it (from a signal handler, another thread) to stop after the current thread.
            on_done: Called with each thread's view once the worker has moved it on.
        """
        queue = self.store.queue
        queue.wait(0)  # listen before the first look: nothing announced from now on is missed
        done = 0
        last_recover = float("-inf")

        def report(views: Sequence[ThreadView]) -> int:
            for view in views:
                if on_done is not None:
                    on_done(view)
            return len(views)

        while stop is None or not stop.is_set():
            done += report(drive(self._drain(stop)))
            done += report(self.sweep())
            if once or time.monotonic() - last_recover >= idle:
                done += report(self.recover())
                last_recover = time.monotonic()
            if once:
                break
            self._idle(idle if queue.announces else poll, stop)
        return done

    def _idle(self: Runner, longest: float, stop: threading.Event | None) -> None:
        """Sleep until the database announces work, the next deadline, `longest` seconds, or `stop`."""
        deadline = self.store.queue.next_deadline()
        until = time.time() + longest if deadline is None else min(time.time() + longest, deadline + 0.01)
        while (stop is None or not stop.is_set()) and (left := until - time.time()) > 0:
            if self.store.queue.wait(min(left, 0.5)):  # short steps: a stop is noticed within half a second
                return

    def _drain(self: Runner, stop: threading.Event | None = None) -> Flow[list[ThreadView]]:
        """Take decided threads one by one (never one another worker holds) and apply each."""
        names = sorted(self._workflows) if self._workflows is not None else sorted(registered())
        views: list[ThreadView] = []
        while stop is None or not stop.is_set():
            with self.store.marks.hold() as owner:
                taken: str | None = yield from call(self.store.queue.take_decided, owner=owner, lease=self.lease,
                                                    workflows=names)
                if taken is None:
                    break
                row: ThreadRow | None = yield from call(self.ledger.thread, taken)
                assert row is not None
                try:
                    views.append((yield from self._recover_taken(taken, row.workflow)))
                except Exception as exc:  # the thread is marked failed with its error; take the next
                    log.warning("applying the decision of thread %s failed: %s: %s", taken, type(exc).__name__, exc)
                    views.append((yield from self._show(taken)))
        return views

"""What crashes and failed steps leave: recorded decisions applied, stalled runs continued, failed steps retried.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from hitl_graphs.decisions import (
    parse_decision,
)
from hitl_graphs.errors import (
    NoPendingReviewError,
    ThreadBusyError,
)
from hitl_graphs.audit import Event
from hitl_graphs.storage.base import ReviewRow, ThreadRow
from hitl_graphs.reviews import ThreadView
from hitl_graphs.runtime.driver import (
    Flow,
    call,
)
from hitl_graphs.runtime.support import (
    log,
    outcome_of,
    waiting_for_batch,
)

if TYPE_CHECKING:
    from hitl_graphs.runtime.host import RunnerHost as Runner  # a Protocol: the type of `self` in a part (host.py says why)



class RecoverFlows:
    """What crashes and failed steps leave: recorded decisions applied, stalled runs continued, failed steps retried. (A part of `Runner`.)"""

    def _recover(self: Runner) -> Flow[list[ThreadView]]:
        reconciled = yield from self._reconcile_stale()
        views: list[ThreadView] = []
        decided: list[str] = yield from call(self.ledger.threads_with_decided_reviews)
        failed: list[ThreadRow] = yield from call(self.ledger.threads_in, "failed")
        for thread_id in [*decided, *(r.thread_id for r in failed if r.thread_id not in decided)]:
            try:
                view = yield from self._recover_one(thread_id)
            except Exception as exc:  # the thread is marked failed with its error; recover the others
                log.warning("recovering thread %s failed: %s: %s", thread_id, type(exc).__name__, exc)
                view = yield from self._show(thread_id)
            if view is not None:
                views.append(view)
        # a thread the reconcile alone settled (its run had ended, unrecorded) is listed; one that
        # still held a decision is listed by whoever applied it, once
        seen = {v.thread_id for v in views}
        return [v for v in reconciled if v.thread_id not in seen and not v.awaiting_recovery] + views

    def _refuse_unaudited(self: Runner, thread_id: str, review: ReviewRow, recorded: dict[str, Any] | None) -> Flow[ThreadView]:
        """A decision in the ledger that the audit log does not record is not applied: someone
        wrote it there directly. The thread is marked failed for a person to look at."""
        what = "has no audit record" if recorded is None else "differs from the one its audit record holds"
        message = (f"the decision of review {review.review_id!r} in the ledger {what}; it was not applied (the database "
                   "was edited?): check `hitl audit verify`, then `hitl cancel` the thread or decide it anew")
        refused = Event("refused_unaudited", review.review_id, data={"ledger": review.decision, "audit": recorded})
        yield from call(self.ledger.fail_thread, thread_id, message, [refused])
        return (yield from self._show(thread_id))

    def _retry(self: Runner, thread_id: str, actor: str | None) -> Flow[ThreadView]:
        row = yield from self._thread(thread_id)
        if self.ledger.alive(row):
            raise ThreadBusyError(f"thread {thread_id!r} is being run by another process ({row.owner}); retry once it stops")
        if row.status != "failed":
            raise NoPendingReviewError(f"thread {thread_id!r} has not failed (status {row.status}); nothing to retry")
        yield from call(self.ledger.add_events, thread_id, [Event("retry_requested", actor=actor)])
        view = yield from self._recover_one(thread_id, forced=True)
        if view is None:
            raise ThreadBusyError(f"thread {thread_id!r} was taken by another process meanwhile; `hitl show` has its status")
        return view

    def _recover_one(self: Runner, thread_id: str, *, forced: bool = False) -> Flow[ThreadView | None]:
        """Finish one thread a crash or an error left: apply its recorded decision, continue a
        stalled run, run a step that raised again (at most `max_attempts` times unless `forced`),
        or run a start killed before its first checkpoint again from its input."""
        row: ThreadRow | None = yield from call(self.ledger.thread, thread_id)
        if row is None or row.status == "done" or not self._knows(row.workflow) or self.ledger.alive(row):
            return None  # (done: another process finished it after the caller listed it)
        if row.status == "failed" and not forced:
            attempts: int = yield from call(self.ledger.recover_attempts, thread_id)
            if attempts >= self.max_attempts:
                return None  # left for a person: `hitl show` says so, `hitl retry` tries again
        if row.status == "paused" and not forced:
            decided: list[ReviewRow] = yield from call(self.ledger.reviews, thread_id, ("decided",))
            pending: list[ReviewRow] = yield from call(self.ledger.reviews, thread_id, ("pending",))
            if {r.review_id for r in decided} <= waiting_for_batch([r.request for r in pending]):
                return None  # decisions of a batch whose other actions still wait for a person: nothing to run
        with self.store.marks.hold() as owner:
            try:  # still as read above: a thread another process finished meanwhile is not taken again
                yield from call(self.ledger.take_thread, thread_id, owner=owner, lease_until=time.time() + self.lease,
                                expect=(row.status,))
            except (ThreadBusyError, NoPendingReviewError):
                return None  # another process is recovering it right now, or has since moved it on
            return (yield from self._recover_taken(thread_id, row.workflow))

    def _recover_taken(self: Runner, thread_id: str, workflow: str) -> Flow[ThreadView]:
        """`_recover_one` on a thread this run has taken (`take_thread`, or a worker's `take_decided`)."""
        wf, graph = self.workflow(workflow), self.graph(workflow)
        reviews: list[ReviewRow] = yield from call(self.ledger.reviews, thread_id, ("decided",))
        review = reviews[0] if reviews else None
        pause = yield from self._read(wf, graph, thread_id)
        outcome = outcome_of(review) if review is not None else "completed"
        about: dict[str, Any] = {}
        input: Any = None
        if review is not None and review.review_id in {r.review_id for r in pause.reviews}:
            about = {"apply": review.review_id}
        elif pause.stalled_at:
            about = {"stalled_at": list(pause.stalled_at)}
        elif pause.error:
            about = {"retry": pause.error}
        elif review is None and pause.checkpoint_id is None:
            input = yield from call(self.ledger.started_input, thread_id)
            about = {"from": "input"}
        if "apply" in about and review is not None:
            recorded = yield from call(self.store.audit.recorded_decision, thread_id, review.review_id)
            if recorded is None or recorded != review.decision:
                return (yield from self._refuse_unaudited(thread_id, review, recorded))
        if not about or (about.get("from") == "input" and input is None):
            # nothing to run: the graph took the decision before the crash, or there is
            # nothing to run again; only the ledger had not heard where the thread stands
            return (yield from self._settle(wf, graph, thread_id, outcome_if_done=outcome, pause=pause))
        recovering = Event("recovering", review.review_id if review else None, data=about)
        yield from call(self.ledger.add_events, thread_id, [recovering])
        if "apply" in about:
            assert review is not None
            return (yield from self._apply(wf, graph, thread_id, review, parse_decision(review.decision or {})))
        return (yield from self._run(wf, graph, thread_id, input, outcome_if_done=outcome))

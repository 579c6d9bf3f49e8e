"""Deadlines: the sweep applies default decisions; waiting for a decision in-process.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from hitl_graphs.decisions import (
    decision_to_json,
    parse_decision,
)
from hitl_graphs.errors import (
    AlreadyDecidedError,
    ReviewNotPendingError,
    ThreadBusyError,
)
from hitl_graphs.storage.base import ReviewRow
from hitl_graphs.reviews import ThreadView
from hitl_graphs.runtime.driver import (
    Flow,
    Sleep,
    call,
)
from hitl_graphs.runtime.support import (
    log,
)

if TYPE_CHECKING:
    from hitl_graphs.runtime.host import RunnerHost as Runner  # a Protocol: the type of `self` in a part (host.py says why)



class DeadlineFlows:
    """Deadlines: the sweep applies default decisions; waiting for a decision in-process. (A part of `Runner`.)"""

    def _sweep(self: Runner) -> Flow[list[ThreadView]]:
        due: list[ReviewRow] = yield from call(self.ledger.due, time.time())
        views: list[ThreadView] = []
        for review in due:
            view = yield from self._default(review, "hitl:deadline", by_deadline=True)
            if view is not None:
                views.append(view)
        return views

    def _default(self: Runner, review: ReviewRow, actor: str, *, by_deadline: bool) -> Flow[ThreadView | None]:
        """Claim and apply a review's default decision; None if a person (or another sweeper) won."""
        request = review.request
        if not self._knows(request.workflow):
            return None
        default = request.default_decision or {"kind": "reject", "reason": "no decision in time"}
        decision = parse_decision({**default, "actor": actor})
        with self.store.marks.hold() as owner:
            try:
                yield from call(self.ledger.claim, request.thread_id, review.review_id, decision_to_json(decision), owner=owner,
                                lease_until=time.time() + self.lease, by_deadline=by_deadline)
            except (AlreadyDecidedError, ReviewNotPendingError, ThreadBusyError):
                return None
            wf, graph = self.workflow(request.workflow), self.graph(request.workflow)
            try:
                return (yield from self._apply(wf, graph, request.thread_id, review, decision))
            except Exception:  # the thread is marked failed; one bad graph must not stop the sweep
                log.exception("applying the default decision of review %s failed", review.review_id)
                return None

    def _wait(self: Runner, thread_id: str, review_id: str | None, timeout: float, poll: float) -> Flow[ThreadView]:
        row = yield from self._thread(thread_id)
        end = time.monotonic() + timeout
        pending: list[ReviewRow] = yield from call(self.ledger.reviews, thread_id, ("pending",))
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
                yield Sleep(poll)
        while True:
            now: ReviewRow | None = yield from call(self.ledger.review, thread_id, review.review_id)
            row = yield from self._thread(thread_id)
            if now is not None and now.status != "pending" and row.status != "running":
                return (yield from self._view(row))
            if now is not None and now.status == "pending" and time.monotonic() >= end:
                expired = review.request.deadline is not None and review.request.deadline.timestamp() <= time.time()
                view = yield from self._default(now, "hitl:timeout", by_deadline=expired)
                if view is not None:
                    return view
            yield Sleep(poll)

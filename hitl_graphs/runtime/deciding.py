"""A person's decision: admitted against what is pending, claimed once, applied.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, assert_never

from langgraph.constants import END
from langgraph.types import Command

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
from hitl_graphs.errors import (
    AlreadyDecidedError,
    DecisionError,
    InvalidDecisionError,
    NoPendingReviewError,
    ResumeRefusedError,
    ReviewNotPendingError,
    StaleReviewError,
    ThreadBusyError,
    UnknownReviewError,
)
from hitl_graphs.audit import Event
from hitl_graphs.gate import to_json
from hitl_graphs.interop import langchain_agents
from hitl_graphs.storage.base import AtDecision, ReviewRow, ThreadRow
from hitl_graphs.patches import check_needs
from hitl_graphs.pauses import is_plain_interrupt
from hitl_graphs.registry import Workflow
from hitl_graphs.reviews import Outcome, ReviewRequest, ThreadView
from hitl_graphs.review_refs import describe, match_reviews, not_pending, pick_review, review_ref
from hitl_graphs.runtime.admission import (
    admit,
    replaced_values,
)
from hitl_graphs.runtime.driver import (
    Flow,
    StreamClosed,
    UpdateState,
    call,
)
from hitl_graphs.runtime.support import (
    Graph,
    run_config,
)

if TYPE_CHECKING:
    from hitl_graphs.runtime.host import RunnerHost as Runner  # a Protocol: the type of `self` in a part (host.py says why)



class DecideFlows:
    """A person's decision: admitted against what is pending, claimed once, applied. (A part of `Runner`.)"""

    def _resume(self: Runner, thread_id: str, raw: Decision | Mapping[str, Any] | str, review_id: str | None, roles: tuple[str, ...],
                defer: bool = False) -> Flow[ThreadView]:
        asked_at = time.time()
        decision = parse_decision(raw)
        # the thread, its pending reviews and its latest checkpoint id in one read (one round trip
        # on a server); a thread that is missing or whose run died takes the long way (`_thread`)
        at: AtDecision | None = yield from call(self.store.at_decision, thread_id)
        row = at.thread if at is not None else None
        if row is None or self._died(row):
            row, at = (yield from self._thread(thread_id)), None
        try:
            return (yield from self._decide(row, decision, review_id, roles, asked_at, defer, at))
        except (DecisionError, NoPendingReviewError, ThreadBusyError) as exc:
            refused = Event("refused", review_id, decision.actor, {"kind": decision.kind, "error": str(exc)})
            yield from call(self.ledger.add_events, thread_id, [refused])
            raise

    def _decide(self: Runner, row: ThreadRow, decision: Decision, review_id: str | None, roles: tuple[str, ...], asked_at: float,
                defer: bool = False, at: AtDecision | None = None) -> Flow[ThreadView]:
        thread_id = row.thread_id
        wf = self.workflow(row.workflow)
        graph = self.graph(row.workflow)
        if self.ledger.alive(row):  # what is pending is about to change: the person has not seen it
            decided = yield from call(self.ledger.reviews, thread_id, ("decided",))
            if not decided:
                raise ThreadBusyError(f"thread {thread_id!r} is being run by another process ({row.owner}); "
                                      f"look again once it pauses (`hitl show {thread_id}`)")
        pending: list[ReviewRow] = at.pending if at is not None else (yield from call(self.ledger.reviews, thread_id, ("pending",)))
        if not pending:
            yield from self._explain_nothing_pending(row, review_id)
        review = yield from self._pick(row, pending, review_id)
        if review_id is None and review.request.created_at.timestamp() > asked_at:
            # the thread moved on between the call and our read: this is not what the caller saw
            raise StaleReviewError(
                f"thread {thread_id!r} paused again at review {review_ref(review.request)!r} after this decision was "
                f"asked for; nothing was decided: look at it (`hitl show {thread_id}`) and pass its review id"
            )
        clean = admit(decision, review.request, graph, roles=roles, started_by=row.started_by)
        values: Any = None
        latest: str | None = at.latest_checkpoint_id if at is not None else (yield from call(self.store.latest_checkpoint_id, thread_id))
        state_patch = isinstance(clean, Modify) and review.request.patch_target == "state"
        if latest is None or latest != review.checkpoint_id or state_patch:
            # the checkpoint moved since the ledger recorded the review (or we need its values):
            # read it, and make sure the review still waits there, showing the same payload
            values = yield from self._check_still_pending(wf, graph, row, review)
        if isinstance(clean, Modify):  # what the node needs of the patch, before anything is recorded
            check_needs(clean.patch, review.request, graph=graph, model=wf.patch_model, values=values)
        resume_value(wf, review.request, clean)  # a converter that raises refuses the decision here
        with self.store.marks.hold() as owner:
            yield from call(self.ledger.claim, thread_id, review.review_id, decision_to_json(clean), owner=owner,
                            lease_until=time.time() + self.lease, record=replaced_values(clean, review.request, values))
            if defer:  # recorded, not run: the ledger notes the thread paused with a decision, which a worker takes
                return (yield from self._settle(wf, graph, thread_id, outcome_if_done="completed"))
            return (yield from self._apply(wf, graph, thread_id, review, clean))

    def _check_still_pending(self: Runner, wf: Workflow, graph: Graph, row: ThreadRow, review: ReviewRow) -> Flow[Any]:
        thread_id = row.thread_id
        pause = yield from self._read(wf, graph, thread_id)
        current = {r.review_id: r for r in pause.reviews}.get(review.review_id)
        if current is None:
            # decided by a racing process since we read the ledger, or answered outside the runner
            yield from self._refuse_decided(row, review.review_id)
            now_row: ThreadRow | None = yield from call(self.ledger.thread, thread_id)
            if now_row is not None and not self.ledger.alive(now_row):
                yield from self._sync(thread_id, pause, "completed", None)
            raise ReviewNotPendingError(
                f"review {review_ref(review.request)!r} is no longer pending on thread {thread_id!r}: the thread moved on "
                "outside this runner; `hitl show` has its current reviews"
            )
        if current.payload_hash != review.request.payload_hash:
            raise StaleReviewError(
                f"what review {review_ref(review.request)!r} shows has changed since it was listed; look again (`hitl show {thread_id}`)"
            )
        return pause.values

    def _pick(self: Runner, row: ThreadRow, pending: list[ReviewRow], review_id: str | None) -> Flow[ReviewRow]:
        # one naming scheme with `pending`, `show` and the CLI: see hitl_graphs.review_refs
        requests = [r.request for r in pending]
        if review_id is None:
            if len(pending) == 1:
                return pending[0]
            raise ReviewNotPendingError(
                f"thread {row.thread_id!r} has {len(pending)} pending reviews; pass a review id (`--review`), "
                f"as `hitl pending` shows it: {describe(requests)}"
            )
        picked = pick_review(requests, review_id, row.thread_id)
        if picked is not None:
            return next(r for r in pending if r.review_id == picked.review_id)
        yield from self._refuse_decided(row, review_id)
        raise not_pending(review_id, row.thread_id, requests)

    def _refuse_decided(self: Runner, row: ThreadRow, review_id: str) -> Flow[None]:
        others: list[ReviewRow] = yield from call(
            self.ledger.reviews, row.thread_id, ("decided", "applied", "cancelled", "superseded"))
        named = {r.review_id for r in match_reviews([o.request for o in others], review_id)}
        for r in others:
            if r.review_id in named:
                if r.status in ("cancelled", "superseded"):
                    raise ReviewNotPendingError(f"review {review_ref(r.request)!r} of thread {row.thread_id!r} was {r.status}")
                who = f" by {r.decision.get('actor')}" if r.decision and r.decision.get("actor") else ""
                kind = r.decision.get("kind") if r.decision else "?"
                raise AlreadyDecidedError(f"review {review_ref(r.request)!r} of thread {row.thread_id!r} was already decided ({kind}{who})")

    def _explain_nothing_pending(self: Runner, row: ThreadRow, review_id: str | None) -> Flow[None]:
        fresh: ThreadRow | None = yield from call(self.ledger.thread, row.thread_id)  # a racer may have finished it
        row = fresh or row
        busy = self.ledger.alive(row)
        decided: list[ReviewRow] = yield from call(self.ledger.reviews, row.thread_id, ("decided",))
        if decided:
            d = decided[0].decision or {}
            state = "is being applied by another process" if busy else "awaits recovery; run `hitl recover`"
            raise AlreadyDecidedError(
                f"thread {row.thread_id!r}: review {review_ref(decided[0].request)!r} was already decided ({d.get('kind')}"
                f"{' by ' + d['actor'] if d.get('actor') else ''}) and {state}"
            )
        if busy:
            raise ThreadBusyError(f"thread {row.thread_id!r} is being run by another process ({row.owner}); retry once it pauses")
        if review_id is not None:
            yield from self._refuse_decided(row, review_id)
        if row.status in ("done", "failed"):
            applied: list[ReviewRow] = yield from call(self.ledger.reviews, row.thread_id, ("applied",))
            if applied:
                last = max(applied, key=lambda r: r.decided_at or 0.0)
                d = last.decision or {}
                ended = f"ended ({row.outcome})" if row.status == "done" else f"failed: {row.error}"
                raise AlreadyDecidedError(
                    f"thread {row.thread_id!r} has no pending review: its last review {review_ref(last.request)!r} was already "
                    f"decided ({d.get('kind')}{' by ' + d['actor'] if d.get('actor') else ''}) and the thread {ended}"
                )
        if row.status == "done":
            raise NoPendingReviewError(f"thread {row.thread_id!r} has no pending review; it ended ({row.outcome})")
        if row.status == "failed":
            raise NoPendingReviewError(f"thread {row.thread_id!r} has no pending review; it failed: {row.error}")
        if review_id is not None:
            raise UnknownReviewError(f"review {review_id!r} is not pending on thread {row.thread_id!r}; nothing is")
        raise NoPendingReviewError(f"thread {row.thread_id!r} has no pending review (status {row.status})")

    def _apply(self: Runner, wf: Workflow, graph: Graph, thread_id: str, review: ReviewRow, decision: Decision) -> Flow[ThreadView]:
        """Run the graph on with a claimed decision (also what `recover` does with a recorded one).

        The caller has checked that the review is still pending in the latest checkpoint.
        """
        config = run_config(thread_id)
        request = review.request
        outcome: Outcome = "rejected" if isinstance(decision, Reject) and request.middleware is None else "completed"
        if request.middleware is not None and request.middleware.mode == "batched":
            return (yield from self._apply_batch(wf, graph, thread_id, request.middleware.interrupt_id))
        if request.source == "interrupt":
            patch = decision.patch if isinstance(decision, Modify) and request.patch_target == "state" else None
            command: Command[str] = Command(resume={review.review_id: resume_value(wf, request, decision)}, update=patch)
            if not is_plain_interrupt(request):
                return (yield from self._run(wf, graph, thread_id, command, outcome_if_done=outcome))
            try:
                return (yield from self._run(wf, graph, thread_id, command, outcome_if_done=outcome))
            except Exception as exc:
                if not isinstance(exc, StreamClosed):  # a reader who stopped is no refusal of the value
                    yield from self._release(wf, graph, thread_id, review, exc)
                raise
        update: dict[str, Any]
        match decision:
            case Approve():
                update = dict(wf.on_approve)
            case Modify(patch=patch):
                update = {**wf.on_approve, **patch}
            case Reject(reason=reason):
                if wf.on_reject is None:
                    yield UpdateState(graph, config, None, END)
                    return (yield from self._settle(wf, graph, thread_id, outcome_if_done="rejected"))
                update = dict(wf.on_reject)
                if wf.reason_field:
                    update[wf.reason_field] = reason
            case Respond() | Escalate():  # a breakpoint review allows approve, modify and reject only
                raise InvalidDecisionError(f"a static breakpoint cannot take {decision.kind!r}")
            case _:
                assert_never(decision)
        return (yield from self._run(wf, graph, thread_id, Command(update=update) if update else None, outcome_if_done=outcome))

    def _apply_batch(self: Runner, wf: Workflow, graph: Graph, thread_id: str, interrupt_id: str) -> Flow[ThreadView]:
        """Hand a LangChain middleware its batch once every action has a decision; until then the
        thread goes back to paused, the decisions given so far kept (`decided`) in the ledger.

        The caller holds the thread (a claim, or recover), so no other decision of the batch can
        land meanwhile: whoever records the last one resumes it."""
        decided: list[ReviewRow] = yield from call(self.ledger.reviews, thread_id, ("decided",))
        mine = [r for r in decided if r.request.middleware is not None and r.request.middleware.interrupt_id == interrupt_id]
        size = mine[0].request.middleware.size if mine and mine[0].request.middleware else 0
        if len(mine) < size:  # the rest of the batch still waits for a person
            return (yield from self._settle(wf, graph, thread_id, outcome_if_done="completed"))
        value = langchain_agents.batch_answer((r.request, parse_decision(r.decision or {})) for r in mine)
        return (yield from self._run(wf, graph, thread_id, Command(resume={interrupt_id: value}), outcome_if_done="completed"))

    def _release(self: Runner, wf: Workflow, graph: Graph, thread_id: str, review: ReviewRow, error: Exception) -> Flow[None]:
        """A plain `interrupt()` raised on the value its decision resumed it with, and still waits
        in the checkpoint: release the decision and ask again, rather than leave the thread holding
        a decision the graph refuses each time `recover` applies it.

        LangGraph keeps a resume value once given to a pending interrupt, so the checkpoint is
        forked (`update_state(..., as_node="__copy__")`: the same values, none of the failed
        attempt's writes) and run: the node reaches its `interrupt()` again, a new review."""
        pause = yield from self._read(wf, graph, thread_id)
        if review.review_id not in {r.review_id for r in pause.reviews}:
            return  # the graph moved past the interrupt: a step after it failed; `recover` retries it
        what = f"{type(error).__name__}: {error}"
        yield UpdateState(graph, run_config(thread_id), None, "__copy__")
        yield from call(self.ledger.release, thread_id, review.review_id, what)
        again = yield from self._run(wf, graph, thread_id, None, outcome_if_done="completed")
        asks = (f"it asks again as review {again.reviews[0].review_id!r}" if again.reviews else
                f"the thread is {again.status} (`hitl show {thread_id}`)")
        shape = ("its `Workflow(resume_value=...)`" if wf.resume_value is not None else
                 "the decision as JSON (`{'kind': 'approve', ...}`); say what its interrupt() expects with "
                 "`Workflow(resume_value=lambda d: ...)`")
        raise ResumeRefusedError(
            f"node {review.request.node!r} of thread {thread_id!r} raised {what} on the value it was resumed with, "
            f"{shape}; the node did not finish and the decision was released: {asks}"
        ) from error

    def _cancel(self: Runner, thread_id: str, actor: str | None, reason: str | None) -> Flow[ThreadView]:
        row = yield from self._thread(thread_id)
        graph = self.graph(row.workflow)
        if row.status == "done":
            raise NoPendingReviewError(f"thread {thread_id!r} already ended ({row.outcome}); nothing to cancel")
        with self.store.marks.hold() as owner:
            # the status is read again under the write lock: a decision applied meanwhile wins
            yield from call(self.ledger.take_thread, thread_id, owner=owner, lease_until=time.time() + self.lease,
                            expect=("paused", "failed"))
            waiting: list[ReviewRow] = yield from call(self.ledger.reviews, thread_id, ("pending",))
            yield UpdateState(graph, run_config(thread_id), None, END)
            where = [{"review_id": r.review_id, "node": r.request.node, "position": r.request.position} for r in waiting]
            cancel = Event("cancel_requested", actor=actor, data={"reason": reason, "at": where})
            yield from call(self.ledger.add_events, thread_id, [cancel])
            return (yield from self._settle(self.workflow(row.workflow), graph, thread_id, outcome_if_done="cancelled"))


def resume_value(wf: Workflow, request: ReviewRequest, decision: Decision) -> Any:
    """What `interrupt()` returns for this decision: the workflow's `resume_value` for a plain
    interrupt of its graph, the middleware's own decision for a LangChain agent's review (one
    action of a batch: what its place in `{"decisions": [...]}` will hold), else the decision as
    JSON (what `request_review` reads back).

    Raises:
        InvalidDecisionError: the workflow's `resume_value` raised on the decision.
    """
    if request.middleware is not None:  # LangChain's HumanInTheLoopMiddleware reads its own shape
        return langchain_agents.answer(request, decision)
    if wf.resume_value is None or not is_plain_interrupt(request):
        return decision_to_json(decision)
    try:
        return to_json(wf.resume_value(decision))
    except Exception as exc:
        raise InvalidDecisionError(
            f"workflow {wf.name!r}: its resume_value raised {type(exc).__name__}: {exc} on this {decision.kind!r} "
            "decision; nothing was recorded"
        ) from exc

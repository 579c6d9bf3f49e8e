"""The store contract: what every backend promises the runtime, run on each backend.

A backend is done when this suite passes on it (as LangGraph holds each saver to its
conformance tests). The tests talk to the `Store` boundary only: no SQL, no backend types. Two
handles on one database (`store`, `other`) stand for two processes.
"""

from __future__ import annotations

import asyncio

import io
import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hitl_graphs.audit import AuditHead, Event
from hitl_graphs.errors import (
    AlreadyDecidedError,
    NoPendingReviewError,
    ReviewExpiredError,
    ReviewNotPendingError,
    ThreadBusyError,
    ThreadExistsError,
)
from hitl_graphs.feedback import Feedback
from hitl_graphs.reviews import ReviewRequest
from hitl_graphs.storage import DeliveryRow, Store, open_store

Opener = Callable[[], Store]


def _sqlite(tmp_path: Path) -> str:
    return str(tmp_path / "contract.sqlite")


def _postgres(request: pytest.FixtureRequest) -> str:
    """A fresh database on the session's throwaway server (tests/pg_server.py)."""
    url: str = request.getfixturevalue("pg_db_url")
    return url


BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], str]] = {
    "sqlite": lambda request, tmp_path: _sqlite(tmp_path),
    "postgres": lambda request, tmp_path: _postgres(request),
}
"""name -> a function giving a fresh, empty database's location for one test."""


@pytest.fixture(params=sorted(BACKENDS))
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return BACKENDS[request.param](request, tmp_path)


@pytest.fixture
def opener(location: str) -> Iterator[Opener]:
    opened: list[Store] = []

    def open_one() -> Store:
        opened.append(open_store(location))
        return opened[-1]

    yield open_one
    for s in opened:
        s.close()


@pytest.fixture
def store(opener: Opener) -> Store:
    return opener()


@pytest.fixture
def other(opener: Opener, store: Store) -> Store:
    """A second handle on the same database: another process, as far as the store can tell."""
    return opener()


def review(thread_id: str, review_id: str, *, workflow: str = "wf", created: float = 0.0, role: str | None = None,
           deadline: datetime | None = None) -> ReviewRequest:
    return ReviewRequest(
        review_id=review_id, thread_id=thread_id, workflow=workflow, node="send", position="before", kind="gate",
        title=f"Send {review_id}?", payload={"n": review_id}, allowed=("approve", "modify", "reject"), editable=("n",),
        source="interrupt", created_at=datetime.fromtimestamp(1_700_000_000 + created, UTC), required_role=role,
        deadline=deadline,
    )


def paused(store: Store, thread_id: str, *reviews: ReviewRequest, workflow: str = "wf", actor: str | None = None) -> None:
    """A thread started and paused at `reviews`, as the runner records it."""
    with store.marks.hold() as owner:
        store.ledger.create_thread(thread_id, workflow, owner=owner, lease_until=time.time() + 60,
                                   data={"input": {"to": thread_id}}, actor=actor)
        store.ledger.sync(thread_id, status="paused", outcome=None, error=None, pending=[(r, "ck1") for r in reviews])


def claim(store: Store, thread_id: str, review_id: str, actor: str = "ana", **kw: Any) -> None:
    with store.marks.hold() as owner:
        store.ledger.claim(thread_id, review_id, {"kind": "approve", "actor": actor}, owner=owner,
                           lease_until=time.time() + 60, **kw)


# -- threads -------------------------------------------------------------------------------------


def test_a_thread_is_recorded_once_and_read_back(store: Store, other: Store) -> None:
    paused(store, "t1", review("t1", "r1"), actor="bob")
    row = other.ledger.thread("t1")
    assert row is not None and (row.workflow, row.status, row.started_by, row.owner) == ("wf", "paused", "bob", None)
    assert other.ledger.started_input("t1") == {"to": "t1"}
    entries = len(other.ledger.history("t1"))
    with pytest.raises(ThreadExistsError, match="thread 't1' already exists"):
        other.ledger.create_thread("t1", "wf", owner="x", lease_until=time.time() + 60, data={}, input={"to": "eve"})
    # the refused start changed nothing: not the input kept for recovery, not the history
    assert other.ledger.started_input("t1") == {"to": "t1"} and len(other.ledger.history("t1")) == entries
    assert other.ledger.thread("nope") is None


def test_a_live_run_holds_its_thread_against_other_processes(store: Store, other: Store) -> None:
    paused(store, "t1", review("t1", "r1"))
    with store.marks.hold() as owner:
        store.ledger.take_thread("t1", owner=owner, lease_until=time.time() + 60)
        row = other.ledger.thread("t1")
        assert row is not None and other.ledger.alive(row)
        with other.marks.hold() as owner2, pytest.raises(ThreadBusyError, match="being run by another process"):
            other.ledger.take_thread("t1", owner=owner2, lease_until=time.time() + 60)
    # the run ended without recording it (a crash): its lease says nothing, its mark is gone
    row = other.ledger.thread("t1")
    assert row is not None and not other.ledger.alive(row)
    with other.marks.hold() as owner2:
        assert other.ledger.take_thread("t1", owner=owner2, lease_until=time.time() + 60).status == "running"


def test_take_thread_with_expect_reads_the_status_under_the_lock(store: Store) -> None:
    paused(store, "t1", review("t1", "r1"))
    store.ledger.sync("t1", status="done", outcome="completed", error=None, pending=[])
    with store.marks.hold() as owner, pytest.raises(NoPendingReviewError, match="is done .completed., not paused"):
        store.ledger.take_thread("t1", owner=owner, lease_until=time.time() + 60, expect=("paused",))
    row = store.ledger.thread("t1")
    assert row is not None and (row.status, row.outcome) == ("done", "completed")


# -- reviews: listing and claiming ---------------------------------------------------------------


def test_pending_lists_oldest_first_by_workflow_and_role(store: Store) -> None:
    paused(store, "t1", review("t1", "r2", created=2), review("t1", "r1", created=1))
    paused(store, "t2", review("t2", "r3", created=3, workflow="other", role="manager"), workflow="other")
    assert [r.review_id for r in store.ledger.pending()] == ["r1", "r2", "r3"]
    assert [r.review_id for r in store.ledger.pending(workflow="other")] == ["r3"]
    assert [r.review_id for r in store.ledger.pending(roles=[])] == ["r1", "r2"]
    assert [r.review_id for r in store.ledger.pending(roles=["manager"])] == ["r1", "r2", "r3"]
    assert [r.review_id for r in store.ledger.pending(limit=1, offset=1)] == ["r2"]
    assert store.ledger.pending()[0] == review("t1", "r1", created=1)  # what was shown comes back unchanged


def test_exactly_one_of_many_racing_claims_wins(store: Store, opener: Opener) -> None:
    paused(store, "t1", review("t1", "r1"))
    handles = [opener() for _ in range(4)]
    results: list[str] = []
    start = threading.Barrier(len(handles))

    def decide(h: Store, who: str) -> None:
        start.wait()
        try:
            claim(h, "t1", "r1", actor=who)
            results.append("won")
        except (AlreadyDecidedError, ThreadBusyError):
            results.append("lost")

    workers = [threading.Thread(target=decide, args=(h, f"p{i}")) for i, h in enumerate(handles)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(results) == ["lost", "lost", "lost", "won"]
    (decided,) = store.ledger.reviews("t1", ("decided",))
    assert decided.decision is not None and decided.decision["kind"] == "approve"
    with pytest.raises(AlreadyDecidedError, match=f"already decided .approve by {decided.decision['actor']}."):
        claim(store, "t1", "r1", actor="late")


def test_a_claim_names_what_is_wrong(store: Store) -> None:
    paused(store, "t1", review("t1", "r1"))
    with pytest.raises(ReviewNotPendingError, match="thread 't1' has no review 'nope'"):
        claim(store, "t1", "nope")
    store.ledger.sync("t1", status="done", outcome="cancelled", error=None, pending=[])
    with pytest.raises(ReviewNotPendingError, match="is cancelled, not pending"):
        claim(store, "t1", "r1")


def test_a_person_and_the_deadline_cannot_both_win(store: Store) -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    future = datetime.now(UTC) + timedelta(hours=1)
    paused(store, "t1", review("t1", "late", deadline=past), review("t1", "early", created=1, deadline=future))
    assert [r.review_id for r in store.ledger.due(time.time())] == ["late"]
    with pytest.raises(ReviewExpiredError, match="expired at"):
        claim(store, "t1", "late")
    with pytest.raises(ReviewNotPendingError, match="has not expired"):
        claim(store, "t1", "early", by_deadline=True)
    claim(store, "t1", "late", actor="sweep", by_deadline=True)
    assert store.ledger.due(time.time()) == []
    assert [e.data.get("by") for e in store.ledger.history("t1") if e.event == "decided"] == ["deadline"]


# -- applying decisions and recover's bookkeeping --------------------------------------------------


def test_a_decision_stays_decided_until_a_run_settles_then_is_applied(store: Store, other: Store) -> None:
    paused(store, "t1", review("t1", "r1"))
    claim(store, "t1", "r1")
    assert other.ledger.threads_with_decided_reviews() == ["t1"]
    # the run stopped mid-way (failed): the decision waits for recover
    synced = store.ledger.sync("t1", status="failed", outcome=None, error="boom", pending=[])
    assert synced.decided == ["r1"] and synced.thread.status == "failed"
    assert [r.review_id for r in store.ledger.reviews("t1", ("decided",))] == ["r1"]
    assert [t.thread_id for t in other.ledger.threads_in("failed")] == ["t1"]
    # it paused again at a new review: r1 is applied, r2 waits
    synced = store.ledger.sync("t1", status="paused", outcome=None, error=None, pending=[(review("t1", "r2", created=5), "ck2")])
    assert [r.review_id for r in synced.added] == ["r2"] and [r.review_id for r in synced.pending] == ["r2"]
    assert [r.review_id for r in store.ledger.reviews("t1", ("applied",))] == ["r1"]
    assert other.ledger.threads_with_decided_reviews() == []
    row = other.ledger.review("t1", "r2")
    assert row is not None and (row.status, row.checkpoint_id) == ("pending", "ck2")


def test_reviews_answered_elsewhere_are_superseded_or_cancelled(store: Store) -> None:
    paused(store, "t1", review("t1", "r1"))
    store.ledger.sync("t1", status="paused", outcome=None, error=None, pending=[(review("t1", "r2"), "ck2")])
    assert store.ledger.reviews("t1", ("superseded",))[0].review_id == "r1"
    store.ledger.sync("t1", status="done", outcome="cancelled", error=None, pending=[])
    assert store.ledger.reviews("t1", ("cancelled",))[0].review_id == "r2"
    row = store.ledger.thread("t1")
    assert row is not None and (row.status, row.outcome) == ("done", "cancelled")


def test_recover_attempts_count_since_the_last_decision(store: Store) -> None:
    paused(store, "t1", review("t1", "r1"))
    store.ledger.add_events("t1", [Event("recovering")])  # before the decision: does not count
    claim(store, "t1", "r1")
    assert store.ledger.recover_attempts("t1") == 0
    store.ledger.add_events("t1", [Event("recovering"), Event("recovering")])
    assert store.ledger.recover_attempts("t1") == 2
    store.ledger.add_events("t1", [Event("retry_requested", actor="ana")])
    assert store.ledger.recover_attempts("t1") == 0
    store.ledger.fail_thread("t1", "gave up")
    row = store.ledger.thread("t1")
    assert row is not None and (row.status, row.error, row.owner) == ("failed", "gave up", None)


def test_a_first_run_records_its_start_with_its_end(store: Store) -> None:
    """A thread whose id nobody knew before its run returns: `sync(new=...)` records both at once."""
    from hitl_graphs.storage import NewThread

    store.ledger.sync("t9", status="done", outcome="completed", error=None, pending=[],
                      new=NewThread("wf", "ana", {"input": {"x": 1}}))
    row = store.ledger.thread("t9")
    assert row is not None and (row.status, row.started_by) == ("done", "ana")
    assert [e.event for e in store.ledger.history("t9")] == ["started", "completed"]


def test_a_run_input_is_kept_outside_the_log_until_a_checkpoint_holds_it(store: Store, other: Store) -> None:
    """The log records the start, never the input; the input is kept for `recover` only while no
    settled checkpoint (paused or done) holds it."""
    from hitl_graphs.storage import NewThread

    given = {"document": "x" * 5_000}
    with store.marks.hold() as owner:
        store.ledger.create_thread("t1", "wf", owner=owner, lease_until=time.time() + 60, data={"input_hash": "h1"},
                                   input=given)
    assert other.ledger.started_input("t1") == given
    store.ledger.sync("t1", status="failed", outcome=None, error="died", pending=[])
    assert other.ledger.started_input("t1") == given  # no checkpoint yet: recover needs it
    store.ledger.sync("t1", status="paused", outcome=None, error=None, pending=[(review("t1", "r1"), "ck1")])
    assert other.ledger.started_input("t1") is None
    store.ledger.sync("t2", status="paused", outcome=None, error=None, pending=[(review("t2", "r2"), "ck1")],
                      new=NewThread("wf", "ana", {"input_hash": "h2"}, given))
    store.ledger.sync("t3", status="failed", outcome=None, error="died", pending=[],
                      new=NewThread("wf", "ana", {"input_hash": "h3"}, given))
    assert (other.ledger.started_input("t2"), other.ledger.started_input("t3")) == (None, given)
    out = io.StringIO()
    store.audit.export(out)
    assert "x" * 100 not in out.getvalue()
    assert [e.data for e in store.ledger.history("t1") if e.event == "started"] == [{"input_hash": "h1"}]


# -- the audit chain -----------------------------------------------------------------------------


def test_the_history_is_the_audit_chain_and_verifies(store: Store, other: Store) -> None:
    assert store.audit.head() == AuditHead(0, "0" * 64)
    paused(store, "t1", review("t1", "r1"))
    claim(other, "t1", "r1", actor="ana")
    store.ledger.sync("t1", status="done", outcome="completed", error=None, pending=[])
    events = [e.event for e in store.ledger.history("t1")]
    assert events == ["started", "review_requested", "decided", "applied", "completed"]
    head = other.audit.head()
    assert head.seq == len(events)
    report = store.audit.verify(expect_heads=[head])
    assert (report.ok, report.checked, report.kept_heads) == (True, len(events), 1)
    assert store.audit.recorded_decision("t1", "r1") == {"kind": "approve", "actor": "ana"}
    assert store.audit.recorded_decision("t1", "nope") is None
    out = io.StringIO()
    assert store.audit.export(out, thread_id="t1") == len(events)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [x["event"] for x in lines] == events and lines[-1].get("anchor", lines[-1]["hash"]) == head.hash
    assert all(b["prev_hash"] == a["hash"] for a, b in zip(lines, lines[1:], strict=False))


def test_a_head_from_another_chain_is_refused(store: Store) -> None:
    paused(store, "t1", review("t1", "r1"))
    report = store.audit.verify(expect_heads=[AuditHead(1, "ab" * 32)])
    assert not report.ok and report.problem is not None and "is not in the log" in report.problem


def test_appends_from_many_handles_keep_one_unbroken_chain(store: Store, opener: Opener) -> None:
    handles = [opener() for _ in range(3)]
    for i, h in enumerate(handles):
        paused(h, f"t{i}", review(f"t{i}", "r1"))

    def write(h: Store, i: int) -> None:
        for _ in range(10):
            h.ledger.add_events(f"t{i}", [Event("note")])

    workers = [threading.Thread(target=write, args=(h, i)) for i, h in enumerate(handles)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    report = store.audit.verify()
    assert report.ok, report.problem
    assert report.checked == 3 * (2 + 10)


# -- effects and remembered approvals ------------------------------------------------------------


def test_an_effect_result_is_kept_once(store: Store, other: Store) -> None:
    paused(store, "t1", review("t1", "r1"))
    assert store.effects.get("t1", "charge") == (False, None)
    store.effects.put("t1", "charge", {"receipt": 1})
    other.effects.put("t1", "charge", {"receipt": 2})  # a replay racing the first run
    assert other.effects.get("t1", "charge") == (True, {"receipt": 1})
    assert store.effects.get("t2", "charge") == (False, None)


def test_a_recorded_event_joins_the_history_once(store: Store) -> None:
    paused(store, "t1", review("t1", "r1"))
    store.effects.record_once("t1", "event|k", "deployed", {"v": 1})
    store.effects.record_once("t1", "event|k", "deployed", {"v": 1})  # the node ran again
    store.ledger.add_events("t1", [Event("note")])  # the next transaction takes it in
    assert [e.event for e in store.ledger.history("t1")].count("deployed") == 1
    assert store.audit.verify().ok


def test_a_recorded_events_data_is_stored_once_in_the_history(store: Store) -> None:
    """The key that stops a re-run node from recording twice keeps no copy of the entry's data."""
    paused(store, "t1", review("t1", "r1"))
    data = {"report": "x" * 50_000}
    store.effects.record_once("t1", "event|k", "reported", data)
    store.ledger.add_events("t1", [Event("note")])
    assert [e.data for e in store.ledger.history("t1") if e.event == "reported"] == [data]
    assert store.effects.get("t1", "event|k") == (True, "recorded")


def test_approvals_are_remembered_per_workflow_and_actor(store: Store, other: Store) -> None:
    paused(store, "a1", review("a1", "r1"), actor="ana")
    paused(store, "a2", review("a2", "r1"), actor="ana")
    paused(store, "b1", review("b1", "r1"), actor="bob")
    paused(store, "x1", review("x1", "r1"), workflow="other", actor="ana")
    paused(store, "n1", review("n1", "r1"))
    assert store.effects.remember("a1", "send_email", "ana")
    assert not store.effects.remember("n1", "send_email", "ana")  # no actor to remember it for
    assert other.effects.remembered("a2", "send_email")
    assert not other.effects.remembered("a2", "delete_all")
    assert not other.effects.remembered("b1", "send_email")
    assert not other.effects.remembered("x1", "send_email")
    assert not other.effects.remembered("n1", "send_email")


# -- feedback ------------------------------------------------------------------------------------


def test_feedback_is_listed_by_workflow_and_exported_once(store: Store, other: Store) -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    store.feedback.record(Feedback(thread_id="t1", workflow="wf", score=0.5, comment="ok", actor="ana", at=at))
    store.feedback.record(Feedback(thread_id="t2", workflow="other", score=1.0, at=at + timedelta(seconds=1)))
    assert [fb.thread_id for _, fb in other.feedback.listing()] == ["t1", "t2"]
    ((row_id, fb),) = other.feedback.listing(workflow="wf")
    assert (fb.score, fb.comment, fb.actor, fb.at) == (0.5, "ok", "ana", at)
    other.feedback.mark_exported(row_id)
    assert [fb.thread_id for _, fb in store.feedback.listing(unexported=True)] == ["t2"]


# -- webhooks ------------------------------------------------------------------------------------


def attempt(webhook_id: str, seq: int, outcome: Any = "delivered", n: int = 1, **kw: Any) -> DeliveryRow:
    return DeliveryRow(webhook_id=webhook_id, seq=seq, attempt=n, outcome=outcome, status_code=kw.get("code", 200),
                       error=kw.get("error"), at=time.time(), next_retry=kw.get("next_retry"))


def test_a_webhook_starts_at_the_end_of_the_history_and_stays_listed_until_disabled(store: Store, other: Store) -> None:
    paused(store, "t1", review("t1", "r1"))
    head = store.audit.head().seq
    assert head > 0
    added = store.webhooks.add("w1", "https://example.com/hook", events=["review"], workflow="wf", secret="s3cret",
                               format="slack")
    assert added.cursor == head  # what happened before it was added is not announced
    got = other.webhooks.get("w1")
    assert got is not None
    assert (got.url, got.events, got.workflow, got.secret, got.format, got.cursor, got.disabled_at) == (
        "https://example.com/hook", ("review",), "wf", "s3cret", "slack", head, None)
    other.webhooks.add("w2", "http://127.0.0.1:9/x", events=["review", "decided"], workflow=None, secret="k",
                       format="json")
    assert [w.id for w in store.webhooks.listing()] == ["w1", "w2"]
    disabled = store.webhooks.disable("w1")
    assert disabled is not None and disabled.disabled_at is not None
    assert [w.id for w in other.webhooks.listing()] == ["w2"]
    assert [w.id for w in other.webhooks.listing(disabled=True)] == ["w1", "w2"]
    assert store.webhooks.disable("nope") is None and store.webhooks.get("nope") is None
    with store.marks.hold() as owner:
        assert store.webhooks.claim("w1", owner=owner, lease_until=time.time() + 60) is None  # disabled: not delivered


def test_one_deliverer_holds_a_webhook_and_a_dead_one_is_taken_over(store: Store, other: Store) -> None:
    store.webhooks.add("w1", "https://example.com/hook", events=["review"], workflow=None, secret="k", format="json")
    later = time.time() + 60
    with store.marks.hold() as first:
        assert store.webhooks.claim("w1", owner=first, lease_until=later) is not None
        with other.marks.hold() as second:
            assert other.webhooks.claim("w1", owner=second, lease_until=later) is None  # held by a live deliverer
            assert not other.webhooks.advance("w1", 5, owner=second, lease_until=later)
        store.webhooks.release("w1", owner=first)
        with other.marks.hold() as second:
            assert other.webhooks.claim("w1", owner=second, lease_until=later) is not None
            assert other.webhooks.claim("w1", owner=second, lease_until=later) is not None  # its own claim again
        # `second` ended without releasing, as a deliverer that dies does: its claim is free at once
        assert store.webhooks.claim("w1", owner=first, lease_until=later) is not None
    assert store.webhooks.claim("nope", owner="x", lease_until=later) is None


def test_exactly_one_of_many_racing_deliverers_gets_a_webhook(store: Store, opener: Opener) -> None:
    store.webhooks.add("w1", "https://example.com/hook", events=["review"], workflow=None, secret="k", format="json")
    handles = [opener() for _ in range(4)]
    results: list[bool] = []
    start, done = threading.Barrier(len(handles)), threading.Barrier(len(handles))

    def take(h: Store) -> None:
        with h.marks.hold() as owner:
            start.wait()
            results.append(h.webhooks.claim("w1", owner=owner, lease_until=time.time() + 60) is not None)
            done.wait()  # every claimer still alive while the others try

    workers = [threading.Thread(target=take, args=(h,)) for h in handles]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(results) == [False, False, False, True]


def test_the_cursor_moves_only_past_what_was_delivered_or_given_up(store: Store, other: Store) -> None:
    store.webhooks.add("w1", "https://example.com/hook", events=["review"], workflow=None, secret="k", format="json")
    store.webhooks.add("w2", "https://example.com/other", events=["review"], workflow=None, secret="k", format="json")
    later = time.time() + 60

    def cursor(webhook_id: str) -> int:
        row = other.webhooks.get(webhook_id)
        assert row is not None
        return row.cursor

    with store.marks.hold() as owner:
        claimed = store.webhooks.claim("w1", owner=owner, lease_until=later)
        assert claimed is not None and claimed.cursor == 0
        assert store.webhooks.record(attempt("w1", 3, "failed", code=503, next_retry=later), owner=owner,
                                     lease_until=later)
        assert cursor("w1") == 0  # a failed attempt keeps the entry ahead of the cursor
        assert store.webhooks.record(attempt("w1", 3, "delivered", n=2), owner=owner, lease_until=later)
        assert cursor("w1") == 3
        assert store.webhooks.advance("w1", 6, owner=owner, lease_until=later)  # entries it does not ask for
        assert store.webhooks.advance("w1", 4, owner=owner, lease_until=later) and cursor("w1") == 6  # never back
        assert store.webhooks.record(attempt("w1", 7, "gave_up", n=8, code=None, error="timed out"), owner=owner,
                                     lease_until=later)
        assert cursor("w1") == 7
        # an attempt by a deliverer that lost the webhook is logged, but moves nothing
        assert not other.webhooks.record(attempt("w2", 2), owner="someone-else", lease_until=later)
        assert cursor("w2") == 0
    log = other.webhooks.deliveries("w1")
    assert [(d.seq, d.attempt, d.outcome, d.status_code, d.error) for d in log] == [
        (7, 8, "gave_up", None, "timed out"), (3, 2, "delivered", 200, None), (3, 1, "failed", 503, None)]
    assert log[-1].next_retry == later and log[0].next_retry is None
    assert [d.webhook_id for d in other.webhooks.deliveries()] == ["w2", "w1", "w1", "w1"]
    assert len(other.webhooks.deliveries("w1", limit=1)) == 1


# -- checkpoints ---------------------------------------------------------------------------------


def test_the_latest_checkpoint_id_is_read_without_loading_it(store: Store) -> None:
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class S(TypedDict):
        n: int

    graph = StateGraph(S)
    graph.add_node("inc", lambda s: {"n": s["n"] + 1})
    graph.add_edge(START, "inc")
    graph.add_edge("inc", END)
    app = graph.compile(checkpointer=store.saver)
    assert store.latest_checkpoint_id("c1") is None
    config = {"configurable": {"thread_id": "c1"}}
    app.invoke({"n": 1}, config)  # type: ignore[arg-type]
    state = app.get_state(config)  # type: ignore[arg-type]
    assert store.latest_checkpoint_id("c1") == state.config["configurable"]["checkpoint_id"]


def test_the_reads_a_decision_starts_with_agree_with_the_reads_one_by_one(store: Store, other: Store) -> None:
    """`at_decision` (one round trip on a server) reads what `ledger.thread`, the pending
    `ledger.reviews` and `latest_checkpoint_id` read: the runner checks a decision against it."""
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class S(TypedDict):
        n: int

    nothing = other.at_decision("t1")
    assert (nothing.thread, nothing.pending, nothing.latest_checkpoint_id) == (None, [], None)
    paused(store, "t1", review("t1", "r2", created=5), review("t1", "r1"), review("t1", "r3", created=9))
    claim(store, "t1", "r3")  # decided: no longer pending
    graph = StateGraph(S)
    graph.add_node("inc", lambda s: {"n": s["n"] + 1})
    graph.add_edge(START, "inc")
    graph.add_edge("inc", END)
    graph.compile(checkpointer=store.saver).invoke({"n": 1}, {"configurable": {"thread_id": "t1"}})  # type: ignore[arg-type]
    at = other.at_decision("t1")
    assert at.thread == other.ledger.thread("t1") and at.thread is not None and at.thread.status == "running"
    assert [r.review_id for r in at.pending] == ["r1", "r2"]  # oldest first, as `reviews` lists them
    assert at.pending == other.ledger.reviews("t1", ("pending",))
    assert at.latest_checkpoint_id == other.latest_checkpoint_id("t1") is not None
    assert other.at_decision("t2").thread is None


# -- tokens and the live feed --------------------------------------------------------------------


def test_a_token_is_found_by_its_hash_until_revoked(store: Store, other: Store) -> None:
    added = store.tokens.add("t1", "h" * 64, "ana", ["finance", "ops"])
    store.tokens.add("t2", "g" * 64, "bob", [])
    found = other.tokens.find("h" * 64)
    assert found is not None and (found.id, found.actor, found.roles, found.revoked_at) == ("t1", "ana", ("finance", "ops"), None)
    assert other.tokens.find("x" * 64) is None
    assert [t.id for t in other.tokens.listing()] == ["t1", "t2"] and added.created_at > 0
    revoked = other.tokens.revoke("t1")
    assert revoked is not None and revoked.revoked_at is not None
    assert store.tokens.find("h" * 64) is None
    assert store.tokens.revoke("nope") is None


def test_the_servers_token_check_sees_what_the_store_sees_at_once(store: Store, other: Store) -> None:
    """`afind` (what `hitl serve` calls on its event loop, on SQLite from a reader connection of
    its own) sees a token as soon as it is added, and not once it is revoked, from any handle."""
    assert asyncio.run(store.tokens.afind("h" * 64)) is None  # the reader opened before the token exists
    other.tokens.add("t1", "h" * 64, "ana", ["finance"])
    found = asyncio.run(store.tokens.afind("h" * 64))
    assert found is not None and (found.id, found.actor, found.roles) == ("t1", "ana", ("finance",))
    other.tokens.revoke("t1")
    assert asyncio.run(store.tokens.afind("h" * 64)) is None


def test_the_feed_reads_every_thread_in_commit_order_from_a_cursor(store: Store, other: Store) -> None:
    paused(store, "t1", review("t1", "r1"))
    paused(other, "t2", review("t2", "r2", created=1))
    claim(store, "t2", "r2")
    everything = other.ledger.events_after(0)
    assert [(e.thread_id, e.event) for e in everything] == [
        ("t1", "started"), ("t1", "review_requested"), ("t2", "started"), ("t2", "review_requested"), ("t2", "decided")]
    cursor = everything[1].seq
    assert [e.seq for e in store.ledger.events_after(cursor)] == [e.seq for e in everything[2:]]
    assert [e.seq for e in store.ledger.events_after(cursor, limit=2)] == [e.seq for e in everything[2:4]]
    assert store.ledger.events_after(everything[-1].seq) == []

"""A decision applies only to what its decider saw, and every outcome told is true, under races.

Races are made deterministic by running the other party's whole action at the exact point where
it hurts (inside a ledger read of the racing call): real LangGraph, real SQLite, two runners.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hitl_graphs import (
    AlreadyDecidedError,
    Approve,
    Modify,
    NoPendingReviewError,
    ReviewNotPendingError,
    Runner,
    StaleReviewError,
)
from tests.conftest import ROOT, fingerprint, hitl, subprocess_env
from tests.drivers import Driven
from tests.workflows import WORKFLOWS, effects


def _before_first(runner: Driven, method: str, action: Callable[[], Any]) -> None:
    """Run `action` (the other party) once, just before `runner.ledger.<method>` is first called."""
    real = getattr(runner.ledger, method)
    done: list[bool] = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not done:
            done.append(True)
            action()
        return real(*args, **kwargs)

    setattr(runner.ledger, method, wrapped)


def test_a_cli_approve_never_applies_to_a_review_raised_after_it_started(db: str, effects_file: Path, tmp_path: Path) -> None:
    """Two `hitl approve` of plan v1 at once: the slower must not approve plan v2, which nobody saw."""
    with Runner.open(db) as runner:
        thread_id = runner.start("plan-review", {"task": "ship"}).thread_id
    go = tmp_path / "go"
    # the slow command has started (imported the package) before the other approval lands
    slow = subprocess.Popen(
        [sys.executable, "-c",
         "import os, sys, time\nimport hitl_graphs\nfrom hitl_graphs.cli import main\n"
         f"print('started', flush=True)\nwhile not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
         f"sys.argv = ['hitl', 'approve', {thread_id!r}, '--actor', 'bob']\nmain()"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env(db), cwd=ROOT)
    assert slow.stdout is not None and slow.stdout.readline().strip() == "started"
    time.sleep(0.05)
    fast = hitl(db, "approve", thread_id, "--actor", "ana", "--json")
    assert fast.returncode == 0, fast.stderr
    with Runner.open(db) as runner:
        second = runner.show(thread_id).reviews[0]  # plan v2, raised by ana's approval
    before = fingerprint(db, thread_id)
    go.write_text("go")
    out, err = slow.communicate(timeout=60)
    assert slow.returncode == 1, out
    assert "you have not seen it; nothing was decided" in err and f"--review {second.key}" in err  # what `pending` shows
    assert fingerprint(db, thread_id) == before
    with Runner.open(db) as runner:
        assert [r.review_id for r in runner.show(thread_id).reviews] == [second.review_id]


def test_runner_resume_without_review_id_refuses_a_review_raised_during_the_call(db: str, effects_file: Path) -> None:
    with Runner.open(db) as slow, Runner.open(db) as fast:
        thread_id = slow.start("plan-review", {"task": "ship"}).thread_id
        # between the slow call's start and its read of what is pending, ana approves plan v1
        _before_first(slow, "reviews", lambda: fast.resume(thread_id, Approve(actor="ana")))
        with pytest.raises(StaleReviewError, match="paused again at review .* after this decision was asked for"):
            slow.resume(thread_id, Approve(actor="bob"))
        decided = [e for e in fast.history(thread_id) if e.event == "decided"]
        assert [e.actor for e in decided] == ["ana"]
        assert fast.show(thread_id).status == "paused"


@pytest.mark.parametrize("review", ["", " ", "a", "abc12"], ids=["empty", "blank", "one-char", "five-chars"])
def test_an_empty_or_too_short_review_id_is_refused(runner: Driven, db: str, review: str) -> None:
    thread_id = runner.start("pay", {"to": "acme", "amount": 5}).thread_id
    before = fingerprint(db, thread_id)
    with pytest.raises(ReviewNotPendingError, match="too short to name a review"):
        runner.resume(thread_id, Approve(actor="ana"), review_id=review)
    result = hitl(db, "approve", thread_id, "--review", review)
    assert result.returncode == 1 and "too short to name a review" in result.stderr
    assert fingerprint(db, thread_id) == before
    assert effects() == ["prepare"]


def test_a_six_character_prefix_still_names_a_review(runner: Driven) -> None:
    view = runner.start("pay", {"to": "acme", "amount": 5})
    assert runner.resume(view.thread_id, Approve(actor="ana"), review_id=view.reviews[0].review_id[:6]).status == "done"


def test_cancel_racing_an_approval_that_completes_refuses_and_the_payment_stands(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as canceller, Runner.open(db, workflows=WORKFLOWS) as approver:
        thread_id = canceller.start("pay", {"to": "acme", "amount": 5}).thread_id
        # the cancel has read the thread as paused; the approval completes before it takes the thread
        _before_first(canceller, "take_thread", lambda: approver.resume(thread_id, Approve(actor="ana")))
        with pytest.raises(NoPendingReviewError, match="is done \\(completed\\), not paused or failed; nothing was changed"):
            canceller.cancel(thread_id, actor="bob")
        view = approver.show(thread_id)
    assert (view.status, view.outcome, view.state["status"]) == ("done", "completed", "paid")
    assert effects() == ["prepare", "pay:acme:5"]


def test_the_loser_of_a_race_hears_who_decided_first(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as loser, Runner.open(db, workflows=WORKFLOWS) as winner:
        thread_id = loser.start("pay", {"to": "acme", "amount": 5}).thread_id
        # the loser read the thread as paused; the winner's decision runs to the end before the
        # loser reads what is pending
        _before_first(loser, "reviews", lambda: winner.resume(thread_id, Approve(actor="ana")))
        with pytest.raises(AlreadyDecidedError, match="already decided \\(approve by ana\\) and the thread ended"):
            loser.resume(thread_id, Modify(patch={"amount": 9}, actor="bob"))
    assert effects() == ["prepare", "pay:acme:5"]


def test_waiting_for_a_decision_that_landed_just_before_returns_the_decided_thread(runner: Driven, effects_file: Path) -> None:
    thread_id = runner.start("pay", {"to": "acme", "amount": 5}).thread_id
    runner.resume(thread_id, Approve(actor="ana"))
    view = runner.wait_for_decision(thread_id, timeout=1.0, poll=0.01)
    assert (view.status, view.outcome, view.state["status"]) == ("done", "completed", "paid")

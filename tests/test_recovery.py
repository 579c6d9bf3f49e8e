"""What recover does with a step that raised after a decision, and with a run that could not record its end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hitl_graphs import Approve, NoPendingReviewError, Runner, SqliteStore
from hitl_graphs.errors import DatabaseBusyError
from tests.conftest import ROOT, hitl, subprocess_env
from tests.drivers import Driven
from tests.workflows import HELD, WORKFLOWS, effects


@pytest.fixture
def down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """While this file exists, the `flaky` workflows' mail service does not answer."""
    path = tmp_path / "service-down"
    monkeypatch.setenv("HITL_TEST_DOWN", str(path))
    path.write_text("down")
    return path


@pytest.mark.parametrize("workflow", ["flaky", "flaky-exit"])
def test_recover_retries_a_step_that_raised_after_the_decision(db: str, effects_file: Path, down: Path, workflow: str) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread_id = runner.start(workflow, {"to": "ana@example.com"}).thread_id
        with pytest.raises(ConnectionError):
            runner.resume(thread_id, Approve(actor="ana"))
    shown = hitl(db, "show", thread_id)
    assert "failed" in shown.stdout
    assert "ConnectionError('mail service did not answer')" in shown.stdout or "ConnectionError: mail service" in shown.stdout
    assert "`hitl recover` runs the failed step again (3 of 3 attempts left)" in shown.stdout

    still_down = hitl(db, "recover", "--json")
    assert still_down.returncode == 0, still_down.stderr
    assert [v["status"] for v in json.loads(still_down.stdout)] == ["failed"]
    assert "2 of 3 attempts left" in json.loads(still_down.stdout)[0]["error"]

    down.unlink()  # the service answers again
    recovered = hitl(db, "recover", "--json")
    assert recovered.returncode == 0, recovered.stderr
    (view,) = json.loads(recovered.stdout)
    assert (view["status"], view["outcome"], view["state"]["sent"]) == ("done", "completed", True)
    assert effects() == ["send:ana@example.com"]
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        events = [e.event for e in runner.history(thread_id)]
    assert events.count("decided") == 1 and events.count("recovering") == 2 and events[-1] == "completed"


def test_recover_gives_up_after_max_attempts_and_retry_tries_again(db: str, effects_file: Path, down: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS, max_attempts=2) as runner:
        thread_id = runner.start("flaky", {"to": "bo"}).thread_id
        with pytest.raises(ConnectionError):
            runner.resume(thread_id, Approve(actor="ana"))
        assert [v.status for v in runner.recover()] == ["failed"]
        assert [v.status for v in runner.recover()] == ["failed"]
        assert runner.recover() == []  # gave up: a person decides what to do
        view = runner.show(thread_id)
        assert view.error is not None and f"gave up after 2 attempts: fix the cause, then `hitl retry {thread_id}`" in view.error
        assert runner.pending() == []
    down.unlink()
    retried = hitl(db, "retry", thread_id, "--json")
    assert retried.returncode == 0, retried.stderr
    assert json.loads(retried.stdout)["status"] == "done"
    assert effects() == ["send:bo"]
    again = hitl(db, "retry", thread_id)
    assert again.returncode == 1 and "has not failed (status done); nothing to retry" in again.stderr


def test_retry_refuses_a_thread_that_did_not_fail(runner: Driven) -> None:
    thread_id = runner.start("pay", {"to": "acme", "amount": 5}).thread_id
    with pytest.raises(NoPendingReviewError, match="has not failed \\(status paused\\)"):
        runner.retry(thread_id)


def _locker_runner(db: str) -> Runner:
    return Runner(SqliteStore(db, busy_timeout=0.3), WORKFLOWS, owns_store=True)


def test_a_run_that_could_not_record_its_end_is_recovered_at_once_in_the_same_process(
    db: str, effects_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HITL_DB_PATH", db)
    with _locker_runner(db) as runner:
        thread_id = runner.start("locker", {"to": "ana"}).thread_id
        with pytest.raises(DatabaseBusyError, match="database is busy"):
            runner.resume(thread_id, Approve(actor="ana"))
        HELD.pop().rollback()  # the lock is free again; this process lives on
        (view,) = runner.recover()
    assert (view.thread_id, view.status, view.outcome) == (thread_id, "done", "completed")
    assert effects() == ["send"]  # the run's own result was kept, not run again


FAILER = """
import os, sys, time
import tests.workflows as w
from hitl_graphs import Runner, SqliteStore, Approve, HitlError
runner = Runner(SqliteStore(os.environ["HITL_DB"], busy_timeout=0.3), w.WORKFLOWS, owns_store=True)
try:
    runner.resume(sys.argv[1], Approve(actor="ana"))
except HitlError as exc:
    w.HELD.pop().rollback()
    print("failed:", type(exc).__name__, flush=True)
time.sleep(120)  # alive, holding nothing
"""


def test_a_run_that_could_not_record_its_end_is_recovered_at_once_by_another_process(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("locker", {"to": "ana"}).thread_id
    proc = subprocess.Popen([sys.executable, "-c", FAILER, thread_id], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=subprocess_env(db, HITL_DB_PATH=db), cwd=ROOT)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "failed: DatabaseBusyError"
        assert proc.poll() is None  # the process that failed to record its end is alive
        recovered = hitl(db, "recover", "--json")
        assert recovered.returncode == 0, recovered.stderr
        (view,) = json.loads(recovered.stdout)
        assert (view["thread_id"], view["status"]) == (thread_id, "done")
        # the failed run's result lived only in its process: the stretch since the pause ran again
        assert effects() == ["send", "send"]
    finally:
        proc.kill()
        proc.communicate()


def test_a_thread_another_worker_finished_after_recover_listed_it_is_left_alone(db: str, effects_file: Path) -> None:
    """`recover` lists threads holding a decision, then visits them one by one; a worker that
    applies one of them in between must not have it taken, re-settled and reported a second time."""
    from hitl_graphs.runtime.driver import drive

    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("pay", {"to": "acme", "amount": 5}).thread_id
        runner.decide(thread_id, Approve(actor="ana"))
        listed = runner.ledger.threads_with_decided_reviews()
        assert thread_id in listed  # what a second worker's recover pass saw
        assert runner.work(once=True) == 1  # meanwhile another worker applied it
        history = runner.history(thread_id)
        assert drive(runner._recover_one(thread_id)) is None  # the pass reaches it: nothing to do
        assert runner.show(thread_id).status == "done" and runner.history(thread_id) == history
        assert effects() == ["prepare", "pay:acme:5"]  # each step once

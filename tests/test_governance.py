"""Deadlines, roles, the audit trail, decisions bound to what was shown, feedback, effects run once."""

from __future__ import annotations

import io
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hitl_graphs import (
    AlreadyDecidedError,
    Approve,
    Modify,
    NoPendingReviewError,
    PatchError,
    PermissionDeniedError,
    Reject,
    ReviewExpiredError,
    Runner,
    StaleReviewError,
)
from tests.conftest import ROOT, fingerprint, hitl, python, subprocess_env
from tests.drivers import Driven
from tests.workflows import WORKFLOWS, effects

# -- deadlines and default decisions -------------------------------------------------------------


def test_expired_review_is_resolved_by_the_sweep_with_its_default(runner: Driven, db: str) -> None:
    view = runner.start("timed")
    (review,) = view.reviews
    assert review.deadline is not None and review.default_decision == {"kind": "reject", "reason": "no decision before the deadline"}
    assert runner.sweep() == []  # not yet due
    time.sleep(0.6)
    before = fingerprint(db, view.thread_id)
    with pytest.raises(ReviewExpiredError, match="expired at .*; its default decision applies at the next sweep"):
        runner.resume(view.thread_id, Approve(actor="ana"))
    assert fingerprint(db, view.thread_id) == before
    (swept,) = runner.sweep()
    assert (swept.thread_id, swept.outcome, swept.state["outcome"]) == (view.thread_id, "rejected", "rejected")
    decided = [e for e in runner.history(view.thread_id) if e.event == "decided"]
    assert [(d.actor, d.data["by"]) for d in decided] == [("hitl:deadline", "deadline")]
    assert runner.sweep() == [] and effects() == []


def test_low_risk_review_defaults_to_approve(runner: Driven) -> None:
    runner.start("timed-approve")
    time.sleep(0.6)
    (swept,) = runner.sweep()
    assert swept.state["outcome"] == "approve"
    assert effects() == ["timed:approve"]


def test_sweep_survives_restarts_from_the_cli(db: str, effects_file: Path) -> None:
    started = hitl(db, "run", "timed", "--json")
    thread_id = json.loads(started.stdout)["thread_id"]
    time.sleep(0.6)
    swept = hitl(db, "sweep", "--json")
    assert swept.returncode == 0, swept.stderr
    assert [v["thread_id"] for v in json.loads(swept.stdout)] == [thread_id]


RACE = """
import os, sys, time, json
from hitl_graphs import Runner, Approve, HitlError
role, go, thread = sys.argv[1], sys.argv[2], sys.argv[3]
with Runner.open() as r:
    while not os.path.exists(go):
        time.sleep(0.001)
    if role == "sweep":
        for _ in range(40):
            views = r.sweep()
            if views or r.show(thread).status == "done":
                break
            time.sleep(0.01)
        print(json.dumps({"swept": [v.thread_id for v in views]}))
    else:
        try:
            print(json.dumps({"ok": r.resume(thread, Approve(actor="ana")).outcome}))
        except HitlError as e:
            print(json.dumps({"error": type(e).__name__}))
"""


def test_person_and_deadline_race_exactly_one_wins(db: str, effects_file: Path, tmp_path: Path) -> None:
    env = subprocess_env(db, HITL_TEST_TIMEOUT="2.0")
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        for round_ in range(2):
            started = python(db, "from hitl_graphs import Runner\nwith Runner.open() as r: print(r.start('timed').thread_id)",
                             HITL_TEST_TIMEOUT="2.0")
            thread_id = started.stdout.strip()
            deadline = runner.show(thread_id).reviews[0].deadline
            assert deadline is not None
            go = tmp_path / f"go-{round_}"
            procs = [subprocess.Popen([sys.executable, "-c", "import tests.workflows\n" + RACE, role, str(go), thread_id],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
                     for role in ("person", "sweep")]
            time.sleep(max(0.0, deadline.timestamp() - time.time()))
            go.write_text("go")
            outs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
            decided = [e for e in runner.history(thread_id) if e.event == "decided"]
            assert len(decided) == 1, outs
            by = decided[0].data["by"]
            if by == "person":
                assert outs[0] == {"ok": "completed"} and outs[1] == {"swept": []}
                assert effects().count("timed:approve") == 1
            else:
                assert outs[0]["error"] in ("ReviewExpiredError", "AlreadyDecidedError") and outs[1] == {"swept": [thread_id]}
            assert runner.show(thread_id).status == "done"
    assert effects().count("timed:approve") <= 2


def test_waiting_for_a_decision_from_another_process(runner: Driven, db: str) -> None:
    view = runner.start("pay")
    approver = subprocess.Popen(
        [sys.executable, "-c", "import time, tests.workflows\nfrom hitl_graphs import Runner, Approve\ntime.sleep(0.5)\n"
                               f"with Runner.open() as r: r.resume({view.thread_id!r}, Approve(actor='bob'))"],
        env=subprocess_env(db), cwd=ROOT)
    done = runner.wait_for_decision(view.thread_id, timeout=30)  # async: await_for_decision
    assert approver.wait(timeout=60) == 0
    assert (done.status, done.state["status"]) == ("done", "paid")
    assert [e.actor for e in runner.history(view.thread_id) if e.event == "decided"] == ["bob"]


def test_waiting_for_a_decision_times_out_to_the_default(runner: Driven) -> None:
    view = runner.start("pay")
    done = runner.wait_for_decision(view.thread_id, timeout=0.3)
    assert (done.status, done.outcome) == ("done", "rejected")
    assert [e.actor for e in runner.history(view.thread_id) if e.event == "decided"] == ["hitl:timeout"]
    assert effects() == ["prepare"]


# -- roles and separation of duties ---------------------------------------------------------------


def test_role_is_required_and_a_refusal_changes_nothing(runner: Driven, db: str) -> None:
    view = runner.start("finance", {"amount": 500}, actor="ana")
    (review,) = view.reviews
    assert review.required_role == "finance"
    assert runner.pending(roles=["ops"]) == [] and runner.pending(roles=["finance"]) == [review]
    before = fingerprint(db, view.thread_id)
    with pytest.raises(PermissionDeniedError, match=f"review '{review.review_id[:12]}' requires role 'finance'; actor 'bob' has roles: ops"):
        runner.resume(view.thread_id, Approve(actor="bob"), roles=["ops"])
    with pytest.raises(PermissionDeniedError, match="actor 'ana' started thread .* may not decide .*separation of duties"):
        runner.resume(view.thread_id, Approve(actor="ana"), roles=["finance"])
    assert fingerprint(db, view.thread_id) == before
    done = runner.resume(view.thread_id, Modify(patch={"amount": 400}, actor="bob"), roles=["finance"])
    assert done.state["outcome"] == "paid" and effects() == ["finance:400"]
    refused = [e for e in runner.history(view.thread_id) if e.event == "refused"]
    assert [e.actor for e in refused] == ["bob", "ana"]


def test_pending_role_filter_from_the_cli(db: str, effects_file: Path) -> None:
    hitl(db, "run", "finance", "--json")
    hitl(db, "run", "pay", "--json")
    finance = json.loads(hitl(db, "pending", "--role", "finance", "--json").stdout)
    other = json.loads(hitl(db, "pending", "--role", "ops", "--json").stdout)
    assert sorted(r["workflow"] for r in finance) == ["finance", "pay"]
    assert [r["workflow"] for r in other] == ["pay"]


# -- audit trail ------------------------------------------------------------------------------------


def _activity(runner: Driven) -> str:
    view = runner.start("pay", actor="ana")
    with pytest.raises(PatchError, match="expects int"):
        runner.resume(view.thread_id, Modify(patch={"amount": "x"}, actor="eve"))
    runner.resume(view.thread_id, Modify(patch={"amount": 80}, actor="bob", comment="cap"))
    other = runner.start("fanout")
    runner.cancel(other.thread_id, actor="ops")
    return view.thread_id


def test_audit_records_who_what_originals_and_refusals(runner: Driven) -> None:
    thread_id = _activity(runner)
    out = io.StringIO()
    count = runner.audit_export(out, thread_id=thread_id)
    entries = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(entries) == count
    events = [e["event"] for e in entries]
    assert events == ["started", "review_requested", "refused", "decided", "applied", "completed"]
    requested = entries[1]["data"]  # the entry commits to the payload by its hash; the export adds the payload
    assert entries[1]["payload"] == {"to": "acme", "amount": 120} and len(requested["payload_hash"]) == 64
    refused = entries[2]
    assert refused["actor"] == "eve" and "expects int" in refused["data"]["error"]
    decided = entries[3]
    assert decided["actor"] == "bob" and decided["data"]["comment"] == "cap"
    assert decided["data"]["patch"] == {"amount": 80} and decided["data"]["original"] == {"amount": 120}
    assert runner.audit_verify().ok


@pytest.mark.parametrize(
    ("forgery", "problem"),
    [
        ("UPDATE hitl_events SET actor = 'mallory' WHERE event = 'decided'", "was edited"),
        ("DELETE FROM hitl_events WHERE seq = 3", "does not follow entry 2: an entry was deleted or reordered"),
        ("UPDATE hitl_events SET seq = -seq WHERE seq IN (2, 3); UPDATE hitl_events SET seq = CASE seq WHEN -2 THEN 3 ELSE 2 END WHERE seq < 0",
         "entry 2 was edited or moved"),  # a position is part of its hash (schema 7 keeps no link column)
        ("DELETE FROM hitl_events WHERE seq = (SELECT max(seq) FROM hitl_events)", "entries at the end were deleted"),
    ],
    ids=["edited", "deleted", "reordered", "truncated"],
)
def test_audit_verify_finds_the_forgery(runner: Driven, db: str, forgery: str, problem: str) -> None:
    _activity(runner)
    assert runner.audit_verify().ok
    conn = sqlite3.connect(db)
    conn.executescript(forgery)
    conn.close()
    report = runner.audit_verify()
    assert not report.ok and problem in (report.problem or "")
    cli = hitl(db, "audit", "verify")
    assert cli.returncode == 1 and cli.stderr.startswith("error: audit log broken: ") and problem in cli.stderr


# -- a decision is bound to what the person saw ------------------------------------------------------


def test_decision_on_a_review_that_changed_is_refused(runner: Driven, db: str) -> None:
    first = runner.start("loop")
    seen = first.reviews[0].payload_hash
    second = runner.resume(first.thread_id, Reject(actor="bob"))  # someone else sent it round again
    assert second.reviews[0].payload == {"n": 1}
    before = fingerprint(db, first.thread_id)
    with pytest.raises(StaleReviewError, match="changed since you saw it"):
        runner.resume(first.thread_id, Approve(actor="ana", seen=seen))
    assert fingerprint(db, first.thread_id) == before
    done = runner.resume(first.thread_id, Approve(actor="ana", seen=second.reviews[0].payload_hash))
    assert done.state["outcome"] == "accepted"


# -- feedback ------------------------------------------------------------------------------------------


class RecordingClient:
    """Stands in for `langsmith.Client`: records `create_feedback` calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, str, float, str | None]] = []

    def create_feedback(self, run_id: Any, key: str, *, score: float, comment: str | None = None) -> None:
        self.calls.append((run_id, key, score, comment))


def test_feedback_on_finished_threads(runner: Driven) -> None:
    view = runner.start("pay")
    with pytest.raises(NoPendingReviewError, match="has not finished"):
        runner.feedback(view.thread_id, 0.5)
    runner.resume(view.thread_id, Approve())
    runner.feedback(view.thread_id, 0.9, comment="good", actor="ana")
    other = runner.start("email")
    runner.resume(other.thread_id, Reject())
    runner.feedback(other.thread_id, 0.2)
    assert [(f.workflow, f.score) for f in runner.feedback_list(workflow="pay")] == [("pay", 0.9)]
    client = RecordingClient()
    assert runner.export_feedback(client, run_id_for=lambda fb: f"run-{fb.thread_id}") == 2
    assert client.calls[0] == (f"run-{view.thread_id}", "helpfulness", 0.9, "good")
    assert runner.export_feedback(client, run_id_for=lambda fb: fb.thread_id) == 0  # each sent once
    assert [e.event for e in runner.history(view.thread_id)][-1] == "feedback"


# -- exactly-once side effects ------------------------------------------------------------------------


def test_an_approved_effect_is_not_repeated_after_sigkill(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("charge").thread_id
    crashed = python(db, f"from hitl_graphs import Runner, Approve\nwith Runner.open() as r: r.resume({thread_id!r}, Approve(actor='ana'))",
                     HITL_TEST_DIE="charged")
    assert crashed.returncode == -signal.SIGKILL
    assert effects() == ["charge:30"]  # charged, then killed before the node returned
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        with pytest.raises(AlreadyDecidedError, match="awaits recovery"):
            runner.resume(thread_id, Approve(actor="bob"))
        (recovered,) = runner.recover()
        assert recovered.state["receipt"] == {"id": "rcpt-1", "amount": 30}
        assert recovered.state["outcome"] == "charged"
    assert effects() == ["charge:30"]  # not charged again


def test_audit_export_and_feedback_from_the_cli(db: str, effects_file: Path, tmp_path: Path) -> None:
    thread_id = json.loads(hitl(db, "run", "pay", "--json").stdout)["thread_id"]
    assert hitl(db, "approve", thread_id, "--actor", "ana").returncode == 0
    out = tmp_path / "audit.jsonl"
    exported = hitl(db, "audit", "export", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["event"] for e in lines] == ["started", "review_requested", "decided", "applied", "completed"]
    assert all(len(e["hash"]) == 64 for e in lines) and lines[1]["prev_hash"] == lines[0]["hash"]
    ok = hitl(db, "audit", "verify")
    assert ok.returncode == 0 and "audit log intact: 5 entries" in ok.stdout
    rated = hitl(db, "feedback", thread_id, "--score", "0.75", "--comment", "fine", "--json")
    assert json.loads(rated.stdout)["score"] == 0.75
    listed = json.loads(hitl(db, "feedback", "--list", "--workflow", "pay", "--json").stdout)
    assert [(f["thread_id"], f["score"], f["comment"]) for f in listed] == [(thread_id, 0.75, "fine")]
    bad = hitl(db, "feedback", thread_id, "--score", "7")
    assert bad.returncode != 0


async def test_await_decision_is_the_old_name_of_await_for_decision(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        view = await runner.astart("pay")
        done = await runner.await_decision(view.thread_id, timeout=0.05, poll=0.01)
    assert (done.status, done.outcome) == ("done", "rejected")

"""Durability across processes: resume elsewhere, one winner among racing deciders, crash recovery."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hitl_graphs import AlreadyDecidedError, Approve, Reject, Runner
from tests.conftest import ROOT, hitl, python, subprocess_env
from tests.workflows import WORKFLOWS, effects


def test_resume_in_another_process(db: str, effects_file: Path) -> None:
    started = python(db, "from hitl_graphs import Runner\n"
                         "with Runner.open() as r: print(r.start('pay', {'to': 'acme', 'amount': 5}).thread_id)")
    assert started.returncode == 0, started.stderr
    thread_id = started.stdout.strip()
    resumed = python(db, "import sys\nfrom hitl_graphs import Runner, Modify\n"
                         f"with Runner.open() as r: print(r.resume({thread_id!r}, Modify(patch={{'amount': 6}})).status)")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "done"
    assert effects() == ["prepare", "pay:acme:6"]
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        assert runner.show(thread_id).state["status"] == "paid"


RACER = """
import os, sys, time, json
from hitl_graphs import Runner, Approve, Reject, HitlError
kind, go = sys.argv[1], sys.argv[2]
with Runner.open() as r:
    decision = Approve(actor="p%d" % os.getpid()) if kind == "approve" else Reject(actor="p%d" % os.getpid())
    while not os.path.exists(go):
        time.sleep(0.001)
    try:
        view = r.resume(sys.argv[3], decision)
        print(json.dumps({"ok": True, "outcome": view.outcome}))
    except HitlError as e:
        print(json.dumps({"ok": False, "error": type(e).__name__, "message": str(e)}))
"""


@pytest.mark.parametrize("kinds", [("approve", "approve"), ("approve", "reject")], ids=["approve-approve", "approve-reject"])
def test_exactly_one_concurrent_resume_wins(db: str, effects_file: Path, tmp_path: Path, kinds: tuple[str, str]) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        for round_ in range(3):
            thread_id = runner.start("pay", {"to": f"acme{round_}", "amount": 10}).thread_id
            go = tmp_path / f"go-{kinds[1]}-{round_}"
            procs = [
                subprocess.Popen([sys.executable, "-c", "import tests.workflows\n" + RACER, kind, str(go), thread_id],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=subprocess_env(db), cwd=ROOT)
                for kind in kinds
            ]
            time.sleep(1.5)  # both processes imported, connected and waiting
            go.write_text("go")
            results = []
            for p in procs:
                stdout, stderr = p.communicate(timeout=60)
                assert p.returncode == 0, stderr
                results.append(json.loads(stdout))
            winners = [r for r in results if r["ok"]]
            losers = [r for r in results if not r["ok"]]
            assert len(winners) == 1 and len(losers) == 1, results
            assert losers[0]["error"] == "AlreadyDecidedError", losers
            assert "already decided" in losers[0]["message"]
            paid = [e for e in effects() if e.startswith(f"pay:acme{round_}:")]
            assert len(paid) == (1 if winners[0]["outcome"] == "completed" else 0)
            decided = [e for e in runner.history(thread_id) if e.event == "decided"]
            assert len(decided) == 1
            assert runner.show(thread_id).status == "done"


def test_crash_after_decision_is_finished_with_the_recorded_decision(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("pay").thread_id
    crashed = python(db, f"from hitl_graphs import Runner, Approve\nwith Runner.open() as r: r.resume({thread_id!r}, Approve(actor='ana'))",
                     HITL_TEST_DIE="pay")
    assert crashed.returncode == -signal.SIGKILL
    assert effects() == ["prepare"]
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        assert runner.pending() == []  # the person is not asked again
        view = runner.show(thread_id)
        assert view.awaiting_recovery and view.reviews == ()
        with pytest.raises(AlreadyDecidedError, match="already decided \\(approve by ana\\) and awaits recovery"):
            runner.resume(thread_id, Reject(actor="bob"))
        listed = hitl(db, "pending")
        assert "1 thread(s) hold a decision a crash kept from being applied: run `hitl recover`" in listed.stdout
        (recovered,) = runner.recover()
        assert (recovered.status, recovered.outcome) == ("done", "completed")
        assert effects() == ["prepare", "pay:acme:120"]
        assert runner.recover() == []
        events = [e.event for e in runner.history(thread_id)]
        assert events.count("decided") == 1
        assert events[-3:] == ["recovering", "applied", "completed"]


KILL_ON_SYNC = """
import os, signal
from hitl_graphs.storage.sqlite.ledger import SqliteLedger as Ledger
from hitl_graphs import Runner, Approve
def die(*a, **k):
    os.kill(os.getpid(), signal.SIGKILL)
Ledger.sync = die
"""


def test_reconcile_a_pause_the_ledger_never_heard_of(db: str, effects_file: Path) -> None:
    crashed = python(db, KILL_ON_SYNC + "with Runner.open() as r: r.start('pay', thread_id='t-crash')")
    assert crashed.returncode == -signal.SIGKILL
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        (review,) = runner.pending()  # nothing pending is missing
        assert (review.thread_id, review.node) == ("t-crash", "review")
        assert runner.resume("t-crash", Approve()).outcome == "completed"
        assert [e.event for e in runner.history("t-crash")][:3] == ["started", "reconciled", "review_requested"]
    assert effects() == ["prepare", "pay:acme:120"]


def test_reconcile_a_resume_whose_end_the_ledger_missed(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("pay").thread_id
    crashed = python(db, KILL_ON_SYNC + f"with Runner.open() as r: r.resume({thread_id!r}, Approve())")
    assert crashed.returncode == -signal.SIGKILL
    assert effects() == ["prepare", "pay:acme:120"]  # the payment ran, then the process died
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        assert runner.pending() == []  # nothing shows as pending that is not
        view = runner.show(thread_id)
        assert (view.status, view.outcome, view.awaiting_recovery) == ("done", "completed", ())
        assert runner.recover() == []
    assert effects() == ["prepare", "pay:acme:120"]


def test_two_recoveries_at_once_apply_the_decision_once(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("pay").thread_id
    crashed = python(db, f"from hitl_graphs import Runner, Approve\nwith Runner.open() as r: r.resume({thread_id!r}, Approve())",
                     HITL_TEST_DIE="pay")
    assert crashed.returncode == -signal.SIGKILL
    procs = [subprocess.Popen([sys.executable, "-m", "hitl_graphs.cli", "recover", "--json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=subprocess_env(db), cwd=ROOT) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    recovered = [json.loads(out) for out, _ in outs]
    assert sorted(len(r) for r in recovered) == [0, 1]  # one process finished it, the other found nothing to do
    assert effects() == ["prepare", "pay:acme:120"]
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        assert runner.show(thread_id).outcome == "completed"

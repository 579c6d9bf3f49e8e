"""The `hitl` walk-through, each command its own process, as a person at a shell would run it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import fingerprint, hitl


def hitl_actor() -> str:
    import getpass
    import os

    return os.environ.get("HITL_ACTOR") or getpass.getuser()
from tests.workflows import effects


def _json(result) -> object:  # type: ignore[no-untyped-def]
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_walk_through_across_processes(db: str, effects_file: Path) -> None:
    started = _json(hitl(db, "run", "pay", "--input", '{"to": "acme", "amount": 120}', "--json"))
    assert started["status"] == "paused"
    thread_id = started["thread_id"]
    (listed,) = _json(hitl(db, "pending", "--json"))
    for key in ("thread_id", "review_id", "workflow", "node", "kind", "allowed", "created_at"):
        assert key in listed
    assert (listed["thread_id"], listed["workflow"], listed["node"], listed["kind"]) == (thread_id, "pay", "review", "gate")
    assert _json(hitl(db, "pending", "--workflow", "email", "--json")) == []
    shown = _json(hitl(db, "show", thread_id, "--json"))
    assert shown["reviews"][0]["review_id"] == listed["review_id"]
    assert shown["state"]["amount"] == 120
    done = _json(hitl(db, "modify", thread_id, "--patch", '{"amount": 99}', "--actor", "ana", "--comment", "cap", "--json"))
    assert (done["status"], done["reviews"], done["state"]["status"]) == ("done", [], "paid")
    assert effects() == ["prepare", "pay:acme:99"]
    history = _json(hitl(db, "history", thread_id, "--json"))
    decided = [e for e in history if e["event"] == "decided"]
    assert decided[0]["actor"] == "ana" and decided[0]["data"]["patch"] == {"amount": 99}
    text = hitl(db, "history", thread_id)
    assert "decided" in text.stdout and "by ana" in text.stdout


def test_approve_and_reject_from_the_shell(db: str, effects_file: Path) -> None:
    a = _json(hitl(db, "run", "approval", "--thread", "deploy-1", "--json"))
    assert a["reviews"][0]["source"] == "breakpoint"
    assert _json(hitl(db, "approve", "deploy-1", "--json"))["state"]["executions"] == 1
    _json(hitl(db, "run", "pay", "--thread", "pay-1", "--json"))
    rejected = _json(hitl(db, "reject", "pay-1", "--reason", "duplicate", "--json"))
    assert (rejected["status"], rejected["outcome"]) == ("done", "rejected")
    assert "pay:acme:120" not in effects()


BAD = [
    ("malformed-json", ["modify", "{t}", "--patch", "{nope"], "error: --patch is not valid JSON"),
    ("not-an-object", ["modify", "{t}", "--patch", "[1]"], "error: --patch must be a JSON object, got list"),
    ("unknown-thread", ["approve", "ghost"], "error: thread 'ghost' does not exist; nothing was started"),
    ("wrong-field", ["modify", "{t}", "--patch", '{"to": "x"}'], "error: field 'to' may not be changed in this review"),
    ("wrong-type", ["modify", "{t}", "--patch", '{"amount": "lots"}'], "error: field 'amount' expects int, got str"),
    ("not-pending", ["approve", "{t}", "--review", "feedbeef"], "error: review 'feedbeef' is not pending on thread"),
    ("bad-input", ["run", "pay", "--input", "{"], "error: --input is not valid JSON"),
    ("unknown-workflow", ["run", "nope"], "error: no workflow named 'nope'"),
]


@pytest.mark.parametrize(("args", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_exits_nonzero_with_one_line_and_changes_nothing(db: str, effects_file: Path, args: list[str], message: str) -> None:
    thread_id = _json(hitl(db, "run", "pay", "--json"))["thread_id"]
    before = fingerprint(db, thread_id)
    result = hitl(db, *[a.replace("{t}", thread_id) for a in args])
    assert result.returncode == 1
    assert result.stderr.startswith(message), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert fingerprint(db, thread_id) == before


def test_already_decided_and_finished(db: str, effects_file: Path) -> None:
    first = _json(hitl(db, "run", "pay", "--json"))
    thread_id, review_id = first["thread_id"], first["reviews"][0]["review_id"]
    assert hitl(db, "approve", thread_id).returncode == 0
    again = hitl(db, "reject", thread_id, "--review", review_id)
    assert again.returncode == 1
    assert again.stderr.startswith(f"error: review '{review_id[:12]}' of thread '{thread_id}' was already decided (approve")
    finished = hitl(db, "approve", thread_id)
    assert finished.stderr.strip() == (
        f"error: thread '{thread_id}' has no pending review: its last review '{review_id[:12]}' was already decided "
        f"(approve by {hitl_actor()}) and the thread ended (completed)"
    )


def test_app_option_loads_user_workflows(db: str, tmp_path: Path) -> None:
    app = tmp_path / "myapp.py"
    app.write_text(
        "from hitl_graphs import Workflow, register\n"
        "from hitl_graphs.examples import approval_graph\n"
        "register(Workflow('mine', lambda: approval_graph().compile(interrupt_before=['execute']),\n"
        "                  on_approve={'approved': True}), replace=True)\n"
    )
    result = hitl(db, "--app", "myapp", "run", "mine", "--json", PYTHONPATH=str(tmp_path), HITL_APP="")
    assert _json(result)["status"] == "paused"  # type: ignore[index]
    missing = hitl(db, "--app", "no_such_module", "pending", HITL_APP="")
    assert missing.returncode == 1 and missing.stderr.startswith("error: cannot import --app module 'no_such_module'")


def test_demo_runs_without_a_terminal(db: str) -> None:
    result = hitl(db, "demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for pattern in ("1 · Plan review", "2 · Tool-call approval", "3 · Multi-step gates", "4 · Escalation"):
        assert pattern in out
    assert "another process sees the pending review" in out
    assert "token create --actor you" in out and "serve` and open http://127.0.0.1:8000/" in out  # the way to the inbox
    assert "refused: field 'plan' expects list" in out  # the scripted bad edit, shown and survived
    assert "refused: field 'args.account_id' expects string" in out
    assert out.count("scripted decision:") >= 8
    assert out.count("done (completed)") == 4
    assert "ran: Research the breakthroughs, Pick three, Write a 3-line summary" in out
    # the thread it tells the reader to come back to is left paused, and the printed command works
    (thread_id,) = re.findall(r"^  hitl approve (\S+)$", out, re.M)
    assert [r["thread_id"] for r in _json(hitl(db, "pending", "--json"))] == [thread_id]  # type: ignore[index]
    approved = hitl(db, "approve", thread_id, "--json")
    assert _json(approved)["status"] in ("paused", "done")  # type: ignore[index]
    assert [e["event"] for e in _json(hitl(db, "history", thread_id, "--json"))].count("decided") == 1  # type: ignore[union-attr]
    assert "this walk leaves it paused for you" in out

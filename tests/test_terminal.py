"""The console reviewer with a person typing at a real (pseudo) terminal."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect

from tests.conftest import ROOT, subprocess_env


PROMPT = r"decision .*\[approve/modify/reject(/state)?\]"  # Rich may wrap the choices in style codes
ANY_PROMPT = r"decision .*\[[a-z/]+\]"


def _spawn(db: str, *args: str) -> pexpect.spawn:
    env = subprocess_env(db, HITL_ACTOR="ana", COLUMNS="120", TERM="xterm", NO_COLOR="1")
    env.pop("EDITOR", None)
    env.pop("VISUAL", None)
    env.pop("HITL_APP", None)
    return pexpect.spawn(sys.executable, ["-m", "hitl_graphs.cli", "--db", db, *args], env=env, cwd=str(ROOT),
                         encoding="utf-8", timeout=60, dimensions=(50, 120))


def test_demo_at_a_terminal_with_typed_decisions(db: str) -> None:
    child = _spawn(db, "demo")
    child.expect("1 · Plan review")
    child.expect(PROMPT)
    child.sendline("modify")
    child.expect("patch as JSON")
    child.sendline('{"plan": "all at once"}')  # a bad edit: refused, asked again
    child.expect("refused: field 'plan' expects list")
    child.expect(PROMPT)
    child.sendline("modify")
    child.expect("patch as JSON")
    child.sendline('{"plan": ["look", "think", "write"]}')
    child.expect("Plan v3")  # re-planned after two steps, reviewed again
    child.expect(PROMPT)
    child.sendline("reject")
    child.expect("reason")
    child.sendline("enough")
    child.expect(r"done \(rejected\) ran: look, think")
    decided = 0
    while True:
        index = child.expect([ANY_PROMPT, "Next: `hitl pending`", pexpect.EOF])
        if index != 0:
            break
        child.sendline("approve")
        decided += 1
    assert index == 1, child.before
    assert decided >= 6  # tool calls, three phases, the escalation
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_hitl_review_walks_everything_pending(db: str, effects_file: Path) -> None:
    from hitl_graphs import Runner

    with Runner.open(db) as runner:
        first = runner.start("email")
        second = runner.start("approval")
    child = _spawn(db, "review")
    child.expect("Send this mail")
    child.expect(PROMPT)
    child.sendline("modify")
    child.expect("patch as JSON")
    child.sendline('{"subject": "Report attached"}')
    child.expect("done")
    child.expect("Paused before execute")
    child.expect(PROMPT)
    child.sendline("reject")
    child.expect("reason")
    child.sendline("not today")
    child.expect("2 review\\(s\\) decided")
    child.expect(pexpect.EOF)
    with Runner.open(db) as runner:
        assert runner.show(first.thread_id).state["subject"] == "Report attached"
        assert runner.show(second.thread_id).outcome == "rejected"
        assert [e.actor for e in runner.history(first.thread_id) if e.event == "decided"] == ["ana"]


def test_review_refuses_without_a_terminal(db: str) -> None:
    from tests.conftest import hitl

    result = hitl(db, "review")
    assert result.returncode == 1 and "needs a terminal" in result.stderr


def test_modify_in_an_editor_sends_only_what_changed(tmp_path: Path) -> None:
    import io
    import json

    from rich.console import Console

    from hitl_graphs import Modify, ReviewRequest
    from hitl_graphs.reviewer import ConsoleReviewer

    editor = tmp_path / "editor.py"
    editor.write_text(
        "import json, sys\n"
        "path = sys.argv[1]\n"
        "values = json.load(open(path))\n"
        "assert values == {'plan': ['a', 'b'], 'title': 'x'}, values\n"
        "values['plan'] = ['b', 'a', 'c']\n"
        "json.dump(values, open(path, 'w'))\n"
    )
    review = ReviewRequest(
        review_id="r", thread_id="t", workflow="w", node="n", position="before", kind="plan", title="Plan",
        payload={"plan": ["a", "b"]}, allowed=("approve", "modify", "reject"), editable=("plan", "title"),
        source="interrupt", created_at="2026-01-01T00:00:00Z", payload_hash="h1",
    )
    reviewer = ConsoleReviewer(Console(file=io.StringIO()), actor="ana", editor=f"{sys.executable} {editor}",
                               ask=lambda prompt, choices, default: "modify")
    decision = reviewer.decide(review, {"title": "x"})
    assert decision == Modify(actor="ana", seen="h1", patch={"plan": ["b", "a", "c"]})
    assert json.loads(decision.model_dump_json())["patch"] == {"plan": ["b", "a", "c"]}

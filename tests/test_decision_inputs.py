"""What a person types as a decision in Python: a mistake is refused naming the fix, and the
short forms that read well are accepted."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from hitl_graphs import Approve, Escalate, InvalidDecisionError, Modify, Reject, Respond, Runner, parse_decision
from tests.conftest import fingerprint
from tests.workflows import WORKFLOWS, effects

MISTAKES = [
    ("the-word", "approve", "resume() takes a decision, not the text 'approve': pass Approve()"),
    ("the-word-reject", "Reject", """resume() takes a decision, not the text 'Reject': pass Reject(reason="...")"""),
    ("the-class", Approve, "resume() takes a decision, not the class Approve: pass Approve()"),
    ("the-modify-class", Modify, "resume() takes a decision, not the class Modify: pass Modify(patch={...})"),
    ("true", True, "resume() takes a decision, not True: pass Approve() to approve"),
    ("false", False, """resume() takes a decision, not False: pass Reject(reason="...") to reject"""),
    ("other-text", "yes please", "resume() takes a decision, not the text 'yes please': pass Approve(), Modify(patch={...})"),
    ("a-number", 1, "resume() takes a decision, not an int (1): pass Approve()"),
]


@pytest.mark.parametrize(("value", "message"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES])
def test_what_is_not_a_decision_is_refused_naming_the_fix(runner: Runner, db: str, value: Any, message: str) -> None:
    thread_id = runner.start("pay").thread_id  # `runner` runs this once per driver: resume, then aresume
    before = fingerprint(db, thread_id)
    with pytest.raises(InvalidDecisionError, match=re.escape(message)):
        runner.resume(thread_id, value)
    assert fingerprint(db, thread_id) == before
    assert effects() == ["prepare"]


def test_parse_decision_names_the_fix_too() -> None:
    with pytest.raises(InvalidDecisionError, match=re.escape("""'approve' is not JSON; write '{"kind": "approve"}', or pass Approve()""")):
        parse_decision("approve")
    with pytest.raises(InvalidDecisionError, match=re.escape("a bool (True) is not a decision; pass Approve()")):
        parse_decision(True)  # type: ignore[arg-type]


def test_positional_forms_read_as_their_field() -> None:
    assert Reject("nope") == Reject(reason="nope")
    assert Modify({"amount": 99}, actor="ana") == Modify(patch={"amount": 99}, actor="ana")
    assert Respond("use staging") == Respond(text="use staging")
    assert Escalate("over my limit") == Escalate(reason="over my limit")
    assert Reject("nope").model_dump_json(exclude_none=True) == '{"kind":"reject","reason":"nope"}'
    assert parse_decision(Reject("nope").model_dump_json()) == Reject("nope")
    with pytest.raises(ValidationError, match="frozen"):
        Reject("nope").reason = "yes"  # type: ignore[misc]
    with pytest.raises(TypeError, match=re.escape("Reject got its reason twice; pass it once")):
        Reject("nope", reason="no")
    with pytest.raises(ValidationError, match="at least one field"):
        Modify({})


def test_positional_forms_decide_a_thread(runner: Runner) -> None:
    first = runner.start("pay")
    done = runner.resume(first.thread_id, Modify({"amount": 99}, actor="ana"))
    assert (done.status, done.state["status"]) == ("done", "paid")
    second = runner.start("pay")
    rejected = runner.resume(second.thread_id, Reject("duplicate", actor="bo"))
    assert rejected.outcome == "rejected"
    assert [e for e in runner.history(second.thread_id) if e.event == "decided"][0].data["reason"] == "duplicate"
    assert effects() == ["prepare", "pay:acme:99", "prepare"]


async def test_a_json_string_still_works_but_is_deprecated(db: str, effects_file: object) -> None:
    # a Runner of its own (not the `runner` fixture's adapter): the warning must point at this file
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("pay").thread_id
        with pytest.warns(DeprecationWarning, match=re.escape("pass parse_decision(text)")) as caught:
            done = runner.resume(thread_id, '{"kind": "approve", "actor": "ana"}')
        assert caught[0].filename == __file__  # the warning points at the caller's line
        assert done.status == "done"
        thread_id = runner.start("pay").thread_id
        with pytest.warns(DeprecationWarning, match=re.escape("pass parse_decision(text)")) as caught:
            done = await runner.aresume(thread_id, '{"kind": "approve", "actor": "ana"}')
        assert caught[0].filename == __file__
        assert done.status == "done"

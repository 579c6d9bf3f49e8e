"""The runtime read as a human review: run to the pause, look, decide, check what ran."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from hitl_graphs import (
    AlreadyDecidedError,
    Approve,
    Decision,
    InvalidDecisionError,
    Modify,
    NoPendingReviewError,
    PatchError,
    Reject,
    ReviewNotPendingError,
    Runner,
    ThreadExistsError,
    UnknownThreadError,
    UnknownWorkflowError,
    Workflow,
    request_review,
    run_once,
)
from tests.conftest import fingerprint
from tests.drivers import Driven
from tests.workflows import effect, effects


@dataclass(frozen=True)
class Case:
    id: str
    workflow: str
    decision: Decision
    status: str
    outcome: str | None
    effects: list[str]
    state: dict[str, Any]


CASES = [
    Case("gate-approve", "pay", Approve(actor="ana"), "done", "completed",
         ["prepare", "pay:acme:120"], {"status": "paid", "amount": 120}),
    Case("gate-modify", "pay", Modify(patch={"amount": 90, "memo": "capped"}, actor="ana"), "done", "completed",
         ["prepare", "pay:acme:90"], {"status": "paid", "amount": 90, "memo": "capped"}),
    Case("gate-reject", "pay", Reject(reason="too much", actor="ana"), "done", "rejected",
         ["prepare"], {"status": "prepared"}),
    Case("breakpoint-approve", "approval", Approve(), "done", "completed", [],
         {"approved": True, "result": "did restart on web-frontend", "executions": 1}),
    Case("breakpoint-modify", "approval", Modify(patch={"proposed_action": {"action": "stop", "target": "db"}}),
         "done", "completed", [], {"approved": True, "result": "did stop on db", "executions": 1}),
    Case("breakpoint-reject-route", "approval", Reject(reason="no"), "done", "rejected", [],
         {"approved": False, "result": "Action rejected by user", "executions": 0}),
    Case("breakpoint-reject-no-route", "approval-noroute", Reject(reason="no"), "done", "rejected", [],
         {"approved": None}),
    Case("raw-interrupt-approve", "raw", Approve(actor="bo"), "done", "completed", [],
         {"answer": {"kind": "approve", "actor": "bo"}}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_decision_outcomes(runner: Driven, case: Case) -> None:
    paused = runner.start(case.workflow)
    assert paused.status == "paused"
    assert len(paused.reviews) == 1
    view = runner.resume(paused.thread_id, case.decision)
    assert (view.status, view.outcome) == (case.status, case.outcome)
    assert view.reviews == ()
    assert effects() == case.effects
    for key, value in case.state.items():
        assert view.state.get(key) == value, key
    assert "result" not in case.state or runner.show(paused.thread_id).state["result"] == case.state["result"]


def test_the_person_sees_what_the_review_asks(runner: Driven) -> None:
    view = runner.start("pay", {"to": "acme", "amount": 120})
    (review,) = view.reviews
    assert review.thread_id == view.thread_id
    assert (review.workflow, review.node, review.position, review.kind) == ("pay", "review", "before", "gate")
    assert review.payload == {"to": "acme", "amount": 120}
    assert review.allowed == ("approve", "modify", "reject")
    assert review.editable == ("amount", "memo")
    assert review.source == "interrupt"
    assert runner.pending() == [review]
    assert runner.pending(workflow="approval") == []
    assert runner.show(view.thread_id).reviews == (review,)


def test_static_breakpoint_review_and_no_restart(runner: Driven) -> None:
    """The seed resumes with `ainvoke({"approved": ...})`, which restarts the graph; we continue it."""
    view = runner.start("approval", {"task": "api"})
    (review,) = view.reviews
    assert (review.source, review.kind, review.node, review.position) == ("breakpoint", "breakpoint", "execute", "before")
    assert review.payload["next"] == ["execute"]
    assert review.payload["changed"]["proposed_action"] == {"action": "restart", "target": "api"}
    assert review.editable == ("proposed_action",)
    done = runner.resume(view.thread_id, Approve())
    assert done.state["executions"] == 1
    steps = [e.event for e in runner.history(view.thread_id)]
    assert steps == ["started", "review_requested", "decided", "applied", "completed"]


def test_interrupt_after_pauses_after_the_node(runner: Driven) -> None:
    view = runner.start("after", {})
    (review,) = view.reviews
    assert (review.node, review.position) == ("write", "after")
    assert effects() == ["write"]
    done = runner.resume(view.thread_id, Modify(patch={"draft": "better draft"}))
    assert done.outcome == "completed"
    assert effects() == ["write", "publish:better draft"]


def test_parallel_reviews_are_answered_by_id(runner: Driven) -> None:
    view = runner.start("fanout")
    by_node = {r.node: r for r in view.reviews}
    assert set(by_node) == {"left", "right"}
    with pytest.raises(ReviewNotPendingError, match="has 2 pending reviews; pass a review id"):
        runner.resume(view.thread_id, Approve())
    after_one = runner.resume(view.thread_id, Reject(), review_id=by_node["right"].review_id)
    assert after_one.status == "paused"
    assert [r.review_id for r in after_one.reviews] == [by_node["left"].review_id]
    assert effects() == []
    with pytest.raises(AlreadyDecidedError, match="already decided"):
        runner.resume(view.thread_id, Approve(), review_id=by_node["right"].review_id)
    done = runner.resume(view.thread_id, Approve(), review_id=by_node["left"].review_id[:8])
    assert done.status == "done"
    assert sorted(done.state["done"]) == ["left", "right:skipped"]
    assert effects() == ["branch:left"]


BAD = [
    ("unknown-field", Modify(patch={"nope": 1}), PatchError, "unknown field 'nope' in patch; the state has: amount, memo, status, to"),
    ("not-editable", Modify(patch={"to": "mallory"}), PatchError, "field 'to' may not be changed in this review; editable fields: amount, memo"),
    ("wrong-type", Modify(patch={"amount": "ninety"}), PatchError, "field 'amount' expects int, got str \"ninety\""),
    ("wrong-type-float", Modify(patch={"amount": 9.5}), PatchError, "field 'amount' expects int, got float 9.5"),
    ("bad-kind", {"kind": "aprove"}, InvalidDecisionError, "kind must be one of approve, modify, reject, respond, escalate, got 'aprove'"),
    ("empty-patch", {"kind": "modify", "patch": {}}, InvalidDecisionError, "at least one field"),
]


@pytest.mark.parametrize(("decision", "error", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_refused_decisions_leave_the_thread_as_it_was(runner: Driven, db: str, decision: Any, error: type, message: str) -> None:
    view = runner.start("pay")
    before = fingerprint(db, view.thread_id)
    with pytest.raises(error, match=_literal(message)):
        runner.resume(view.thread_id, decision)
    assert fingerprint(db, view.thread_id) == before
    assert runner.pending() == list(view.reviews)
    assert runner.resume(view.thread_id, Approve()).outcome == "completed"


def test_kind_not_allowed_is_refused(runner: Driven, db: str) -> None:
    view = runner.start("fanout")
    left = next(r for r in view.reviews if r.node == "left")
    before = fingerprint(db, view.thread_id)
    with pytest.raises(InvalidDecisionError, match=f"review '{left.review_id[:12]}' does not allow 'modify'; allowed: approve, reject"):
        runner.resume(view.thread_id, Modify(patch={"items": []}), review_id=left.review_id)
    assert fingerprint(db, view.thread_id) == before


def test_unknown_thread_creates_nothing(runner: Driven, db: str) -> None:
    runner.start("pay")
    before = fingerprint(db, "ghost")
    with pytest.raises(UnknownThreadError, match="thread 'ghost' does not exist; nothing was started"):
        runner.resume("ghost", Approve())
    with pytest.raises(UnknownThreadError):
        runner.show("ghost")
    assert fingerprint(db, "ghost") == before


def test_finished_thread_says_so(runner: Driven, db: str) -> None:
    view = runner.start("pay")
    runner.resume(view.thread_id, Approve())
    before = fingerprint(db, view.thread_id)
    with pytest.raises(AlreadyDecidedError, match=f"thread '{view.thread_id}' has no pending review: its last review "
                       f"'{view.reviews[0].review_id[:12]}' was already decided \\(approve\\) and the thread ended \\(completed\\)"):
        runner.resume(view.thread_id, Reject())
    with pytest.raises(AlreadyDecidedError, match="already decided \\(approve\\)"):
        runner.resume(view.thread_id, Approve(), review_id=view.reviews[0].review_id)
    with pytest.raises(AlreadyDecidedError, match="has no pending review: its last review"):
        runner.resume(view.thread_id, Approve(), review_id="zzzzzzzz")
    assert fingerprint(db, view.thread_id) == before
    assert effects().count("pay:acme:120") == 1
    undecided = runner.start("approval-noroute")
    runner.cancel(undecided.thread_id)
    with pytest.raises(NoPendingReviewError, match="has no pending review; it ended \\(cancelled\\)"):
        runner.resume(undecided.thread_id, Approve())


def test_start_refuses_a_used_thread_id_and_unknown_workflow(runner: Driven) -> None:
    runner.start("pay", thread_id="t-1")
    with pytest.raises(ThreadExistsError, match="thread 't-1' already"):
        runner.start("email", thread_id="t-1")
    with pytest.raises(UnknownWorkflowError, match="no workflow named 'nope'"):
        runner.start("nope")


def test_cancel_ends_the_thread_and_its_reviews(runner: Driven) -> None:
    view = runner.start("fanout")
    done = runner.cancel(view.thread_id, actor="ops", reason="duplicate")
    assert (done.status, done.outcome, done.reviews) == ("done", "cancelled", ())
    assert runner.pending() == []
    assert effects() == []
    with pytest.raises(ReviewNotPendingError, match=f"review '{view.reviews[0].review_id[:12]}' of thread '{view.thread_id}' was cancelled"):
        runner.resume(view.thread_id, Approve(), review_id=view.reviews[0].review_id)
    with pytest.raises(NoPendingReviewError, match="it ended \\(cancelled\\)"):
        runner.resume(view.thread_id, Approve())
    events = [(e.event, e.actor) for e in runner.history(view.thread_id)]
    assert events[-6:] == [("cancel_requested", "ops"), ("review_cancelled", None), ("review_cancelled", None),
                           ("cancelled", None), ("refused", None), ("refused", None)]
    where = next(e for e in runner.history(view.thread_id) if e.event == "cancel_requested").data
    assert where["reason"] == "duplicate" and {w["node"] for w in where["at"]} == {"left", "right"}


def test_history_records_who_decided_what(runner: Driven) -> None:
    view = runner.start("pay")
    runner.resume(view.thread_id, Modify(patch={"amount": 7}, actor="ana", comment="cap it"))
    decided = [e for e in runner.history(view.thread_id) if e.event == "decided"]
    assert len(decided) == 1
    assert decided[0].actor == "ana"
    assert decided[0].review_id == view.reviews[0].review_id
    assert decided[0].data["patch"] == {"amount": 7}
    assert decided[0].data["comment"] == "cap it"


def test_reconcile_after_a_checkpoint_without_ledger(runner: Driven, db: str) -> None:
    """A thread resumed behind the runner's back (plain LangGraph) is noticed, not double-listed."""
    from langgraph.types import Command

    view = runner.start("pay")
    graph = runner.graph("pay")
    graph.invoke(Command(resume={view.reviews[0].review_id: {"kind": "approve"}}), {"configurable": {"thread_id": view.thread_id}})
    with pytest.raises(ReviewNotPendingError, match="no longer pending"):
        runner.resume(view.thread_id, Approve())
    assert runner.pending() == []
    assert runner.show(view.thread_id).status == "done"


def _literal(message: str) -> str:
    import re

    return re.escape(message)


def test_runner_docstring_example(tmp_path: Path) -> None:
    import doctest

    import hitl_graphs
    import hitl_graphs.runner

    for module in (hitl_graphs, hitl_graphs.runner):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0


def test_verify_phrase_payload_patch_and_review_key(runner: Driven, db: str) -> None:
    view = runner.start("delete")
    (review,) = view.reviews
    assert (review.key, review.verify_phrase, review.patch_target) == ("call_delete_1", "DELETE r-42", "payload")
    before = fingerprint(db, view.thread_id)
    with pytest.raises(InvalidDecisionError, match="needs the verification phrase 'DELETE r-42' typed exactly; got 'delete r-42'"):
        runner.resume(view.thread_id, Approve(verification="delete r-42"))
    with pytest.raises(PatchError, match="field 'args.force' expects boolean: 'yes' is not of type 'boolean'"):
        runner.resume(view.thread_id, Modify(patch={"args": {"resource": "r-42", "force": "yes"}}, verification="DELETE r-42"))
    with pytest.raises(PatchError, match="field 'name' may not be changed"):
        runner.resume(view.thread_id, Modify(patch={"name": "drop"}, verification="DELETE r-42"))
    assert fingerprint(db, view.thread_id) == before
    done = runner.resume(view.thread_id, Modify(patch={"args": {"resource": "r-42", "force": True}}, verification="DELETE r-42"),
                         review_id="call_delete_1")
    assert done.state["deleted"] == ["r-42"]
    assert "args" not in done.state  # a payload patch is the node's to use, not a state update
    assert effects() == ["delete:r-42:True"]


def test_on_review_hook_fires_once_per_new_review(db: str, effects_file: Path) -> None:
    from tests.workflows import WORKFLOWS

    seen: list[tuple[str, str]] = []

    def notify(review: Any) -> None:
        seen.append((review.node, review.title))
        raise RuntimeError("the chat service is down")  # must not break the run

    with Runner.open(db, workflows=WORKFLOWS, on_review=notify) as runner:
        view = runner.start("fanout")
        assert sorted(seen) == [("left", "Run left?"), ("right", "Run right?")]
        runner.pending()
        runner.show(view.thread_id)
        right = next(r for r in view.reviews if r.node == "right")
        runner.resume(view.thread_id, Approve(), review_id=right.review_id)
        assert len(seen) == 2  # the left review is not new: no second notification
        loop = runner.start("loop")
        runner.resume(loop.thread_id, Reject())
        assert [t for _, t in seen[2:]] == ["Good enough?", "Good enough?"]


class _ChargeState(TypedDict, total=False):
    amount: int
    receipt: dict[str, Any]


async def _charge(state: _ChargeState) -> _ChargeState:
    decision = request_review("gate", {"amount": state["amount"]}, editable=("amount",))
    if decision.kind == "reject":
        return {}
    receipt = run_once("charge", lambda: (effect(f"async-charge:{state['amount']}"), {"amount": state["amount"]})[1])
    return {"receipt": receipt}


def _async_charge_graph() -> StateGraph[_ChargeState]:
    g = StateGraph(_ChargeState)
    g.add_node("charge", _charge)
    g.add_edge(START, "charge")
    g.add_edge("charge", END)
    return g


@pytest.mark.parametrize("workflows", [[Workflow("async-charge", _async_charge_graph)]], ids=["async-nodes"])
def test_async_nodes_pause_and_run_effects_once(runner: Driven) -> None:
    """`async def` nodes, as LangGraph's docs write them, on either driver."""
    view = runner.start("async-charge", {"amount": 3})
    (review,) = view.reviews
    assert (review.node, review.payload) == ("charge", {"amount": 3})
    done = runner.resume(view.thread_id, Modify(patch={"amount": 4}, actor="ana"))
    assert done.state["receipt"] == {"amount": 4}
    assert effects() == ["async-charge:4"]


def test_a_plain_interrupt_returns_the_decision_as_a_decision_dict(runner: Driven) -> None:
    """What the README promises a user's own `interrupt()` receives on resume."""
    from typing import get_type_hints

    from hitl_graphs import DecisionDict, parse_decision

    view = runner.start("raw", {"question": "ship it?"})
    assert (view.reviews[0].kind, view.reviews[0].payload) == ("custom", "ship it?")
    done = runner.resume(view.thread_id, Approve(actor="ana", comment="fine"))
    assert done.state["answer"] == {"kind": "approve", "actor": "ana", "comment": "fine"}
    assert isinstance(parse_decision(done.state["answer"]), Approve)
    view = runner.start("raw", {"question": "which?"})
    done = runner.resume(view.thread_id, Modify(patch={"question": "this one"}, actor="bo"))
    assert done.state["answer"] == {"kind": "modify", "patch": {"question": "this one"}, "actor": "bo"}
    assert done.state["question"] == "this one"  # the patch was written to the state too
    assert set(done.state["answer"]) <= set(get_type_hints(DecisionDict))


def test_the_library_registers_no_workflow_by_itself(tmp_path: Path) -> None:
    """Only the CLI (and whoever calls `register_examples`) knows the demo workflows."""
    import subprocess
    import sys

    code = ("from hitl_graphs import Runner, UnknownWorkflowError, registered\n"
            "assert registered() == {}, registered()\n"
            "with Runner.open(':memory:') as r:\n"
            "    try:\n        r.start('email')\n    except UnknownWorkflowError as e:\n        print(e)\n"
            "from hitl_graphs.examples import register_examples\nregister_examples()\n"
            "print(sorted(registered()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("no workflow named 'email'; registered: none")
    assert "plan-review" in lines[1] and "email" in lines[1]

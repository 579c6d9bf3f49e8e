"""Every template takes `timeout=` and `default=`: the sweep applies the default at the deadline."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from hitl_graphs import (
    AlwaysAskPolicy,
    Approve,
    AskOncePolicy,
    ConfigError,
    Escalate,
    Modify,
    NeverAskPolicy,
    Phase,
    Reject,
    Respond,
    Runner,
    ScriptedChatModel,
    Workflow,
    create_conversation_graph,
    create_escalation_graph,
    create_multi_step_graph,
    create_plan_review_graph,
    create_tool_approval_graph,
    default_levels,
)
from hitl_graphs.templates import ModelHandler
from hitl_graphs.templates.conversation import NO_REPLY
from hitl_graphs.examples.conversation import demo_reply
from hitl_graphs.examples.multi_step import demo_phase
from hitl_graphs.examples.plan_review import demo_planner, run_step
from hitl_graphs.examples.tool_approval import _intro_model, addition, get_bank_balance, get_phone_number
from tests.conftest import hitl

TIMEOUT = 0.3


def _plan(**kw: Any) -> Any:
    return create_plan_review_graph(ScriptedChatModel(responder=demo_planner), run_step, planning_interval=5, **kw)


def _tools(**kw: Any) -> Any:
    return create_tool_approval_graph(ScriptedChatModel(responder=_intro_model), [get_bank_balance, addition, get_phone_number],
                                      default_policy=AlwaysAskPolicy(), **kw)


def _phases(**kw: Any) -> Any:
    model = ScriptedChatModel(responder=demo_phase)
    return create_multi_step_graph([Phase("analyse", model, "Analyse."), Phase("plan", model, "Plan.")], **kw)


def _ladder(**kw: Any) -> Any:
    agent = ScriptedChatModel(script=['{"output": "Refund $10.", "confidence": 0.2}'])
    senior = ScriptedChatModel(script=['{"output": "Refund $10 to the card.", "confidence": 0.3}'])
    return create_escalation_graph(default_levels(ModelHandler(agent), ModelHandler(senior), human_role="reviewer",
                                                  manager_role="manager"), **kw)


CASES = {
    "plan-review": (_plan, {"task": "ship"}, Approve()),
    "tool-approval": (_tools, {"messages": [{"role": "user", "content": "What's the balance of account 56789?"}]}, Reject()),
    "multi-step": (_phases, {"task": "a parser"}, Approve()),
    "escalation": (_ladder, {"task": "refund #1"}, Approve()),
    "conversation": (lambda **kw: create_conversation_graph(ScriptedChatModel(responder=demo_reply), **kw),
                     {"task": "review add(a, b)"}, Respond(text="carry on")),
}


@pytest.mark.parametrize("name", list(CASES))
def test_every_template_applies_its_default_at_the_deadline(db: str, effects_file: Path, name: str) -> None:
    build, input, default = CASES[name]
    wf = Workflow(name, lambda: build(timeout=timedelta(seconds=TIMEOUT), default=default))
    with Runner.open(db, workflows=[wf]) as runner:
        view = runner.start(name, input)
        (review,) = view.reviews
        assert review.deadline is not None and review.default_decision is not None
        assert review.default_decision["kind"] == default.kind
        assert runner.sweep() == []  # not yet due
        time.sleep(TIMEOUT + 0.1)
        (swept,) = runner.sweep()
        decided = [e for e in runner.history(view.thread_id) if e.event == "decided"]
    assert [(e.review_id, e.data["kind"], e.data["by"], e.actor) for e in decided] == [
        (review.review_id, default.kind, "deadline", "hitl:deadline")]
    assert review.review_id not in {r.review_id for r in swept.reviews}


def test_a_conversation_turn_that_times_out_goes_on_with_the_default(db: str, effects_file: Path) -> None:
    wf = Workflow("chat", lambda: create_conversation_graph(ScriptedChatModel(responder=demo_reply), timeout=TIMEOUT))
    with Runner.open(db, workflows=[wf]) as runner:
        thread_id = runner.start("chat", {"task": "review add(a, b)"}).thread_id
        time.sleep(TIMEOUT + 0.1)
        (view,) = runner.sweep()
        assert view.status == "paused"  # the next turn: the conversation went on
        messages = view.state["messages"]
        assert [(m["role"], m["by"]) for m in messages] == [
            ("user", None), ("assistant", "agent"), ("user", "hitl:deadline"), ("assistant", "agent")]
        assert messages[2]["content"] == NO_REPLY
        assert view.reviews[0].title.startswith("Turn 2")
        # a person answering in time is not overridden
        runner.resume(thread_id, Modify(patch={"answer": "mine"}, actor="ana"))
        assert runner.sweep() == []


def test_a_cli_sweep_applies_a_template_default(db: str, effects_file: Path, tmp_path: Path) -> None:
    app = tmp_path / "timed_app.py"
    app.write_text(
        "from hitl_graphs import Workflow, register, Approve, ScriptedChatModel, create_plan_review_graph\n"
        "from hitl_graphs.examples.plan_review import demo_planner, run_step\n"
        "register(Workflow('timed-plan', lambda: create_plan_review_graph(ScriptedChatModel(responder=demo_planner),"
        " run_step, timeout=0.3, default=Approve())), replace=True)\n")
    env = {"PYTHONPATH": str(tmp_path), "HITL_APP": "timed_app"}
    started = hitl(db, "run", "timed-plan", "--input", '{"task": "ship"}', "--json", **env)
    assert started.returncode == 0, started.stderr
    time.sleep(0.4)
    swept = hitl(db, "sweep", "--json", **env)
    assert swept.returncode == 0, swept.stderr
    assert '"status": "done"' in swept.stdout and '"outcome": "completed"' in swept.stdout


# -- a default the review could not take is refused when the graph is built -------------------------

UNUSABLE = [
    ("plan-review", lambda d: _plan(timeout=1, default=d), Respond(text="go on"), "'respond'"),
    ("tool-approval", lambda d: _tools(timeout=1, default=d), Escalate(), "'escalate'"),
    ("multi-step", lambda d: _phases(timeout=1, default=d), Respond(text="go on"), "'respond'"),
    ("escalation", lambda d: _ladder(timeout=1, default=d), Respond(text="go on"), "'respond'"),
    ("conversation", lambda d: create_conversation_graph(demo_reply, timeout=1, default=d), Escalate(), "'escalate'"),
]


@pytest.mark.parametrize(("build", "default", "kind"), [u[1:] for u in UNUSABLE], ids=[u[0] for u in UNUSABLE])
def test_a_default_the_review_cannot_take_is_refused_when_the_graph_is_built(build: Any, default: Any, kind: str) -> None:
    with pytest.raises(ConfigError, match=f"default={kind} cannot apply: the review allows only .*; give one of them"):
        build(default)


@pytest.mark.parametrize("build", [u[1] for u in UNUSABLE], ids=[u[0] for u in UNUSABLE])
def test_a_default_cannot_be_an_edit_nobody_reviewed(build: Any) -> None:
    with pytest.raises(ConfigError, match="default=Modify cannot apply: an edit is a person's"):
        build(Modify(patch={"output": "x"}))


def test_a_gate_refuses_a_default_it_could_not_take_before_it_pauses(db: str, effects_file: Path) -> None:
    """Without this, the sweep records the default and the node then refuses it: the thread fails."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from hitl_graphs import request_review

    class S(TypedDict, total=False):
        done: bool

    def gate(state: S) -> S:
        request_review("gate", {}, title="Go?", allowed=("approve", "reject"), timeout=0.1, default=Respond(text="x"))
        return {"done": True}

    g = StateGraph(S)
    g.add_node("gate", gate)
    g.add_edge(START, "gate")
    g.add_edge("gate", END)
    with Runner.open(db, workflows=[Workflow("g", g)]) as runner, \
            pytest.raises(ConfigError, match="default='respond' cannot apply: the review allows only approve, reject"):
        runner.start("g", {})


# -- a verify-level call never runs by default --------------------------------------------------------


def test_a_verify_level_call_defaults_to_a_reject_whatever_the_default(db: str, effects_file: Path) -> None:
    graph = lambda: create_tool_approval_graph(  # noqa: E731
        ScriptedChatModel(responder=_intro_model), [get_bank_balance, addition, get_phone_number],
        policies={"get_bank_balance": AlwaysAskPolicy(level="verify", phrase="BALANCE {account_id}")},
        default_policy=NeverAskPolicy(), timeout=TIMEOUT, default=Approve())
    with Runner.open(db, workflows=[Workflow("verify", graph)]) as runner:
        view = runner.start("verify", {"messages": [{"role": "user", "content": "balance?"}]})
        (review,) = view.reviews
        assert review.verify_phrase == "BALANCE 56789"
        assert review.default_decision is not None and review.default_decision["kind"] == "reject"
        time.sleep(TIMEOUT + 0.1)
        (swept,) = runner.sweep()
    log = {e["call_id"]: e for e in swept.state["tool_log"]}
    assert (log["call_balance"]["decision"], log["call_balance"]["ran"]) == ("reject", False)


def test_a_gate_refuses_an_approve_default_for_a_verify_level_review() -> None:
    from hitl_graphs.gate import check_default

    with pytest.raises(ConfigError, match="a verify-level review cannot default to 'approve'"):
        check_default(Approve(), ("approve", "reject"), verify=True)


# -- escalation: nobody answered, so up one level; at the top, a reject --------------------------------


def test_an_escalate_default_climbs_and_the_top_level_rejects(db: str, effects_file: Path) -> None:
    wf = Workflow("ladder", lambda: _ladder(timeout=TIMEOUT, default=Escalate(reason="nobody answered")))
    with Runner.open(db, workflows=[wf]) as runner:
        view = runner.start("ladder", {"task": "refund #1"})
        (human,) = view.reviews
        assert (human.payload["level"], human.default_decision) == ("human", {"kind": "escalate", "reason": "nobody answered"})
        time.sleep(TIMEOUT + 0.1)
        (view,) = runner.sweep()
        (manager,) = view.reviews
        assert manager.payload["level"] == "manager" and manager.default_decision is not None
        assert manager.default_decision["kind"] == "reject"  # nothing above the manager
        time.sleep(TIMEOUT + 0.1)
        (done,) = runner.sweep()
    assert (done.status, done.outcome, done.state["resolution"]["status"]) == ("done", "rejected", "rejected")
    assert [e["to"] for e in done.state["escalations"]] == ["senior_agent", "human", "manager"]


# -- ask once: a deadline is not a person ---------------------------------------------------------------


def _phone(scope: str) -> Workflow:
    return Workflow(f"phone-{scope}", lambda: create_tool_approval_graph(
        ScriptedChatModel(responder=_intro_model), [get_bank_balance, addition, get_phone_number],
        policies={"get_phone_number": AskOncePolicy(scope=scope)},  # type: ignore[arg-type]
        default_policy=NeverAskPolicy(), timeout=TIMEOUT, default=Approve()))


def test_an_approval_by_the_deadline_is_not_remembered_for_the_thread(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=[_phone("thread")]) as runner:
        view = runner.start("phone-thread", {"messages": [{"role": "user", "content": "Alice, twice"}]})
        assert [r.key for r in view.reviews] == ["call_phone_1"]
        time.sleep(TIMEOUT + 0.1)
        (view,) = runner.sweep()
    assert [r.key for r in view.reviews] == ["call_phone_2"]  # asked again: no person approved the first
    assert view.state.get("approved_tools", []) == []


def test_an_approval_by_the_deadline_is_not_remembered_for_the_workflow(db: str, effects_file: Path) -> None:
    ask = {"messages": [{"role": "user", "content": "Alice"}]}
    with Runner.open(db, workflows=[_phone("workflow")]) as runner:
        first = runner.start("phone-workflow", ask, actor="ana")
        time.sleep(TIMEOUT + 0.1)
        assert [v.thread_id for v in runner.sweep()] == [first.thread_id]  # approved by the deadline
        assert [r.key for r in runner.start("phone-workflow", ask, actor="ana").reviews] == ["call_phone_1"]

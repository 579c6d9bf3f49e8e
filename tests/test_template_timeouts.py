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
    Modify,
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

"""Plan review read as a person would: see the numbered plan, decide, check exactly what ran."""

from __future__ import annotations

import doctest
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.graph import END, START, StateGraph

from hitl_graphs import (
    Approve,
    ConfigError,
    Decision,
    Escalate,
    InvalidDecisionError,
    Modify,
    PatchError,
    PlanState,
    Reject,
    Runner,
    ScriptedChatModel,
    Workflow,
    create_plan_review_graph,
    plan_memory,
)
from hitl_graphs.examples import plan_review as plan_review_example
from hitl_graphs.templates import _steps, plan_review
from tests.conftest import fingerprint, hitl, python
from tests.drivers import Driven
from tests.staged_workflows import STAGED
from tests.workflows import effects


@pytest.fixture
def workflows() -> list[Workflow]:
    """What the shared `runner` fixture (both drivers) runs in this module."""
    return STAGED


@dataclass(frozen=True)
class Case:
    id: str
    workflow: str
    decisions: Sequence[Decision]
    effects: list[str]
    outcome: str
    statuses: list[str] = field(default_factory=list)
    """Each plan version's status, in order."""


CASES = [
    Case("approve", "plan-fx", [Approve(actor="ana")],
         ["plan:v1", "notify:plan-v1", "step:a", "step:b", "step:c"], "completed", ["approved"]),
    Case("modify-reword-add-remove-reorder", "plan-fx",
         [Modify(patch={"plan": ["c", "a, carefully", "d"]}, actor="ana")],
         ["plan:v1", "notify:plan-v1", "step:c", "step:a, carefully", "step:d"], "completed", ["edited", "approved"]),
    Case("modify-to-nothing", "plan-fx", [Modify(patch={"plan": []}, actor="ana")],
         ["plan:v1", "notify:plan-v1"], "completed", ["edited", "approved"]),
    Case("reject", "plan-fx", [Reject(reason="wrong task", actor="ana")],
         ["plan:v1", "notify:plan-v1"], "rejected", ["rejected"]),
    Case("replan-approve", "plan-fx-every-2", [Approve(actor="ana"), Approve(actor="bo")],
         ["plan:v1", "notify:plan-v1", "step:a", "step:b", "plan:v2", "notify:plan-v2", "step:c (after 2)"],
         "completed", ["approved", "approved"]),
    Case("replan-modify", "plan-fx-every-2", [Approve(actor="ana"), Modify(patch={"plan": ["z", "y"]}, actor="bo")],
         ["plan:v1", "notify:plan-v1", "step:a", "step:b", "plan:v2", "notify:plan-v2", "step:z", "step:y"],
         "completed", ["approved", "edited", "approved"]),
    Case("replan-reject", "plan-fx-every-2", [Approve(actor="ana"), Reject(reason="enough", actor="bo")],
         ["plan:v1", "notify:plan-v1", "step:a", "step:b", "plan:v2", "notify:plan-v2"],
         "rejected", ["approved", "rejected"]),
    Case("modify-then-replan-every-2", "plan-fx-every-2",
         [Modify(patch={"plan": ["x", "y", "z", "w"]}, actor="ana"), Approve(actor="ana")],
         ["plan:v1", "notify:plan-v1", "step:x", "step:y", "plan:v3", "notify:plan-v3",
          "step:z (after 2)", "step:w (after 2)"],
         "completed", ["edited", "approved", "approved"]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_decision_runs_exactly_what_was_approved(runner: Driven, case: Case) -> None:
    view = runner.start(case.workflow, {"task": "ship it"})
    for decision in case.decisions:
        assert view.status == "paused"
        (review,) = view.reviews
        assert review.kind == "plan"
        view = runner.resume(view.thread_id, decision)
    assert (view.status, view.outcome, view.reviews) == ("done", case.outcome, ())
    assert effects() == case.effects
    steps = [e.removeprefix("step:") for e in case.effects if e.startswith("step:")]
    assert [r["step"] for r in view.state.get("results") or []] == steps
    assert [v["status"] for v in view.state["plan_versions"]] == case.statuses


def test_the_person_sees_numbered_steps_before_anything_runs(runner: Driven) -> None:
    view = runner.start("plan-fx", {"task": "ship it"})
    (review,) = view.reviews
    assert effects() == ["plan:v1", "notify:plan-v1"]
    assert (review.kind, review.node, review.position, review.key) == ("plan", "review_plan", "before", "plan-v1")
    assert review.payload == {"task": "ship it", "version": 1, "plan": ["a", "b", "c"],
                              "numbered": ["1. a", "2. b", "3. c"], "done": [], "done_count": 0}
    assert review.title == "Plan v1 (3 steps) for: ship it"
    assert (review.allowed, review.editable) == (("approve", "modify", "reject"), ("plan",))
    assert runner.pending(workflow="plan-fx") == [review]
    done = runner.resume(view.thread_id, Approve(actor="ana"), review_id="plan-v1")
    assert done.state["results"][0] == {"index": 1, "step": "a", "result": "did a (0 before)", "plan_version": 1}


def test_a_replan_shows_what_was_done(runner: Driven) -> None:
    view = runner.resume(runner.start("plan-fx-every-2", {"task": "t"}).thread_id, Approve())
    (review,) = view.reviews
    assert review.key == "plan-v2" and review.title == "Plan v2 (1 step, 2 done) for: t"
    assert review.payload["plan"] == ["c (after 2)"]
    assert [d["step"] for d in review.payload["done"]] == ["a", "b"]


def test_reject_records_who_and_why(runner: Driven) -> None:
    view = runner.start("plan-fx", {"task": "t"})
    done = runner.resume(view.thread_id, Reject(reason="wrong task", actor="ana"))
    assert done.state["stopped"] == {"at": "plan v1", "by": "ana", "reason": "wrong task"}
    assert done.state["plan_versions"][0]["reason"] == "wrong task"
    (decided,) = [e for e in runner.history(view.thread_id) if e.event == "decided"]
    assert (decided.actor, decided.data["reason"]) == ("ana", "wrong task")
    assert runner.history(view.thread_id)[-1].event == "rejected"


BAD = [
    ("not-a-list", {"plan": "a then b"}, r"field 'plan' expects list\[str\]"),
    ("not-strings", {"plan": ["a", 2]}, r"field 'plan' expects list\[str\]"),
    ("not-editable", {"results": []}, "field 'results' may not be changed in this review; editable fields: plan"),
    ("unknown", {"steps": ["a"]}, "unknown field 'steps' in patch"),
]


@pytest.mark.parametrize(("patch", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_edit_is_refused_and_changes_nothing(runner: Driven, db: str, patch: dict[str, Any], message: str) -> None:
    view = runner.start("plan-fx", {"task": "t"})
    before = fingerprint(db, view.thread_id)
    with pytest.raises(PatchError, match=message):
        runner.resume(view.thread_id, Modify(patch=patch))
    with pytest.raises(InvalidDecisionError, match="does not allow 'escalate'"):
        runner.resume(view.thread_id, Escalate(reason="boss"))
    assert fingerprint(db, view.thread_id) == before
    assert effects() == ["plan:v1", "notify:plan-v1"]


def test_memory_shows_every_version_and_step_in_order(runner: Driven) -> None:
    view = runner.start("plan-fx-every-2", {"task": "t"})
    view = runner.resume(view.thread_id, Modify(patch={"plan": ["x", "y", "z"]}, actor="ana", comment="tighter"))
    view = runner.resume(view.thread_id, Approve(actor="bo"))
    timeline = [(e["type"], e.get("version") or e.get("step") or e.get("task"), e.get("author"), e.get("status"),
                 e.get("decided_by")) for e in plan_memory(runner.show(view.thread_id).state)]
    assert timeline == [
        ("task", "t", None, None, None),
        ("plan", 1, "planner", "edited", "ana"),
        ("plan", 2, "ana", "approved", "ana"),
        ("step", "x", None, None, None),
        ("step", "y", None, None, None),
        ("plan", 3, "planner", "approved", "bo"),
        ("step", "z (after 2)", None, None, None),
    ]
    history = runner.history(view.thread_id)
    requested = [e for e in history if e.event == "review_requested"]
    decided = [e for e in history if e.event == "decided"]
    assert len(requested) == len(decided) == 2
    assert [(e.actor, e.data["kind"]) for e in decided] == [("ana", "modify"), ("bo", "approve")]
    assert decided[0].data["patch"] == {"plan": ["x", "y", "z"]} and decided[0].data["comment"] == "tighter"


def test_chat_models_plan_and_execute(db: str, effects_file: Path) -> None:
    seen: list[list[BaseMessage]] = []

    def planner(messages: Sequence[BaseMessage]) -> str:
        seen.append(list(messages))
        return ["Plan:\n1. look\n2. fix\n3. test", "1. test again"][len(seen) - 1]

    executor = ScriptedChatModel(script=["looked", "fixed", "tested twice"])
    graph = create_plan_review_graph(ScriptedChatModel(responder=planner), executor, planning_interval=2)
    with Runner.open(db, workflows=[Workflow("llm-plan", graph)]) as runner:
        view = runner.start("llm-plan", {"task": "the build is red"})
        assert view.reviews[0].payload["plan"] == ["look", "fix", "test"]
        view = runner.resume(view.thread_id, Approve(actor="ana"))
        assert view.reviews[0].payload["plan"] == ["test again"]
        done = runner.resume(view.thread_id, Approve(actor="ana"))
    assert [(r["step"], r["result"]) for r in done.state["results"]] == [
        ("look", "looked"), ("fix", "fixed"), ("test again", "tested twice")]
    replan = seen[1]
    assert [type(m).__name__ for m in replan] == ["SystemMessage", "HumanMessage", "AIMessage", "HumanMessage"]
    assert replan[2].text == "1. look\n2. fix\n3. test"
    assert "A person approved the plan." in replan[3].text
    assert "1. look -> looked\n2. fix -> fixed" in replan[3].text
    assert "Remaining plan:\n1. test" in replan[3].text


def test_usable_as_a_subgraph(db: str, effects_file: Path) -> None:
    class Parent(PlanState, total=False):
        summary: str

    def parent() -> StateGraph[Parent]:
        g = StateGraph(Parent)
        g.add_node("work", create_plan_review_graph(lambda c: ["a", "b"], lambda s, c: f"did {s}").compile())
        g.add_node("summarise", lambda s: {"summary": ", ".join(r["step"] for r in s["results"])})
        g.add_edge(START, "work")
        g.add_edge("work", "summarise")
        g.add_edge("summarise", END)
        return g

    with Runner.open(db, workflows=[Workflow("outer", parent)]) as runner:
        view = runner.start("outer", {"task": "t"})
        assert [(r.node, r.key) for r in view.reviews] == [("work", "plan-v1")]
        done = runner.resume(view.thread_id, Modify(patch={"plan": ["x", "y"]}))
    assert (done.outcome, done.state["summary"]) == ("completed", "x, y")


async def _async_planner(context: Any) -> list[str]:
    return []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"planner": "gpt", "executor": print}, "planner must be a LangChain chat model or a callable, got str"),
        ({"planner": _async_planner, "executor": print}, "planner is an async function"),
        ({"planner": print, "executor": print, "planning_interval": 0}, "planning_interval must be at least 1"),
    ],
    ids=["not-callable", "async", "interval"],
)
def test_misconfiguration_is_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_plan_review_graph(**kwargs)


def test_a_planner_returning_text_is_refused(db: str, effects_file: Path) -> None:
    graph = create_plan_review_graph(lambda c: "1. a\n2. b", lambda s, c: s)  # type: ignore[arg-type, return-value]
    with Runner.open(db, workflows=[Workflow("text-plan", graph)]) as runner:
        with pytest.raises(ConfigError, match="the planner returned a string; return a list of steps"):
            runner.start("text-plan", {"task": "t"})


def test_steps_run_exactly_once_across_processes(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=STAGED) as runner:
        thread_id = runner.start("plan-fx-every-2", {"task": "t"}, thread_id="plan-proc").thread_id
    resumed = python(db, "import tests.staged_workflows\nfrom hitl_graphs import Runner, Approve\n"
                         "with Runner.open() as r:\n"
                         f"    v = r.resume({thread_id!r}, Approve(actor='ana'))\n"
                         "    print(v.status, v.reviews[0].key)")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.split() == ["paused", "plan-v2"]
    with Runner.open(db, workflows=STAGED) as runner:
        done = runner.resume(thread_id, Approve(actor="bo"))
        assert done.outcome == "completed"
        assert runner.recover() == []
    assert effects() == ["plan:v1", "notify:plan-v1", "step:a", "step:b", "plan:v2", "notify:plan-v2",
                         "step:c (after 2)"]


def test_cli_run_then_modify_in_another_process_runs_exactly_the_edited_plan(db: str, effects_file: Path) -> None:
    started = hitl(db, "run", "plan-review", "--input", json.dumps({"task": "write the release notes"}), "--json")
    assert started.returncode == 0, started.stderr
    view = json.loads(started.stdout)
    assert view["reviews"][0]["payload"]["numbered"][0] == "1. Research: write the release notes"
    edited = hitl(db, "modify", view["thread_id"], "--patch", '{"plan": ["a", "b"]}', "--actor", "ana", "--json")
    assert edited.returncode == 0, edited.stderr
    done = json.loads(edited.stdout)
    assert (done["status"], done["outcome"]) == ("done", "completed")
    assert [(r["step"], r["result"]) for r in done["state"]["results"]] == [("a", "done: a"), ("b", "done: b")]
    assert done["state"]["plan_versions"][1] == {"version": 2, "steps": ["a", "b"], "author": "ana", "after_step": 0,
                                                "status": "approved", "decided_by": "ana", "comment": None, "reason": None}
    history = hitl(db, "history", view["thread_id"])
    assert history.returncode == 0, history.stderr
    assert "decided" in history.stdout and "by ana" in history.stdout and '"plan": ["a", "b"]' in history.stdout


def test_builtin_demo_replans_offline(db: str) -> None:
    with Runner.open(db, workflows=[plan_review_example.plan_review_workflow()]) as runner:
        view = runner.start("plan-review")
        view = runner.resume(view.thread_id, Approve())
        assert view.reviews[0].payload["plan"] == ["Write the summary"]
        done = runner.resume(view.thread_id, Approve())
    assert [r["step"] for r in done.state["results"]] == [
        "Research: summarise the three biggest AI breakthroughs of the year", "Pick the most important findings",
        "Write the summary"]


@pytest.mark.parametrize("module", [plan_review, plan_review_example, _steps], ids=lambda m: m.__name__)
def test_docstring_examples_run(module: Any) -> None:
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0

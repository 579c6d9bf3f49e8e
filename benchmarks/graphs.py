"""The graphs the benchmark runs: the plan-review template itself, and a plain LangGraph graph of its shape.

One cycle is: start a thread (plan -> review pauses) and resume it with an approval (review ->
execute, once per plan step -> end). With the default one-step plan that is a three-node graph:
plan -> review_plan -> execute.

Ours is `create_plan_review_graph` as shipped, with the durability the template declares beside
its factory (`plan_review.DURABILITY`): no copy of its wiring, so a change to the template shows
in the figures. `plain_plan_review_graph` is what a LangGraph user writes by hand for the same
job: the same state and the same state updates (the ending record included), `interrupt()`
instead of `request_review`, and nothing else (no validation, no ledger, no history).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Durability, interrupt

from hitl_graphs import Workflow
from hitl_graphs.templates import plan_review

WORKFLOW = "bench-plan"

TEMPLATE_DURABILITY: Durability = plan_review.DURABILITY
"""What the plan-review template declares: the durability "ours" runs with unless a setup says otherwise."""


def planner_for(steps: int) -> Callable[[Any], list[str]]:
    def planner(context: Any) -> list[str]:
        return [f"step {i + 1}" for i in range(steps)]

    return planner


def executor(step: str, context: Any) -> str:
    return f"done: {step}"


def executor_for(wait: float) -> Callable[[str, Any], str]:
    """`executor`, after blocking `wait` seconds first when `wait` > 0: a step that waits on I/O as
    a model's or an API's call does (the wait releases the interpreter lock, as a socket read does)."""
    if wait <= 0:
        return executor

    def waiting(step: str, context: Any) -> str:
        time.sleep(wait)
        return executor(step, context)

    return waiting


def ours_graph_source() -> str:
    """Which graph `ours_workflow` runs (recorded in results.json)."""
    return f"{plan_review.__name__}.{plan_review.create_plan_review_graph.__name__}"


def ours_workflow(steps: int = 1, durability: Durability | None = None, step_wait: float = 0.0) -> Workflow:
    """The plan-review template as a runner workflow, with the durability it declares (or `durability`);
    each step waits `step_wait` seconds on I/O (`executor_for`)."""
    run_step = executor_for(step_wait)
    return Workflow(WORKFLOW, lambda: plan_review.create_plan_review_graph(planner_for(steps), run_step),
                    durability=durability or TEMPLATE_DURABILITY)


def plain_plan_review_graph(steps: int = 1, step_wait: float = 0.0) -> StateGraph[Any]:
    """The same shape with plain LangGraph: `interrupt()` and `Command(resume=...)`."""
    return _plan_review_graph(planner_for(steps), interrupt, executor_for(step_wait))


class PlanState(TypedDict, total=False):
    task: str
    plan: list[str]
    next_step: int
    results: list[dict[str, Any]]
    plan_versions: list[dict[str, Any]]
    stopped: dict[str, Any] | None
    ending: dict[str, Any] | None


def _plan_review_graph(planner: Callable[[Any], Sequence[str]], gate: Callable[[Any], Any],
                       run_step: Callable[[str, Any], str]) -> StateGraph[Any]:
    def plan(state: PlanState) -> PlanState:
        versions = list(state.get("plan_versions") or [])
        done = list(state.get("results") or [])
        steps = [str(s) for s in planner(state)]
        proposal = {"version": len(versions) + 1, "steps": steps, "author": "planner", "after_step": len(done),
                    "status": "proposed", "decided_by": None, "comment": None, "reason": None}
        return {"plan": steps, "next_step": 0, "plan_versions": [*versions, proposal]}

    def review_plan(state: PlanState) -> Command[str]:
        versions = list(state["plan_versions"])
        proposal = versions[-1]
        answer = gate({"task": state.get("task", ""), "version": proposal["version"], "plan": proposal["steps"],
                       "numbered": [f"{i}. {s}" for i, s in enumerate(proposal["steps"], 1)],
                       "done": state.get("results") or []})
        kind = answer.get("kind") if isinstance(answer, dict) else None
        if kind == "reject":
            versions[-1] = {**proposal, "status": "rejected", "decided_by": answer.get("actor")}
            at = f"plan v{proposal['version']}"
            return Command(goto=END, update={"plan_versions": versions,
                                             "stopped": {"at": at, "by": answer.get("actor"), "reason": answer.get("reason")},
                                             "ending": {"status": "rejected", "at": at, "by": answer.get("actor"),
                                                        "reason": answer.get("reason")}})
        steps = list(answer.get("plan") or proposal["steps"]) if isinstance(answer, dict) else proposal["steps"]
        versions[-1] = {**proposal, "status": "approved", "decided_by": answer.get("actor") if isinstance(answer, dict) else None}
        return Command(goto="execute" if steps else END, update={"plan": steps, "next_step": 0, "plan_versions": versions})

    def execute(state: PlanState) -> PlanState:
        steps = state["plan"]
        position = state.get("next_step", 0)
        done = list(state.get("results") or [])
        entry = {"index": len(done) + 1, "step": steps[position], "result": run_step(steps[position], None),
                 "plan_version": state["plan_versions"][-1]["version"]}
        update: PlanState = {"results": [*done, entry], "next_step": position + 1}
        if position + 1 >= len(steps):
            last = state["plan_versions"][-1]
            update["ending"] = {"status": "completed", "at": f"plan v{last['version']}", "by": last["decided_by"], "reason": None}
        return update

    def after_step(state: PlanState) -> str:
        return END if state["next_step"] >= len(state["plan"]) else "execute"

    graph = StateGraph(PlanState)
    graph.add_node("plan", plan)
    graph.add_node("review_plan", review_plan, destinations=("execute", END))
    graph.add_node("execute", execute)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "review_plan")
    graph.add_conditional_edges("execute", after_step, ["execute", END])
    return graph

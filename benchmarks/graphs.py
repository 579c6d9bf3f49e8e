"""The graphs the benchmark runs: the plan-review template, and a plain LangGraph graph of its shape.

One cycle is: start a thread (plan -> review pauses) and resume it with an approval (review ->
execute, once per plan step -> end). With the default one-step plan that is a three-node graph:
plan -> review_plan -> execute.

`plain_plan_review_graph` is what a LangGraph user writes by hand for the same job: the same state
and the same state updates, `interrupt()` instead of `request_review`, and nothing else (no
validation, no ledger, no history).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

WORKFLOW = "bench-plan"


def planner_for(steps: int) -> Callable[[Any], list[str]]:
    def planner(context: Any) -> list[str]:
        return [f"step {i + 1}" for i in range(steps)]

    return planner


def executor(step: str, context: Any) -> str:
    return f"done: {step}"


def ours_graph_source() -> str:
    """Which graph `ours_workflow` runs (recorded in results.json)."""
    try:
        from hitl_graphs.templates.plan_review import create_plan_review_graph  # noqa: F401
    except ImportError:
        return "benchmarks.graphs (fallback of the template's shape; the template was not importable)"
    return "hitl_graphs.templates.plan_review.create_plan_review_graph"


def ours_workflow(steps: int = 1, durability: str | None = "exit") -> Any:
    """The plan-review template as a runner workflow (a graph of the same shape if it is missing),
    with the durability the built-in `plan-review` workflow declares."""
    from hitl_graphs import Workflow

    try:
        from hitl_graphs.templates.plan_review import create_plan_review_graph
    except ImportError:
        from hitl_graphs import request_review

        def gate(payload: dict[str, Any]) -> dict[str, Any]:
            decision = request_review("plan", payload, title="Run this plan?", editable=("plan",),
                                      allowed=("approve", "modify", "reject"))
            return {"kind": decision.kind, "actor": decision.actor,
                    "plan": getattr(decision, "patch", {}).get("plan") if decision.kind == "modify" else None}

        return Workflow(WORKFLOW, lambda: _plan_review_graph(planner_for(steps), gate))

    return Workflow(WORKFLOW, lambda: create_plan_review_graph(planner_for(steps), executor),
                    durability=durability)  # type: ignore[arg-type]


def plain_plan_review_graph(steps: int = 1) -> StateGraph[Any]:
    """The same shape with plain LangGraph: `interrupt()` and `Command(resume=...)`."""
    return _plan_review_graph(planner_for(steps), interrupt)


class PlanState(TypedDict, total=False):
    task: str
    plan: list[str]
    next_step: int
    results: list[dict[str, Any]]
    plan_versions: list[dict[str, Any]]
    stopped: dict[str, Any] | None


def _plan_review_graph(planner: Callable[[Any], Sequence[str]], gate: Callable[[Any], Any]) -> StateGraph[Any]:
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
            return Command(goto=END, update={"plan_versions": versions,
                                             "stopped": {"at": f"plan v{proposal['version']}", "by": answer.get("actor"),
                                                         "reason": answer.get("reason")}})
        steps = list(answer.get("plan") or proposal["steps"]) if isinstance(answer, dict) else proposal["steps"]
        versions[-1] = {**proposal, "status": "approved", "decided_by": answer.get("actor") if isinstance(answer, dict) else None}
        return Command(goto="execute" if steps else END, update={"plan": steps, "next_step": 0, "plan_versions": versions})

    def execute(state: PlanState) -> PlanState:
        steps = state["plan"]
        position = state.get("next_step", 0)
        done = list(state.get("results") or [])
        entry = {"index": len(done) + 1, "step": steps[position], "result": executor(steps[position], None),
                 "plan_version": state["plan_versions"][-1]["version"]}
        return {"results": [*done, entry], "next_step": position + 1}

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

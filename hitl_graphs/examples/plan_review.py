"""The `plan-review` workflow: smolagents' plan customization example, offline and durable.

A `ScriptedChatModel` plays the planner: three numbered steps for any task, and on re-planning
(every 2 executed steps, smolagents' `planning_interval`) the remaining steps unchanged. Each
step's result is `done: <step>`, appended to the state's `results`.

    hitl run plan-review --input '{"task": "summarise this year\'s AI breakthroughs"}'
    hitl modify THREAD --patch '{"plan": ["search arXiv", "write the summary"]}'   # runs exactly these
    hitl show THREAD            # results: one entry per executed step; plan_versions: every version
    hitl history THREAD         # every plan shown for review, and who approved or edited it
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage
from langgraph.graph import StateGraph

from hitl_graphs.registry import Workflow
from hitl_graphs.scripted import ScriptedChatModel
from hitl_graphs.templates import plan_review
from hitl_graphs.templates._steps import numbered, parse_steps
from hitl_graphs.templates.plan_review import PlanContext, PlanState, create_plan_review_graph


def demo_planner(messages: Sequence[BaseMessage]) -> str:
    """Three steps for the task; when re-planning, the remaining steps as they are."""
    last = messages[-1].text
    if "Remaining plan:" in last:
        remaining = last.split("Remaining plan:", 1)[1].split("\nUpdate the remaining plan", 1)[0]
        return "\n".join(numbered(parse_steps(remaining) if "(none)" not in remaining else []))
    task = last.removeprefix("Task: ").split("\n", 1)[0]
    return "\n".join(numbered([f"Research: {task}", "Pick the most important findings", "Write the summary"]))


def run_step(step: str, context: PlanContext) -> str:
    """The demo's executor: a plain callable."""
    return f"done: {step}"


def plan_review_graph() -> StateGraph[PlanState]:
    """The demo graph: scripted planner, callable executor, re-planning every 2 steps."""
    return create_plan_review_graph(ScriptedChatModel(responder=demo_planner), run_step, planning_interval=2)


def plan_review_workflow() -> Workflow:
    """The built-in `plan-review` workflow."""
    return Workflow(
        "plan-review",
        plan_review_graph,
        description="a planner proposes numbered steps; approve, edit (--patch '{\"plan\": [...]}') or reject "
                    "before any runs; re-planned every 2 steps",
        example_input={"task": "summarise the three biggest AI breakthroughs of the year"},
        durability=plan_review.DURABILITY,
    )

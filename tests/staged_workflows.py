"""Workflows the plan-review, multi-step and conversation tests drive, importable by subprocesses
(`--app tests.staged_workflows`).

Every step, phase and answer appends to the effects file (`tests.workflows.effect`), so a test
counts what ran, across processes.
"""

from __future__ import annotations

from collections.abc import Sequence

from hitl_graphs import (
    Phase,
    PhaseInput,
    PlanContext,
    PlanProposal,
    Workflow,
    create_conversation_graph,
    create_multi_step_graph,
    create_plan_review_graph,
    register,
    review_when_marked,
)
from hitl_graphs.templates.conversation import Turn
from tests.workflows import effect

# -- plan review -------------------------------------------------------------------------------


def plan_abc(context: PlanContext) -> list[str]:
    """First plan a, b, c; a re-plan keeps the remaining steps, noting how many ran."""
    effect(f"plan:v{len(context.versions) + 1}")
    if not context.versions:
        return ["a", "b", "c"]
    return [f"{step} (after {len(context.done)})" for step in context.plan]


def run_step(step: str, context: PlanContext) -> str:
    effect(f"step:{step}")
    return f"did {step} ({len(context.done)} before)"


def notify(proposal: PlanProposal) -> None:
    effect(f"notify:{proposal.key}")


def _plan(interval: int | None) -> Workflow:
    name = "plan-fx" if interval is None else f"plan-fx-every-{interval}"
    return Workflow(name, lambda: create_plan_review_graph(plan_abc, run_step, planning_interval=interval, on_review=notify),
                    example_input={"task": "ship it"})


# -- multi-step ----------------------------------------------------------------------------------


def phase_step(p: PhaseInput) -> str:
    effect(f"phase:{p.phase}:{p.attempt}")
    text = f"{p.phase} v{p.attempt}"
    if p.feedback:
        text += f" after {p.feedback[-1]!r}"
    if p.outputs:
        text += " from " + "; ".join(f"{k}={v}" for k, v in p.outputs.items())
    return text


def marked_step(p: PhaseInput) -> str:
    effect(f"phase:{p.phase}:{p.attempt}")
    if p.phase == "risky" and p.attempt == 1:
        return "NEEDS_APPROVAL: drop the old table?"
    return f"{p.phase} done"


PHASES = [Phase(name, phase_step, f"Do {name}.") for name in ("analyse", "plan", "tests")]


# -- conversation -------------------------------------------------------------------------------


def answer(messages: Sequence[Turn]) -> str:
    turn = sum(m["role"] == "assistant" for m in messages) + 1
    effect(f"answer:{turn}")
    earlier = [m["content"].split(";")[0] for m in messages if m["role"] == "assistant"]
    return f"answer {turn} to {messages[-1]['content']!r}" + (f"; after: {earlier[-1]}" if earlier else "")


STAGED = [
    _plan(None),
    _plan(2),
    Workflow("phases-fx", lambda: create_multi_step_graph(PHASES, max_attempts=2), example_input={"task": "adder"}),
    Workflow("phases-marked", lambda: create_multi_step_graph(
        [Phase(name, marked_step) for name in ("routine", "risky", "final")], gate_policy=review_when_marked()),
        example_input={"task": "migrate"}),
    Workflow("chat-fx", lambda: create_conversation_graph(answer), example_input={"task": "hello"}),
]

for _wf in STAGED:
    register(_wf, replace=True)

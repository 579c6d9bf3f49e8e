"""The `multi-step` workflow: AgentScope's multi-step approval gates, offline and durable.

Three phases (analyse the requirements -> draft the plan -> write the tests), each reviewed after
it runs. A `ScriptedChatModel` plays the agent; a phase sent back with a reason is redone with
the reason worked in.

    hitl run multi-step --input '{"task": "a function that adds two numbers"}'
    hitl reject THREAD --reason "cover negative numbers"     # phase 1 runs again with the feedback
    hitl modify THREAD --patch '{"output": "..."}'           # later phases see the edited output
    hitl approve THREAD
    hitl cancel THREAD --reason "requirements changed"       # stop: halts here, recorded in history
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage
from langgraph.graph import StateGraph

from hitl_graphs.registry import Workflow
from hitl_graphs.scripted import ScriptedChatModel
from hitl_graphs.templates import multi_step
from hitl_graphs.templates.multi_step import MultiStepState, Phase, create_multi_step_graph


def demo_phase(messages: Sequence[BaseMessage]) -> str:
    """One line per phase naming it and the task; a redo repeats the output with the feedback."""
    last = messages[-1].text
    if last.startswith("A person sent this back: "):
        feedback = last.removeprefix("A person sent this back: ").split("\n", 1)[0]
        return f"{messages[-2].text} [revised: {feedback}]"
    task = messages[1].text.removeprefix("Task: ").split("\n", 1)[0]
    phase = last.rsplit("\n", 1)[-1].split(": ", 1)[-1]
    return f"{phase.rstrip('.')} for {task}: done."


def multi_step_graph() -> StateGraph[MultiStepState]:
    """The demo graph: three phases on one scripted model, every phase reviewed."""
    model = ScriptedChatModel(responder=demo_phase)
    return create_multi_step_graph([
        Phase("analyse", model, "Analyse the requirements."),
        Phase("plan", model, "Draft the implementation plan."),
        Phase("tests", model, "Write the unit tests."),
    ])


def multi_step_workflow() -> Workflow:
    """The built-in `multi-step` workflow."""
    return Workflow(
        "multi-step",
        multi_step_graph,
        description="three phases, each reviewed after it runs: approve, edit (--patch '{\"output\": ...}'), "
                    "reject --reason (redo) or cancel (stop)",
        example_input={"task": "a function that adds two numbers"},
        durability=multi_step.DURABILITY,
    )

"""The `escalation` workflow: a refund case climbs agent -> senior agent -> human -> manager.

Offline: two `ScriptedChatModel`s play the agents. The agent answers with confidence 0.55 (below
the 0.7 threshold), so the case goes to the senior agent; its answer is confident but flagged
sensitive, so it goes to a person with the `reviewer` role, who approves, edits the answer,
rejects, or escalates to the `manager`.

    hitl run escalation
    hitl show THREAD                 # attempts, escalations (from, to, reason, when)
    hitl modify THREAD --patch '{"output": "Refund $2,000."}' --role reviewer
    hitl escalate THREAD --reason "over my limit" --role reviewer    # then: --role manager
"""

from __future__ import annotations

from langgraph.graph import StateGraph

from hitl_graphs.registry import Workflow
from hitl_graphs.scripted import ScriptedChatModel
from hitl_graphs.templates import escalation
from hitl_graphs.templates.escalation import EscalationState, ModelHandler, create_escalation_graph, default_levels


def refund_graph() -> StateGraph[EscalationState]:
    """The default ladder with two scripted agents."""
    agent = ScriptedChatModel(script=['{"output": "Refund the full $2,400.", "confidence": 0.55}'])
    senior = ScriptedChatModel(script=[
        '{"output": "Refund $2,400 to the original card; the parcel arrived damaged.", "confidence": 0.92, "sensitive": true}'
    ])
    return create_escalation_graph(
        default_levels(ModelHandler(agent), ModelHandler(senior), human_role="reviewer", manager_role="manager"),
        output_schema={"type": "string", "minLength": 1},
    )


def escalation_workflow() -> Workflow:
    """The `escalation` workflow (offline, scripted models)."""
    return Workflow(
        "escalation",
        refund_graph,
        description="a case escalates agent -> senior agent -> human (reviewer) -> manager",
        example_input={"task": "Customer asks a refund of $2,400 for order #1234, delivered damaged."},
        durability=escalation.DURABILITY,
    )

"""Ready-made review graphs: each a `create_*` factory returning an uncompiled `StateGraph`.

Compile one with your checkpointer, register it as a `Workflow` for the runner and the CLI, or
add it as a node (or, for agents, a tool: `agent_tool`) of a larger graph.

One contract for all of them: each writes how its run ended to the state's `ending` (an
`Ending`: `status`, `at`, `by`, `reason`), and `outcome(view_or_state)` reads it the same way
for every template, whichever `Workflow` ran it. Each module declares `DURABILITY` beside its
factory, how a runner should checkpoint it: `Workflow(name, graph, durability=plan_review.DURABILITY)`.
"""

from hitl_graphs.endings import Ending, EndStatus, outcome
from hitl_graphs.templates.conversation import ConversationState, create_conversation_graph
from hitl_graphs.templates.escalation import (
    AgentLevel,
    AnyTrigger,
    CustomTrigger,
    ErrorTrigger,
    EscalationHandler,
    EscalationLevel,
    EscalationState,
    EscalationTrigger,
    HumanLevel,
    LowConfidenceTrigger,
    ModelHandler,
    SensitiveTrigger,
    create_escalation_graph,
    default_levels,
)
from hitl_graphs.templates.multi_step import (
    GatePolicy,
    MultiStepState,
    Phase,
    PhaseInput,
    PhaseOutput,
    create_multi_step_graph,
    review_when_marked,
)
from hitl_graphs.templates.plan_review import (
    PlanContext,
    PlanProposal,
    PlanState,
    create_plan_review_graph,
    plan_memory,
    plan_outcome,
)
from hitl_graphs.templates.tool_approval import ToolApprovalState, agent_tool, create_tool_approval_graph, tool_args_schema

__all__ = [
    "AgentLevel",
    "AnyTrigger",
    "ConversationState",
    "CustomTrigger",
    "EndStatus",
    "Ending",
    "ErrorTrigger",
    "EscalationHandler",
    "EscalationLevel",
    "EscalationState",
    "EscalationTrigger",
    "GatePolicy",
    "HumanLevel",
    "LowConfidenceTrigger",
    "ModelHandler",
    "MultiStepState",
    "Phase",
    "PhaseInput",
    "PhaseOutput",
    "PlanContext",
    "PlanProposal",
    "PlanState",
    "SensitiveTrigger",
    "ToolApprovalState",
    "agent_tool",
    "create_conversation_graph",
    "create_escalation_graph",
    "create_multi_step_graph",
    "create_plan_review_graph",
    "create_tool_approval_graph",
    "default_levels",
    "outcome",
    "plan_memory",
    "plan_outcome",
    "review_when_marked",
    "tool_args_schema",
]

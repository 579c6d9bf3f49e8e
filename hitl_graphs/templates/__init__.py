"""Ready-made review graphs: each a `create_*` factory returning an uncompiled `StateGraph`.

Compile one with your checkpointer, register it as a `Workflow` for the runner and the CLI, or
add it as a node (or, for agents, a tool: `agent_tool`) of a larger graph.

This package's face is the five factories; each template's own knobs come from its module:
`hitl_graphs.templates.escalation` (levels, triggers), `.multi_step` (`Phase`, gate policies),
`.plan_review` (`plan_memory`, `plan_outcome`), `.tool_approval` (`agent_tool`,
`tool_args_schema`), `.conversation`. The knobs still import from here, as before.

One contract for all of them: each writes how its run ended to the state's `ending` (an
`Ending`: `status`, `at`, `by`, `reason`), and `outcome(view_or_state)` reads it the same way
for every template, whichever `Workflow` ran it. Each module declares `DURABILITY` beside its
factory, how a runner should checkpoint it: `Workflow(name, graph, durability=plan_review.DURABILITY)`.
"""

import importlib as _importlib
import typing as _typing

from hitl_graphs.endings import Ending, EndStatus, outcome
from hitl_graphs.templates.conversation import create_conversation_graph
from hitl_graphs.templates.escalation import create_escalation_graph
from hitl_graphs.templates.multi_step import create_multi_step_graph
from hitl_graphs.templates.plan_review import create_plan_review_graph
from hitl_graphs.templates.tool_approval import create_tool_approval_graph

if _typing.TYPE_CHECKING:  # the old import paths, typed; at run time `__getattr__` serves them
    from hitl_graphs.templates.conversation import ConversationState as ConversationState
    from hitl_graphs.templates.escalation import AgentLevel as AgentLevel
    from hitl_graphs.templates.escalation import AnyTrigger as AnyTrigger
    from hitl_graphs.templates.escalation import CustomTrigger as CustomTrigger
    from hitl_graphs.templates.escalation import ErrorTrigger as ErrorTrigger
    from hitl_graphs.templates.escalation import EscalationHandler as EscalationHandler
    from hitl_graphs.templates.escalation import EscalationLevel as EscalationLevel
    from hitl_graphs.templates.escalation import EscalationState as EscalationState
    from hitl_graphs.templates.escalation import EscalationTrigger as EscalationTrigger
    from hitl_graphs.templates.escalation import HumanLevel as HumanLevel
    from hitl_graphs.templates.escalation import LowConfidenceTrigger as LowConfidenceTrigger
    from hitl_graphs.templates.escalation import ModelHandler as ModelHandler
    from hitl_graphs.templates.escalation import SensitiveTrigger as SensitiveTrigger
    from hitl_graphs.templates.escalation import default_levels as default_levels
    from hitl_graphs.templates.multi_step import GatePolicy as GatePolicy
    from hitl_graphs.templates.multi_step import MultiStepState as MultiStepState
    from hitl_graphs.templates.multi_step import Phase as Phase
    from hitl_graphs.templates.multi_step import PhaseInput as PhaseInput
    from hitl_graphs.templates.multi_step import PhaseOutput as PhaseOutput
    from hitl_graphs.templates.multi_step import review_when_marked as review_when_marked
    from hitl_graphs.templates.plan_review import PlanContext as PlanContext
    from hitl_graphs.templates.plan_review import PlanProposal as PlanProposal
    from hitl_graphs.templates.plan_review import PlanState as PlanState
    from hitl_graphs.templates.plan_review import plan_memory as plan_memory
    from hitl_graphs.templates.plan_review import plan_outcome as plan_outcome
    from hitl_graphs.templates.tool_approval import ToolApprovalState as ToolApprovalState
    from hitl_graphs.templates.tool_approval import agent_tool as agent_tool
    from hitl_graphs.templates.tool_approval import tool_args_schema as tool_args_schema

_MOVED: dict[str, str] = {
    "AgentLevel": "hitl_graphs.templates.escalation",
    "AnyTrigger": "hitl_graphs.templates.escalation",
    "ConversationState": "hitl_graphs.templates.conversation",
    "CustomTrigger": "hitl_graphs.templates.escalation",
    "ErrorTrigger": "hitl_graphs.templates.escalation",
    "EscalationHandler": "hitl_graphs.templates.escalation",
    "EscalationLevel": "hitl_graphs.templates.escalation",
    "EscalationState": "hitl_graphs.templates.escalation",
    "EscalationTrigger": "hitl_graphs.templates.escalation",
    "GatePolicy": "hitl_graphs.templates.multi_step",
    "HumanLevel": "hitl_graphs.templates.escalation",
    "LowConfidenceTrigger": "hitl_graphs.templates.escalation",
    "ModelHandler": "hitl_graphs.templates.escalation",
    "MultiStepState": "hitl_graphs.templates.multi_step",
    "Phase": "hitl_graphs.templates.multi_step",
    "PhaseInput": "hitl_graphs.templates.multi_step",
    "PhaseOutput": "hitl_graphs.templates.multi_step",
    "PlanContext": "hitl_graphs.templates.plan_review",
    "PlanProposal": "hitl_graphs.templates.plan_review",
    "PlanState": "hitl_graphs.templates.plan_review",
    "SensitiveTrigger": "hitl_graphs.templates.escalation",
    "ToolApprovalState": "hitl_graphs.templates.tool_approval",
    "agent_tool": "hitl_graphs.templates.tool_approval",
    "default_levels": "hitl_graphs.templates.escalation",
    "plan_memory": "hitl_graphs.templates.plan_review",
    "plan_outcome": "hitl_graphs.templates.plan_review",
    "review_when_marked": "hitl_graphs.templates.multi_step",
    "tool_args_schema": "hitl_graphs.templates.tool_approval",
}
"""Old import paths: a template's knob -> the template module that holds it."""


def __getattr__(name: str) -> _typing.Any:
    """Serve a knob from its template's module (`from hitl_graphs.templates import Phase`), so
    code written before the split keeps working."""
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'hitl_graphs.templates' has no attribute {name!r}")
    return getattr(_importlib.import_module(module), name)


__all__ = [
    "EndStatus",
    "Ending",
    "create_conversation_graph",
    "create_escalation_graph",
    "create_multi_step_graph",
    "create_plan_review_graph",
    "create_tool_approval_graph",
    "outcome",
]

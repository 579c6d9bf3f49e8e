"""The workflows every `hitl` command knows without `--app`."""

from __future__ import annotations

from hitl_graphs.examples import approval_workflow, email_workflow
from hitl_graphs.registry import register, registered
from hitl_graphs.templates.conversation_example import conversation_workflow
from hitl_graphs.templates.escalation_example import escalation_workflow
from hitl_graphs.templates.multi_step_example import multi_step_workflow
from hitl_graphs.templates.plan_review_example import plan_review_workflow
from hitl_graphs.templates.tool_approval_example import tool_approval_workflow


def register_builtins() -> None:
    """Register the built-in workflows once (later calls do nothing)."""
    known = registered()
    for make in (email_workflow, approval_workflow, tool_approval_workflow, escalation_workflow,
                 plan_review_workflow, multi_step_workflow, conversation_workflow):
        wf = make()
        if wf.name not in known:
            register(wf)

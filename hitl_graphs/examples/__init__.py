"""The demo workflows: what `hitl demo`, the built-in CLI workflows and the docs run, offline.

The library registers none of them by itself: a `Runner()` knows only what you register. The
CLI (and `make demo`) calls `register_examples()`; so may you, to try them from Python.

- `email`, `approval` (`basics`): one workflow per pause style (`interrupt()` gate, static
  breakpoint).
- `plan-review`, `tool-approval`, `multi-step`, `escalation`, `conversation`: each template with
  a scripted model, reproducing its seed.

Example:
    >>> from hitl_graphs import Runner
    >>> with Runner.open(":memory:", workflows=[email_workflow()]) as runner:
    ...     runner.start("email", {"to": "ana@example.com", "topic": "lunch"}).status
    'paused'
"""

from __future__ import annotations

from hitl_graphs.examples.basics import (
    ApprovalState,
    EmailDraft,
    EmailState,
    ProposedAction,
    approval_graph,
    approval_workflow,
    email_graph,
    email_workflow,
)
from hitl_graphs.examples.conversation import conversation_workflow
from hitl_graphs.examples.escalation import escalation_workflow
from hitl_graphs.examples.multi_step import multi_step_workflow
from hitl_graphs.examples.plan_review import plan_review_workflow
from hitl_graphs.examples.tool_approval import tool_approval_workflow
from hitl_graphs.registry import Workflow, register, registered

__all__ = [
    "ApprovalState",
    "EmailDraft",
    "EmailState",
    "ProposedAction",
    "approval_graph",
    "approval_workflow",
    "conversation_workflow",
    "email_graph",
    "email_workflow",
    "escalation_workflow",
    "examples",
    "multi_step_workflow",
    "plan_review_workflow",
    "register_examples",
    "tool_approval_workflow",
]


def examples() -> list[Workflow]:
    """A fresh instance of every demo workflow.

    Example:
        >>> [w.name for w in examples()][:2]
        ['email', 'approval']"""
    return [email_workflow(), approval_workflow(), tool_approval_workflow(), escalation_workflow(),
            plan_review_workflow(), multi_step_workflow(), conversation_workflow()]


def register_examples() -> None:
    """Register the demo workflows by their names, leaving any name already registered as it is
    (the CLI calls this; later calls do nothing).

    Example:
        >>> register_examples()
        >>> "plan-review" in registered()
        True"""
    known = registered()
    for wf in examples():
        if wf.name not in known:
            register(wf)

"""The workflows every `hitl` command knows without `--app`."""

from __future__ import annotations

from hitl_graphs.examples import approval_workflow, email_workflow
from hitl_graphs.registry import register, registered


def register_builtins() -> None:
    """Register the built-in workflows once (later calls do nothing)."""
    known = registered()
    for make in (email_workflow, approval_workflow):
        wf = make()
        if wf.name not in known:
            register(wf)

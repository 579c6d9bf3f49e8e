"""Two small workflows that show the whole path, one per pause style.

- `email`: a node drafts a mail, a review node (`review_node`, an `interrupt()` gate) asks a
  person, then `send` runs, or nothing is sent on reject.
- `approval`: the seed's graph, unchanged in shape: `propose` then `execute`, compiled with
  `interrupt_before=["execute"]`. The runner tells `execute` the answer through `approved`, and
  checks an edited `proposed_action` against what `execute` needs (`ApprovalPatch`) first.

Both count their side effects in the state (`sent`, `executions`), which the tests check.
"""

from __future__ import annotations

from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict, StringConstraints

from hitl_graphs.gate import review_node
from hitl_graphs.registry import Workflow


def _count(current: int | None, new: int | None) -> int:
    return (current or 0) + (new or 0)


class EmailState(TypedDict, total=False):
    to: str
    topic: str
    subject: str
    body: str
    sent: bool
    sends: Annotated[int, _count]
    rejection: str | None


class EmailDraft(TypedDict):
    """What the `email` workflow's review shows: the mail about to go out. Typed scripts read it
    with `review.payload_as(EmailDraft)` (see `ReviewRequest.payload_as`)."""

    to: str | None
    subject: str
    body: str


def _draft(state: EmailState) -> EmailState:
    topic = state.get("topic", "hello")
    return {"subject": f"About {topic}", "body": f"Hi,\n\nLet's talk about {topic}.\n", "sent": False}


def _send(state: EmailState) -> EmailState:
    return {"sent": True, "sends": 1}


def email_graph() -> StateGraph[EmailState]:
    """draft -> review (approve/modify: send, reject: end) -> send."""
    g = StateGraph(EmailState)
    g.add_node("draft", _draft)
    g.add_node(
        "review",
        review_node(
            "gate",
            lambda s: {"to": s.get("to"), "subject": s["subject"], "body": s["body"]},
            title="Send this mail?",
            on_approve="send",
            on_reject=END,
            editable=("to", "subject", "body"),
            reason_field="rejection",
        ),
        destinations=("send", END),
    )
    g.add_node("send", _send)
    g.add_edge(START, "draft")
    g.add_edge("draft", "review")
    g.add_edge("send", END)
    return g


def email_workflow() -> Workflow:
    """The `email` workflow: an `interrupt()` gate before a side effect."""
    return Workflow(
        "email",
        email_graph,
        description="draft a mail, a person approves, edits or rejects it before it is sent",
        example_input={"to": "ana@example.com", "topic": "the quarterly report"},
    )


class ProposedAction(TypedDict):
    """What `execute` needs, key by key: a patch missing one is refused before it is recorded
    (a bare `dict[str, str]` let `{}` through, and `execute` then failed with the decision spent)."""

    action: str
    target: str


class ApprovalState(TypedDict, total=False):
    task: str
    proposed_action: ProposedAction
    approved: bool | None
    result: str | None
    executions: Annotated[int, _count]


def _propose(state: ApprovalState) -> ApprovalState:
    return {"proposed_action": {"action": "restart", "target": state.get("task", "service")}, "approved": None}


def _execute(state: ApprovalState) -> ApprovalState:
    if not state.get("approved"):
        return {"result": "Action rejected by user"}
    action = state["proposed_action"]
    return {"result": f"did {action['action']} on {action['target']}", "executions": 1}


_Word = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class Action(BaseModel):
    """An action `execute` can carry out: both keys, neither blank, nothing else."""

    model_config = ConfigDict(extra="forbid")

    action: _Word
    target: _Word


class ApprovalPatch(BaseModel):
    """What `execute` needs of the state after a person's edit (the workflow's `patch_model`):
    the state's types let `{"action": "", "target": ""}` through; this does not."""

    proposed_action: Action


def approval_graph() -> StateGraph[ApprovalState]:
    """The seed's Step 1 graph: propose -> execute, to be compiled with a breakpoint."""
    g = StateGraph(ApprovalState)
    g.add_node("propose", _propose)
    g.add_node("execute", _execute)
    g.add_edge(START, "propose")
    g.add_edge("propose", "execute")
    g.add_edge("execute", END)
    return g


def approval_workflow() -> Workflow:
    """The `approval` workflow: a static `interrupt_before` breakpoint, as in the seed."""
    return Workflow(
        "approval",
        lambda: approval_graph().compile(interrupt_before=["execute"]),
        description="propose an action, pause before executing it (static breakpoint)",
        editable=("proposed_action",),
        on_approve={"approved": True},
        on_reject={"approved": False},
        example_input={"task": "web-frontend"},
        patch_model=ApprovalPatch,
    )

"""Agent Inbox's formats: a review shown as a `HumanInterrupt`, and its `[HumanResponse]` answer
read as our decision.

Agent Inbox (LangChain's reviewer UI) shows an interrupt whose value is a `HumanInterrupt`
`{action_request: {action, args}, config: {allow_ignore, allow_respond, allow_edit,
allow_accept}, description}` and answers with a one-element list `[{type, args}]`. Graphs
written for it call `interrupt([request])[0]`; nothing else reads that list, LangChain's
`HumanInTheLoopMiddleware` included. So the answer is translated here into one of our decisions,
which then goes through the runner's checks like any other, and the runner hands each graph the
shape its own code reads (the middleware's `{"decisions": [...]}` for a `create_agent` agent).

What the buttons mean, both ways:

| Agent Inbox | shown when the review allows | our decision |
|---|---|---|
| `accept` | `approve` | `Approve` |
| `edit` (`args`: the edited `{action, args}`) | `modify`, with editable fields | `Modify`: a tool call's new `args`, else the edited fields |
| `response` (`args`: text) | `respond` | `Respond(text)` |
| `ignore` | `reject` | `Reject` |

Example:
    >>> from hitl_graphs.reviews import ReviewRequest
    >>> r = ReviewRequest(review_id="r1", thread_id="t", workflow="w", node="tools", position="before",
    ...     kind="tool_calls", title="Run send?", payload={"tool": "send", "args": {"to": "ana"}},
    ...     allowed=("approve", "modify", "reject"), editable=("args",), source="interrupt",
    ...     created_at="2026-01-01T00:00:00Z", patch_target="payload")
    >>> human_interrupt(r)["config"]
    {'allow_ignore': True, 'allow_respond': False, 'allow_edit': True, 'allow_accept': True}
    >>> to_decision([{"type": "edit", "args": {"action": "send", "args": {"to": "bo"}}}], r, actor="ana")
    Modify(actor='ana', comment=None, seen=None, kind='modify', patch={'args': {'to': 'bo'}}, verification=None)
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, assert_never

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError

from hitl_graphs.decisions import Approve, Decision, Modify, Reject, Respond
from hitl_graphs.errors import InvalidDecisionError
from hitl_graphs.reviews import ReviewRequest


class ActionRequest(BaseModel):
    """What Agent Inbox shows as the action: a name and its arguments."""

    model_config = ConfigDict(frozen=True)

    action: str
    args: dict[str, Any] = Field(default_factory=dict)


class Accept(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: Literal["accept"]
    args: JsonValue = None


class Ignore(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: Literal["ignore"]
    args: JsonValue = None


class Response(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: Literal["response"]
    args: str = Field(min_length=1)


class Edit(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: Literal["edit"]
    args: ActionRequest


HumanResponse = Annotated[Accept | Ignore | Response | Edit, Field(discriminator="type")]
"""One Agent Inbox answer; anything else is refused (never read as an accept)."""

RESPONSES: TypeAdapter[list[Accept | Ignore | Response | Edit]] = TypeAdapter(list[HumanResponse])


def human_interrupt(review: ReviewRequest) -> dict[str, Any]:
    """The review as Agent Inbox's `HumanInterrupt`: a tool call shows its tool and arguments;
    any other review its node and its payload (an object) or `{"value": payload}`. The buttons
    offered are the decisions the review allows; edit only where a field may be changed."""
    payload = review.payload
    tool = _tool(review)
    if tool is not None:
        action, args = tool
    else:
        action, args = review.node, payload if isinstance(payload, dict) else {"value": payload}
    told = payload.get("description") if isinstance(payload, dict) else None
    return {
        "action_request": {"action": action, "args": args},
        "config": {"allow_ignore": "reject" in review.allowed, "allow_respond": "respond" in review.allowed,
                   "allow_edit": "modify" in review.allowed and bool(review.editable),
                   "allow_accept": "approve" in review.allowed},
        "description": f"{review.title}\n\n{told}" if isinstance(told, str) and told else review.title,
    }


def is_responses(value: Any) -> bool:
    """Whether a resume value is Agent Inbox's answer (a list of `{type, ...}`), not our decision."""
    return isinstance(value, list) and all(isinstance(v, dict) and "type" in v for v in value) and bool(value)


def to_decision(value: Any, review: ReviewRequest | None, *, actor: str | None) -> Decision:
    """Our decision for Agent Inbox's `[HumanResponse]` on `review` (None: the review is no longer
    pending; the runner then refuses the decision, naming why, before anything changes).

    Raises:
        InvalidDecisionError: not a one-element list of a known response type, naming the fix.
    """
    try:
        responses = RESPONSES.validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise InvalidDecisionError(
            f"not an Agent Inbox response ({where}: {first.get('msg')}); send [{{\"type\": \"accept\"|\"edit\"|"
            "\"response\"|\"ignore\", \"args\": ...}]") from None
    if len(responses) != 1:
        raise InvalidDecisionError(
            f"Agent Inbox answers one interrupt with a one-element list; got {len(responses)} responses: "
            "key several answers by interrupt id instead ({\"<id>\": [...], ...})")
    response = responses[0]
    match response:
        case Accept():
            return Approve(actor=actor)
        case Ignore():
            return Reject(actor=actor)
        case Response(args=text):
            return Respond(text, actor=actor)
        case Edit(args=edited):
            return _edit(edited, review, actor)
        case _:
            assert_never(response)


def _edit(edited: ActionRequest, review: ReviewRequest | None, actor: str | None) -> Decision:
    """A tool call's edit is its new arguments (merged over the call's, checked against the
    tool's schema); any other review's edit is the fields whose value changed, which the runner
    checks against what the review lets a person change. Nothing changed is an accept."""
    if review is None:
        return Modify({"args": edited.args}, actor=actor)   # refused by the runner: the review is not pending
    action = human_interrupt(review)["action_request"]["action"]
    if edited.action != action:
        raise InvalidDecisionError(
            f"an edit changes the arguments of {action!r}, not which action runs (got {edited.action!r}); "
            "send the same action with new args, or ignore this one")
    if _tool(review) is not None:
        return Modify({"args": edited.args}, actor=actor)
    shown = review.payload if isinstance(review.payload, dict) else {"value": review.payload}
    changed = {k: v for k, v in edited.args.items() if shown.get(k) != v}
    return Modify(changed, actor=actor) if changed else Approve(actor=actor)


def _tool(review: ReviewRequest) -> tuple[str, dict[str, Any]] | None:
    payload = review.payload
    if review.patch_target != "payload" or not isinstance(payload, dict):
        return None
    tool, args = payload.get("tool"), payload.get("args")
    return (tool, args) if isinstance(tool, str) and isinstance(args, dict) else None

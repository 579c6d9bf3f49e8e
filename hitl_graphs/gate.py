"""The one place that pauses a graph for a person.

`interrupt()` re-runs its whole node on resume, so the call lives here, in a function with no
side effect before it and no broad `try/except` around it (LangGraph's `GraphInterrupt` is an
exception that must reach the runtime). Put `request_review` first in a node of its own, or
before any side effect in yours.

The interrupt value is a small dict marked with `GATE_MARK`, so the runner can tell our reviews
from a user's own `interrupt(...)` calls (which it still lists and resumes, as kind `custom`;
such a call returns the decision as JSON, a `DecisionDict`, which `parse_decision` turns back
into `Approve`, `Modify`, ...).
"""

from __future__ import annotations

from datetime import timedelta

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from langgraph.config import get_config
from langgraph.types import Command, interrupt
from pydantic_core import to_jsonable_python

from hitl_graphs.decisions import (
    DEFAULT_KINDS,
    Approve,
    Decision,
    DecisionKind,
    Modify,
    Reject,
    decision_to_json,
    parse_decision,
)
from hitl_graphs.errors import ConfigError, InvalidDecisionError
from hitl_graphs.reviews import PatchTarget, Position

GATE_MARK = "__hitl_review__"

StateT_contra = TypeVar("StateT_contra", contravariant=True)
ResultT_co = TypeVar("ResultT_co", covariant=True)


class Node(Protocol[StateT_contra, ResultT_co]):
    """A node function as `StateGraph.add_node` takes it, for type checkers: LangGraph's node
    protocols name the parameter `state`, which a `Callable[[S], R]` does not promise, so a
    factory returning `Callable` cannot be passed to `add_node` under `mypy --strict`."""

    def __call__(self, state: StateT_contra) -> ResultT_co: ...

PLAIN_KIND = "custom"
"""The kind a plain `interrupt(value)` of a user's graph is listed as (not raised by `request_review`)."""

DEFAULT_ACTOR_PREFIX = "hitl:"
"""The actor of a decision nobody made: a review's default, applied by the sweep (`hitl:deadline`)
or by a wait that timed out (`hitl:timeout`)."""


def to_json(value: Any) -> Any:
    """JSON-native copy of `value` (pydantic models, messages, tuples...); `str()` as last resort."""
    return to_jsonable_python(value, fallback=str)


def request_review(
    kind: str,
    payload: Any,
    *,
    title: str = "",
    allowed: Sequence[DecisionKind] = DEFAULT_KINDS,
    editable: Sequence[str] = (),
    position: Position = "before",
    key: str | None = None,
    patch_target: PatchTarget = "state",
    patch_schema: dict[str, Any] | None = None,
    verify_phrase: str | None = None,
    required_role: str | None = None,
    separation_of_duties: bool = False,
    timeout: float | timedelta | None = None,
    default: Decision | None = None,
) -> Decision:
    """Pause the graph until a person decides, and return their decision.

    Call it inside a node, before any side effect. On resume the node runs again from its first
    line and this call returns the decision instead of pausing. A `Modify` patch has already been
    validated and written to the state by the runner when this returns, so the node sees the
    edited values in its `state` argument.

    Args:
        kind: What is reviewed (`plan`, `tool_calls`, `gate`, `escalation` or your own word).
        payload: What the person sees; stored as JSON.
        title: One line for lists and prompts.
        allowed: Decision kinds the person may give.
        editable: State fields a `Modify` may patch.
        position: Whether this review stands `before` or `after` the work it guards.
        key: Your id for this review (a tool call id...), unique among the thread's pending ones.
        patch_target: `state` (default) or `payload`: see `ReviewRequest.patch_target`.
        patch_schema: JSON Schema for a `payload` patch (e.g. a tool's argument schema).
        verify_phrase: Make this a `verify`-level review: approving requires typing the phrase.
        required_role: Only an actor holding this role may decide.
        separation_of_duties: The actor who started the thread may not decide.
        timeout: Seconds (or a `timedelta`) after the pause when the review expires and `default` applies (run
            `hitl sweep` periodically, or `Runner.sweep()`).
        default: The decision at the deadline; a `Reject` unless given (fail closed). It must be a
            kind in `allowed`, not a `Modify`, and not an `Approve` of a `verify`-level review
            (see `check_default`).

    Raises:
        ConfigError: `default` is one the review could not take (before anything pauses).

    Example:
        >>> def send_node(state):
        ...     decision = request_review("gate", {"to": state["to"]}, title="Send the mail?")
        ...     if decision.kind == "reject":
        ...         return {"sent": False}
        ...     return {"sent": True}
    """
    check_default(default, allowed, verify=verify_phrase is not None)
    if kind == PLAIN_KIND:  # what a plain interrupt() is listed as: the runner must tell them apart
        raise ConfigError(f"kind {PLAIN_KIND!r} is how a plain interrupt() is listed; give your review another kind")
    spec = {
        GATE_MARK: 1,
        "node": _top_level_node(),
        "kind": kind,
        "title": title or f"Review {kind}",
        "payload": to_json(payload),
        "allowed": list(allowed),
        "editable": list(editable),
        "position": position,
        "key": key,
        "patch_target": patch_target,
        "patch_schema": patch_schema,
        "verify_phrase": verify_phrase,
        "required_role": required_role,
        "separation_of_duties": separation_of_duties,
        "timeout": timeout.total_seconds() if isinstance(timeout, timedelta) else timeout,
        "default_decision": decision_to_json(default) if default is not None else None,
    }
    answer = interrupt(spec)
    decision = parse_decision(answer)
    if decision.kind not in allowed:
        raise InvalidDecisionError(f"this review does not allow {decision.kind!r}; allowed: {', '.join(allowed)}")
    return decision


def check_default(default: Decision | None, allowed: Sequence[DecisionKind], *, verify: bool = False) -> None:
    """Refuse a default decision a review could not take, before anything pauses.

    The sweep records a default with no person and no further check, so each of these would go
    wrong only at the deadline: a kind the review does not allow is recorded, then refused by the
    node (the thread fails with the decision spent); a `Modify` writes an edit nobody reviewed; an
    `Approve` of a `verify`-level review skips the phrase a person must type.

    Raises:
        ConfigError: naming the problem and what to give instead.

    Example:
        >>> check_default(Approve(), ("approve", "reject"))
        >>> check_default(Reject(), ("approve", "reject"), verify=True)
        >>> check_default(Approve(), ("approve", "reject"), verify=True)
        Traceback (most recent call last):
        ...
        hitl_graphs.errors.ConfigError: a verify-level review cannot default to 'approve': only a person can type its phrase; give Reject (or no default)
    """
    if default is None:
        return
    if isinstance(default, Modify):
        raise ConfigError("default=Modify cannot apply: an edit is a person's, and a default is applied unseen; "
                          "give Approve or Reject")
    if default.kind not in allowed:
        raise ConfigError(f"default={default.kind!r} cannot apply: the review allows only {', '.join(allowed)}; "
                          "give one of them")
    if verify and isinstance(default, Approve):
        raise ConfigError("a verify-level review cannot default to 'approve': only a person can type its phrase; "
                          "give Reject (or no default)")


def decided_by_person(decision: Decision) -> bool:
    """Whether a person made `decision`, not a review's default at its deadline or timeout (whose
    actor starts with `DEFAULT_ACTOR_PREFIX`). What a template remembers as "a person approved"
    must not count a deadline's approval.

    Example:
        >>> decided_by_person(Approve(actor="ana")), decided_by_person(Approve(actor="hitl:deadline"))
        (True, False)
    """
    return not (decision.actor or "").startswith(DEFAULT_ACTOR_PREFIX)


def review_node(
    kind: str,
    payload: Callable[[Any], Any],
    *,
    on_approve: str,
    on_reject: str,
    title: str = "",
    allowed: Sequence[DecisionKind] = DEFAULT_KINDS,
    editable: Sequence[str] = (),
    reason_field: str | None = None,
) -> Node[Any, Command[str]]:
    """Build a node that asks for review and routes: approve/modify -> `on_approve`, reject -> `on_reject`.

    Place it before the node it guards (`add_edge("propose", "review")`) and give it the
    destinations so the graph drawing shows both routes.

    Args:
        kind: The review kind shown to the person.
        payload: Picks what the person sees from the state.
        on_approve: Node to run after approve or modify (the guarded node).
        on_reject: Node to run after reject (often `END`).
        title: One line for lists and prompts.
        allowed: Decision kinds the person may give.
        editable: State fields a `Modify` may patch.
        reason_field: State field that receives `Reject.reason`, if any.

    Example:
        >>> from langgraph.graph import END
        >>> node = review_node("gate", lambda s: s["draft"], on_approve="send", on_reject=END,
        ...                    editable=("draft",))
        >>> callable(node)
        True
    """

    if unknown := set(allowed) - set(DEFAULT_KINDS):
        raise ValueError(f"review_node routes approve, modify and reject only; remove {sorted(unknown)}")

    def review(state: Any) -> Command[str]:
        decision = request_review(kind, payload(state), title=title, allowed=allowed, editable=editable)
        match decision:
            case Approve() | Modify():
                return Command(goto=on_approve)
            case Reject(reason=reason):
                update = {reason_field: reason} if reason_field else {}
                return Command(goto=on_reject, update=update)
            case _:  # allowed is checked above and by request_review
                raise InvalidDecisionError(f"review_node cannot route {decision.kind!r}")

    return review


def _top_level_node() -> str | None:
    """The node of the thread's own graph this pause is in (for a subgraph: the node holding it),
    as `get_state` names the task; read from the namespace `outer:task|inner:task`."""
    config = get_config()
    namespace = config.get("configurable", {}).get("checkpoint_ns", "")
    if namespace:
        return str(namespace.split("|", 1)[0].split(":", 1)[0])
    node = config.get("metadata", {}).get("langgraph_node")
    return str(node) if node else None


def read_gate(value: Any) -> dict[str, Any] | None:
    """The review spec if `value` is an interrupt value made by `request_review`, else None."""
    if isinstance(value, dict) and value.get(GATE_MARK) == 1:
        return value
    return None

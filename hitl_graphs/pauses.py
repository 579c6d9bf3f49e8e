"""Read what a paused thread waits for out of its latest LangGraph checkpoint.

A thread pauses in one of two ways, and both become `ReviewRequest`s:

- a node called `interrupt()` (ours via `request_review`, or the user's own): one review per
  pending interrupt, with LangGraph's interrupt id as review id; LangChain's
  `HumanInTheLoopMiddleware` asking about several tool calls in one interrupt gives one review
  per call (`hitl_graphs.interop.langchain_agents`);
- a static breakpoint (`interrupt_before` / `interrupt_after`): `next` is set and no interrupt is
  pending. One review per pause, its id derived from the checkpoint, so reading the same
  checkpoint twice (in two processes, or after a crash) gives the same id.

A checkpoint with `next` set, no interrupt and no breakpoint is a run that stopped mid-way (the
process died): LangGraph shows it exactly like a breakpoint, this module does not. Nor is a step
whose tasks all finished but whose checkpoint was never written taken for a finished thread
(`get_state` shows it with an empty `next`, as if done).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.types import StateSnapshot

from hitl_graphs.audit import content_hash
from hitl_graphs.breakpoint_changes import changes
from hitl_graphs.decisions import DEFAULT_KINDS
from hitl_graphs.gate import PLAIN_KIND, read_gate, to_json
from hitl_graphs.interop import langchain_agents
from hitl_graphs.reviews import Position, ReviewRequest


@dataclass(frozen=True, slots=True)
class Pause:
    """What one checkpoint says about a thread."""

    reviews: tuple[ReviewRequest, ...]
    checkpoint_id: str | None
    done: bool
    values: Any = None
    stalled_at: tuple[str, ...] = ()
    error: str | None = None


def read_pause(
    snapshot: StateSnapshot,
    *,
    thread_id: str,
    workflow: str,
    interrupt_before: Sequence[str],
    interrupt_after: Sequence[str],
    parent_next: Callable[[], tuple[str, ...]],
    editable: Sequence[str],
    tool_schemas: Mapping[str, dict[str, Any]] | None = None,
    breakpoint_payload: dict[str, Any] | None = None,
) -> Pause:
    """Classify a snapshot: paused (with its reviews), done, failed, or stalled mid-run.

    `parent_next` is called only when the graph has `interrupt_after` nodes: it returns the nodes
    the previous step ran, which tell an "after" breakpoint from a stalled run. `tool_schemas`
    (tool name -> argument schema) is what an edit of a middleware's tool call is checked against.
    `breakpoint_payload` is what a breakpoint's review shows, worked out by the caller from the
    checkpoint (`hitl_graphs.breakpoint_changes`: what the paused node has not seen); without it
    every key shows as changed.
    """
    checkpoint_id = snapshot.config.get("configurable", {}).get("checkpoint_id")
    created = _created(snapshot)
    if not snapshot.next and not snapshot.interrupts and not snapshot.tasks:
        return Pause((), checkpoint_id, done=snapshot.created_at is not None, values=snapshot.values)
    if snapshot.interrupts:
        node_of = {i.id: task.name for task in snapshot.tasks for i in task.interrupts}
        calls = _last_tool_calls(snapshot.values)
        reviews = tuple(
            review
            for i in snapshot.interrupts
            for review in _middleware_reviews(i, node_of.get(i.id, "?"), thread_id, workflow, created, calls, tool_schemas)
            or (_interrupt_review(i.id, i.value, node_of.get(i.id, "?"), thread_id, workflow, created, editable),)
        )
        return Pause(reviews, checkpoint_id, done=False, values=snapshot.values)
    errors = [t.error for t in snapshot.tasks if t.error is not None]
    if errors:
        # a task's error reads back from the checkpoint as its repr: "ConnectionError('...')"
        error = errors[0] if isinstance(errors[0], str) else f"{type(errors[0]).__name__}: {errors[0]}"
        return Pause((), checkpoint_id, done=False, values=snapshot.values, error=error)
    if not snapshot.next:
        # every task of the step finished but the step's checkpoint was never written: the
        # process died between them. LangGraph shows this like a finished thread.
        return Pause((), checkpoint_id, done=False, values=snapshot.values,
                     stalled_at=tuple(t.name for t in snapshot.tasks))
    at = breakpoint_at(snapshot, interrupt_before=interrupt_before, interrupt_after=interrupt_after,
                       parent_next=parent_next)
    if at is None:
        return Pause((), checkpoint_id, done=False, values=snapshot.values, stalled_at=tuple(snapshot.next))
    nodes, position = at
    node = ", ".join(nodes)
    review_id = hashlib.sha256(f"{thread_id}|{checkpoint_id}|{position}|{node}".encode()).hexdigest()[:32]
    if breakpoint_payload is not None:
        payload = breakpoint_payload
    elif isinstance(snapshot.values, dict):  # no checkpoint read: every key as changed
        payload = changes(snapshot.values, snapshot.next, list(snapshot.values), None)
    else:
        payload = {"state": to_json(snapshot.values), "next": list(snapshot.next)}
    review = ReviewRequest(
        review_id=review_id,
        thread_id=thread_id,
        workflow=workflow,
        node=node,
        position=position,
        kind="breakpoint",
        title=f"Paused {position} {node}",
        payload=payload,
        allowed=DEFAULT_KINDS,
        editable=tuple(editable),
        source="breakpoint",
        created_at=created,
        payload_hash=payload_hash(payload),
    )
    return Pause((review,), checkpoint_id, done=False, values=snapshot.values)


def breakpoint_at(
    snapshot: StateSnapshot,
    *,
    interrupt_before: Sequence[str],
    interrupt_after: Sequence[str],
    parent_next: Callable[[], tuple[str, ...]],
) -> tuple[tuple[str, ...], Position] | None:
    """The nodes a static breakpoint paused at and whether before or after them; None when the
    snapshot is no breakpoint pause (finished, an interrupt, a failed or stalled run)."""
    if not snapshot.next or snapshot.interrupts or any(t.error is not None for t in snapshot.tasks):
        return None
    if before := [n for n in snapshot.next if n in interrupt_before or "*" in interrupt_before]:
        return tuple(before), "before"
    if interrupt_after and (after := [n for n in parent_next() if n in interrupt_after or "*" in interrupt_after]):
        return tuple(after), "after"
    return None


def _middleware_reviews(
    interrupt: Any,
    node: str,
    thread_id: str,
    workflow: str,
    created: datetime,
    calls: Sequence[Mapping[str, Any]],
    schemas: Mapping[str, dict[str, Any]] | None,
) -> tuple[ReviewRequest, ...]:
    """The reviews of a LangChain `HumanInTheLoopMiddleware` interrupt; () for any other."""
    value = interrupt.value
    if langchain_agents.is_batched(value):
        return langchain_agents.batched_reviews(interrupt.id, value, node=node, thread_id=thread_id, workflow=workflow,
                                                created=created, tool_calls=calls, schemas=schemas)
    if langchain_agents.is_per_call(value):
        return (langchain_agents.per_call_review(interrupt.id, value, getattr(interrupt, "response_schema", None), node=node,
                                                 thread_id=thread_id, workflow=workflow, created=created, schemas=schemas,
                                                 tool_calls=calls),)
    return ()


def _last_tool_calls(values: Any) -> list[Mapping[str, Any]]:
    """The tool calls of the state's last AI message (an agent's `messages`), for their ids."""
    messages = values.get("messages") if isinstance(values, dict) else None
    for message in reversed(messages if isinstance(messages, list) else []):
        calls = getattr(message, "tool_calls", None)
        if getattr(message, "type", None) == "ai":
            return [c for c in calls or [] if isinstance(c, Mapping)]
    return []


def _interrupt_review(
    review_id: str,
    value: Any,
    node: str,
    thread_id: str,
    workflow: str,
    created: datetime,
    editable: Sequence[str],
) -> ReviewRequest:
    spec = read_gate(value)
    if spec is None:
        return ReviewRequest(
            review_id=review_id,
            thread_id=thread_id,
            workflow=workflow,
            node=node,
            position="before",
            kind=PLAIN_KIND,
            title=value if isinstance(value, str) else f"Review at {node}",
            payload=to_json(value),
            allowed=DEFAULT_KINDS,
            editable=tuple(editable),
            source="interrupt",
            created_at=created,
            payload_hash=payload_hash(to_json(value)),
        )
    return ReviewRequest(
        review_id=review_id,
        thread_id=thread_id,
        workflow=workflow,
        node=spec.get("node") or node,
        position=spec["position"],
        kind=spec["kind"],
        title=spec["title"],
        payload=spec["payload"],
        allowed=tuple(spec["allowed"]),
        editable=tuple(spec["editable"]),
        source="interrupt",
        created_at=created,
        key=spec.get("key"),
        patch_target=spec.get("patch_target", "state"),
        patch_schema=spec.get("patch_schema"),
        verify_phrase=spec.get("verify_phrase"),
        required_role=spec.get("required_role"),
        separation_of_duties=spec.get("separation_of_duties", False),
        deadline=created + timedelta(seconds=spec["timeout"]) if spec.get("timeout") is not None else None,
        default_decision=_default(spec),
        payload_hash=payload_hash(spec["payload"]),
    )


def is_plain_interrupt(review: ReviewRequest) -> bool:
    """A review raised by a plain `interrupt(value)` of the user's graph, not by `request_review`:
    its node reads the resume value in its own shape (`Workflow(resume_value=...)`)."""
    return review.source == "interrupt" and review.kind == PLAIN_KIND


def pause_from_output(
    output: Any, *, thread_id: str, workflow: str, checkpoint_id: str | None, editable: Sequence[str]
) -> Pause | None:
    """What a finished `invoke` says, without reading the checkpoint again, where that is certain.

    Only for graphs without static breakpoints (the caller checks): an output with no interrupt
    is a finished thread, and interrupts raised by `request_review` carry their node. None when a
    checkpoint read is needed (a plain `interrupt()` of the user's, an output that is no dict).
    """
    if not isinstance(output, dict):
        return None
    interrupts = output.get("__interrupt__") or ()
    values = {k: v for k, v in output.items() if k != "__interrupt__"}
    if not interrupts:
        return Pause((), checkpoint_id, done=True, values=values)
    created = datetime.now(UTC)
    reviews = []
    for i in interrupts:
        spec = read_gate(getattr(i, "value", None))
        if spec is None or not spec.get("node"):
            return None
        reviews.append(_interrupt_review(i.id, i.value, spec["node"], thread_id, workflow, created, editable))
    return Pause(tuple(reviews), checkpoint_id, done=False, values=values)


def _default(spec: dict[str, Any]) -> dict[str, Any] | None:
    if spec.get("timeout") is None:
        return None
    return spec.get("default_decision") or {"kind": "reject", "reason": "no decision before the deadline"}


def payload_hash(payload: Any) -> str:
    """SHA-256 of a payload's canonical JSON: what binds a decision to what was shown."""
    return content_hash(payload)


def _created(snapshot: StateSnapshot) -> datetime:
    if snapshot.created_at:
        return datetime.fromisoformat(snapshot.created_at)
    return datetime.now(UTC)

"""The LangGraph Server API's bodies and answers, as `langgraph-sdk` sends and reads them, built
from our thread views and reviews.

Bodies are pydantic models that ignore the fields the SDK always sends and this server has no use
for (`config`, `metadata` of a run, `on_disconnect`, `durability`, ...), so the official client
works unchanged; what would change a thread's behaviour and is not served (`command.update`,
`command.goto`, `interrupt_before`, ...) is refused by the routes, naming what to send instead.

Each pending review is one LangGraph interrupt, with the review's id as the interrupt id (so
`command.resume` keyed by it reaches exactly that review, as with LangGraph's `Command(resume={id:
...})`) and, as its value, Agent Inbox's `HumanInterrupt` plus our review as `review`.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.types import StreamMode
from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic_core import to_jsonable_python

from hitl_graphs.interop.agent_inbox import human_interrupt
from hitl_graphs.reviews import ReviewRequest, ThreadStatus, ThreadView

LangGraphStatus = Literal["idle", "busy", "interrupted", "error"]

STATUS: dict[ThreadStatus, LangGraphStatus] = {"paused": "interrupted", "running": "busy", "done": "idle", "failed": "error"}
"""Our thread status -> LangGraph Server's."""

STREAM_MODES: dict[str, StreamMode] = {"values": "values", "updates": "updates", "custom": "custom", "messages-tuple": "messages"}
"""The SDK's stream modes served -> LangGraph's own (`messages-tuple` is LangGraph's `messages`)."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ThreadCreate(_Body):
    thread_id: str | None = Field(default=None, min_length=1, max_length=200)
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    if_exists: Literal["raise", "do_nothing"] | None = None


class ThreadSearch(_Body):
    status: LangGraphStatus | None = None
    ids: list[str] | None = Field(default=None, max_length=500)
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=2**62)


class AssistantSearch(_Body):
    graph_id: str | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=2**62)


class StateUpdate(_Body):
    values: JsonValue = None
    as_node: str | None = None


class Command(_Body):
    resume: JsonValue = None
    update: JsonValue = None
    goto: JsonValue = None


class RunCreate(_Body):
    assistant_id: str = Field(min_length=1)
    input: dict[str, JsonValue] | None = None
    command: Command | None = None
    stream_mode: str | list[str] = "values"
    if_not_exists: Literal["reject", "create"] | None = None
    interrupt_before: JsonValue = None
    interrupt_after: JsonValue = None


def interrupt(review: ReviewRequest) -> dict[str, Any]:
    """One pending review as a LangGraph interrupt `{id, value}`."""
    return {"id": review.review_id, "value": {**human_interrupt(review), "review": review.model_dump(mode="json")}}


def thread(view: ThreadView, *, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """A thread as `client.threads.get` returns it: status, values and `interrupts` (one list per
    pending review, keyed by its id: LangGraph keys them by task)."""
    at = min((r.created_at for r in view.reviews), default=None)
    stamp = at.isoformat() if at is not None else None
    return {
        "thread_id": view.thread_id,
        "created_at": stamp,
        "updated_at": stamp,
        "state_updated_at": stamp,
        "metadata": {"graph_id": view.workflow, "assistant_id": view.workflow, **(metadata or {})},
        "status": STATUS[view.status],
        "config": {},
        "values": view.state,
        "interrupts": {r.review_id: [interrupt(r)] for r in view.reviews},
        "error": view.error,
    }


def created_thread(thread_id: str, metadata: dict[str, Any], at: str) -> dict[str, Any]:
    """A thread created by `client.threads.create` that has not run yet."""
    return {"thread_id": thread_id, "created_at": at, "updated_at": at, "state_updated_at": at, "metadata": metadata,
            "status": "idle", "config": {}, "values": None, "interrupts": {}, "error": None}


def checkpoint(thread_id: str) -> dict[str, Any]:
    """The checkpoint reference the SDK expects; the ledger, not a checkpoint id, names a thread's state here."""
    return {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": None, "checkpoint_map": None}


def state(view: ThreadView) -> dict[str, Any]:
    """A thread's state as `client.threads.get_state` returns it: values, `next`, and one task
    per pending review holding its interrupt."""
    interrupts = [interrupt(r) for r in view.reviews]
    return {
        "values": view.state,
        "next": list(dict.fromkeys(r.node for r in view.reviews)),
        "tasks": [{"id": r.review_id, "name": r.node, "path": [], "error": None, "interrupts": [i],
                   "checkpoint": None, "state": None, "result": None} for r, i in zip(view.reviews, interrupts)],
        "checkpoint": checkpoint(view.thread_id),
        "metadata": {"graph_id": view.workflow},
        "created_at": None,
        "parent_checkpoint": None,
        "interrupts": interrupts,
    }


def unstarted_state(thread_id: str) -> dict[str, Any]:
    """The state of a thread created by `client.threads.create` that has not run yet: empty."""
    return {"values": {}, "next": [], "tasks": [], "checkpoint": checkpoint(thread_id), "metadata": {},
            "created_at": None, "parent_checkpoint": None, "interrupts": []}


def wait_result(view: ThreadView) -> dict[str, Any]:
    """What `runs/wait` returns: the values, with `__interrupt__` when the run paused again and
    `__error__` when it failed (LangGraph Server's shape for a run that raised)."""
    if view.status == "failed":
        return {"__error__": {"error": "GraphError", "message": view.error or "the run failed"}}
    if view.status == "paused":
        return {**view.state, "__interrupt__": [interrupt(r) for r in view.reviews]}
    return dict(view.state)


def run(run_id: str, view: ThreadView, assistant_id: str, at: str) -> dict[str, Any]:
    """The run object `client.runs.create` returns; the run has already happened (see `routes`)."""
    status = {"paused": "interrupted", "done": "success", "failed": "error", "running": "running"}[view.status]
    return {"run_id": run_id, "thread_id": view.thread_id, "assistant_id": assistant_id, "created_at": at,
            "updated_at": at, "status": status, "metadata": {}, "kwargs": {}, "multitask_strategy": "reject"}


def assistant(name: str, description: str | None, at: str) -> dict[str, Any]:
    """A registered workflow as a LangGraph assistant (its id and graph id are its name)."""
    return {"assistant_id": name, "graph_id": name, "name": name, "description": description, "config": {},
            "context": {}, "metadata": {}, "version": 1, "created_at": at, "updated_at": at}


def jsonable(value: Any) -> Any:
    """A stream chunk as JSON: messages and LangGraph's own objects by their fields, anything else as text."""
    return to_jsonable_python(value, fallback=str)

"""What a person is shown: review requests, a thread's view, and its history.

These are the models where data leaves the graph. They hold JSON-native values only, so they
round-trip through JSON (the CLI's `--json`, an HTTP API) without loss.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from hitl_graphs.decisions import DecisionKind
from hitl_graphs.errors import ConfigError

Position: TypeAlias = Literal["before", "after"]
ReviewSource: TypeAlias = Literal["interrupt", "breakpoint"]
PatchTarget: TypeAlias = Literal["state", "payload"]
ThreadStatus: TypeAlias = Literal["running", "paused", "done", "failed"]
Outcome: TypeAlias = Literal["completed", "rejected", "cancelled"]
ShapeT = TypeVar("ShapeT")


class MiddlewareAction(BaseModel):
    """Where a review came from when LangChain's `HumanInTheLoopMiddleware` asked it, and so how
    its answer goes back (`hitl_graphs.interop.langchain_agents`).

    Attributes:
        mode: `batched`: one LangGraph interrupt asks about several tool calls, one review each,
            and the thread resumes once every one has a decision; `per_call`: one interrupt per
            tool call, answered on its own.
        interrupt_id: The LangGraph interrupt the answer resumes.
        index: This action's place among the interrupt's `action_requests` (0 per call).
        size: How many actions the interrupt asks about (1 per call).
        response_schema: The JSON Schema LangGraph attached to a per-call interrupt; the
            middleware's decision is checked against it before anything is recorded.

    Example:
        >>> MiddlewareAction(mode="batched", interrupt_id="i1", index=1, size=2).size
        2
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["batched", "per_call"]
    interrupt_id: str
    index: int = 0
    size: int = 1
    response_schema: dict[str, Any] | None = None


class ReviewRequest(BaseModel):
    """One pending question to a person: what they see and what they may answer.

    Attributes:
        review_id: Stable id; for `interrupt()` pauses it is LangGraph's interrupt id, so
            `Command(resume={review_id: ...})` addresses exactly this review (except the actions of
            a LangChain middleware's batch, which share one interrupt: see `middleware`).
        thread_id: The LangGraph thread that is paused.
        workflow: The registered workflow name (lets another process rebuild the graph).
        node: The node the review guards.
        position: Whether the review stands `before` or `after` that node's work.
        kind: `plan`, `tool_calls`, `gate`, `escalation`, `breakpoint` or a custom word.
        title: One line saying what is being asked.
        payload: What the person reviews (JSON).
        allowed: The decision kinds this review accepts.
        editable: The state fields a `Modify` may patch (empty: no field may be patched).
        source: `interrupt` (a node called `interrupt()`) or `breakpoint` (`interrupt_before` /
            `interrupt_after` at compile time).
        created_at: When the pause was recorded.
        key: An id of the reviewer's world, unique among the thread's pending reviews (a tool
            call id, a phase name); `resume(..., review_id=key)` accepts it.
        patch_target: `state` (a `Modify` patch is a state update, checked against the state's
            types) or `payload` (the patch edits what the payload shows, e.g. tool arguments;
            an object merges over the one shown, one level deep; the result is checked against
            `patch_schema` and handed to the node, not written to state).
        patch_schema: JSON Schema a `payload` patch must satisfy.
        verify_phrase: For `verify`-level reviews: the phrase the person must type to approve.
        required_role: Only an actor with this role may decide (`resume(..., roles=...)`).
        separation_of_duties: The actor who started the thread may not decide this review.
        deadline: When the review expires; the sweep then applies `default_decision`.
        default_decision: The decision applied at the deadline (a reject unless said otherwise).
        payload_hash: SHA-256 of the payload as shown; a decision carrying `seen` must match it.
        middleware: Set when LangChain's `HumanInTheLoopMiddleware` raised the review (a
            `create_agent` agent): how its decision is handed back (`MiddlewareAction`).

    Example:
        >>> r = ReviewRequest(review_id="r1", thread_id="t1", workflow="w", node="send",
        ...     position="before", kind="gate", title="Send?", payload={"to": "a@b.c"},
        ...     allowed=("approve", "reject"), editable=(), source="interrupt",
        ...     created_at="2026-01-01T00:00:00Z")
        >>> ReviewRequest.model_validate_json(r.model_dump_json()) == r
        True
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    review_id: str
    thread_id: str
    workflow: str
    node: str
    position: Position
    kind: str
    title: str
    payload: JsonValue
    allowed: tuple[DecisionKind, ...]
    editable: tuple[str, ...]
    source: ReviewSource
    created_at: datetime
    key: str | None = None
    patch_target: PatchTarget = "state"
    patch_schema: dict[str, Any] | None = None
    verify_phrase: str | None = None
    required_role: str | None = None
    separation_of_duties: bool = False
    deadline: datetime | None = None
    default_decision: dict[str, Any] | None = None
    payload_hash: str = ""
    middleware: MiddlewareAction | None = None

    def payload_as(self, shape: type[ShapeT]) -> ShapeT:
        """The payload validated as `shape` and typed as it: a `TypedDict`, a pydantic model, a
        dataclass, `list[str]`, anything pydantic validates.

        `payload` is whatever JSON the workflow shows, typed as any JSON value, so a type checker
        in strict mode rightly refuses `review.payload["subject"]`. A script says which shape it
        expects instead, and gets it checked: a payload without it is refused here, naming what
        is missing, not later as a `KeyError` (or, worse, a wrong value used).

        Example:
            >>> from typing import TypedDict
            >>> class Draft(TypedDict):
            ...     subject: str
            >>> r = ReviewRequest(review_id="r1", thread_id="t1", workflow="w", node="send", position="before",
            ...     kind="gate", title="Send?", payload={"subject": "Lunch"}, allowed=("approve",), editable=(),
            ...     source="interrupt", created_at="2026-01-01T00:00:00Z")
            >>> r.payload_as(Draft)["subject"]
            'Lunch'

        Raises:
            ConfigError: the payload does not have that shape (the message names what differs).
        """
        from hitl_graphs.patches import typed_adapter  # knows pydantic's limits on TypedDicts (Python 3.11)

        try:
            value: ShapeT = typed_adapter(shape).validate_python(self.payload)
        except ValidationError as exc:
            name = getattr(shape, "__name__", str(shape))
            problems = "; ".join(f"{'.'.join(str(part) for part in e['loc']) or 'payload'}: {e['msg']}"
                                 for e in exc.errors()[:3])
            raise ConfigError(
                f"the payload of review {self.review_id!r} (kind {self.kind!r}, workflow {self.workflow!r}) does not "
                f"fit {name}: {problems}; `review.payload` shows what the workflow sent: change {name} to match it"
            ) from None
        return value


class ThreadView(BaseModel):
    """A thread as a person or a program sees it after a command.

    `status` is `paused` when reviews wait, `done` when the graph has ended (`outcome` says
    how), `running` while another process runs it, `failed` when a node raised (`error`).

    Example:
        >>> ThreadView(thread_id="t", workflow="w", status="done", outcome="completed").status
        'done'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    thread_id: str
    workflow: str
    status: ThreadStatus
    outcome: Outcome | None = None
    reviews: tuple[ReviewRequest, ...] = ()
    state: dict[str, Any] = {}
    error: str | None = None
    awaiting_recovery: tuple[str, ...] = ()
    """Reviews already decided whose decision a crash kept from being applied (`recover()`)."""


class HistoryEntry(BaseModel):
    """One event in a thread's life: started, review requested, decided, applied, ended.

    Example:
        >>> HistoryEntry(seq=1, thread_id="t", event="started", at="2026-01-01T00:00:00Z").event
        'started'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int
    thread_id: str
    event: str
    at: datetime
    review_id: str | None = None
    actor: str | None = None
    data: dict[str, Any] = {}

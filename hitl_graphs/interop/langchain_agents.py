"""LangChain v1's `HumanInTheLoopMiddleware`, read as our reviews and answered with our decisions.

A `create_agent(..., middleware=[HumanInTheLoopMiddleware(...)])` agent pauses with one of two
interrupt values, and reads its answer in its own shape. Registered as a plain `Workflow`, it
needs nothing more: the runner recognises both shapes (`is_batched`, `is_per_call`).

- **batched** (the default): one interrupt `{"action_requests": [{name, args, description}],
  "review_configs": [{action_name, allowed_decisions}]}` for every gated call of a model turn,
  resumed with `{"decisions": [...]}`, one per action *in order*. Matching by position is what
  users trip over, so each action becomes a review of its own (`batched_reviews`), keyed by its
  tool call id, decided one by one like any review; the runner hands the middleware its list
  (`batch_answer`) once each has a decision.
- **per call** (`interrupt_mode="per_call"`, langchain 1.4.6+): one interrupt `{"type":
  "tool_approval", tool_call_id, name, args, description}` per gated call, resumed with one
  decision; LangGraph attaches a JSON `response_schema`, which `answer` checks before the
  decision is recorded.

Decisions translate both ways the same: `approve` is `Approve`; `edit` is `Modify({"args":
{...}})`, the tool's new arguments, merged over the call's (as in our tool-approval template) and
checked against the tool's argument schema; `reject` is `Reject(reason)` (its `message`);
`respond` is `Respond(text)`, the tool's answer in a person's words. Each review allows only what
its `review_config` does.

Example:
    >>> value = {"action_requests": [{"name": "send", "args": {"to": "ana"}, "description": "Send?"}],
    ...          "review_configs": [{"action_name": "send", "allowed_decisions": ["approve", "reject"]}]}
    >>> is_batched(value), is_per_call(value)
    (True, False)
    >>> [r] = batched_reviews("i1", value, node="after_model", thread_id="t", workflow="w",
    ...                       created="2026-01-01T00:00:00Z", tool_calls=[{"id": "c1", "name": "send", "args": {"to": "ana"}}])
    >>> r.key, r.allowed, r.title
    ('c1', ('approve', 'reject'), 'Run send(to="ana")?')
    >>> from hitl_graphs.decisions import Reject
    >>> batch_answer([(r, Reject("not today"))])
    {'decisions': [{'type': 'reject', 'message': 'not today'}]}
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, assert_never

from pydantic_core import to_jsonable_python

from hitl_graphs.decisions import Approve, Decision, DecisionKind, Escalate, Modify, Reject, Respond
from hitl_graphs.errors import InvalidDecisionError
from hitl_graphs.reviews import MiddlewareAction, ReviewRequest

KIND = "tool_calls"
"""The review kind of a middleware action: a tool call, as in our tool-approval template."""

OUR_KINDS: dict[str, DecisionKind] = {"approve": "approve", "edit": "modify", "reject": "reject", "respond": "respond"}
"""The middleware's decision types -> ours."""


def is_batched(value: Any) -> bool:
    """Whether an interrupt value is the middleware's batched `HITLRequest`."""
    if not isinstance(value, Mapping) or set(value) != {"action_requests", "review_configs"}:
        return False
    actions, configs = value["action_requests"], value["review_configs"]
    return (isinstance(actions, list) and isinstance(configs, list) and bool(actions)
            and all(isinstance(a, Mapping) and isinstance(a.get("name"), str) and isinstance(a.get("args"), Mapping)
                    for a in actions)
            and all(isinstance(c, Mapping) and isinstance(c.get("allowed_decisions"), list) for c in configs))


def is_per_call(value: Any) -> bool:
    """Whether an interrupt value is the middleware's per-call `ToolApprovalRequest`."""
    return (isinstance(value, Mapping) and value.get("type") == "tool_approval"
            and isinstance(value.get("name"), str) and isinstance(value.get("args"), Mapping))


def batch_review_id(interrupt_id: str, index: int) -> str:
    """The review id of one action of a batched interrupt: stable, so reading the same checkpoint
    twice (two processes, a restart) names the same reviews."""
    return hashlib.sha256(f"{interrupt_id}|{index}".encode()).hexdigest()[:32]


def batched_reviews(
    interrupt_id: str,
    value: Mapping[str, Any],
    *,
    node: str,
    thread_id: str,
    workflow: str,
    created: datetime | str,
    tool_calls: Sequence[Mapping[str, Any]] = (),
    schemas: Mapping[str, dict[str, Any]] | None = None,
) -> tuple[ReviewRequest, ...]:
    """One review per action of a batched interrupt, in its order.

    The middleware's actions carry no tool call id; `tool_calls` (the last AI message's, from the
    state) supplies it: actions are the gated calls in order, so each is matched to the next call
    with its name and arguments. `schemas` maps tool names to their argument schemas (what an
    edit is checked against); a tool without one takes any object.
    """
    actions: list[Mapping[str, Any]] = value["action_requests"]
    configs: list[Mapping[str, Any]] = value["review_configs"]
    calls = iter(tool_calls)
    reviews = []
    for index, action in enumerate(actions):
        call_id = next((c.get("id") for c in calls if c.get("name") == action["name"] and c.get("args") == action["args"]),
                       None)
        # one config per action, in order; matched by name when the lengths disagree
        config = configs[index] if len(configs) == len(actions) else next(
            (c for c in configs if c.get("action_name") == action["name"]), {"allowed_decisions": ["approve", "reject"]})
        where = MiddlewareAction(mode="batched", interrupt_id=interrupt_id, index=index, size=len(actions))
        # a microsecond apart, so lists (oldest first) show the actions in the model's order
        at = datetime.fromisoformat(created) if isinstance(created, str) else created
        reviews.append(_review(batch_review_id(interrupt_id, index), action["name"], action["args"],
                               action.get("description"), call_id or None, config["allowed_decisions"],
                               (schemas or {}).get(action["name"]), where, node, thread_id, workflow,
                               at + timedelta(microseconds=index)))
    return tuple(reviews)


def per_call_review(
    interrupt_id: str,
    value: Mapping[str, Any],
    response_schema: Any,
    *,
    node: str,
    thread_id: str,
    workflow: str,
    created: datetime | str,
    schemas: Mapping[str, dict[str, Any]] | None = None,
    tool_calls: Sequence[Mapping[str, Any]] = (),
) -> ReviewRequest:
    """The review of a per-call interrupt: its id is LangGraph's interrupt id, its allowed kinds
    those `response_schema` lists. Its place among `tool_calls` (the last AI message's) orders the
    reviews of one turn as the model asked (a microsecond apart)."""
    schema = response_schema if isinstance(response_schema, dict) else None
    allowed = _schema_types(schema) or ["approve", "reject"]
    args_schema = (schemas or {}).get(value["name"]) or _edit_args_schema(schema)
    where = MiddlewareAction(mode="per_call", interrupt_id=interrupt_id, response_schema=schema)
    at = datetime.fromisoformat(created) if isinstance(created, str) else created
    at += timedelta(microseconds=next((i for i, c in enumerate(tool_calls) if c.get("id") == value.get("tool_call_id")), 0))
    return _review(interrupt_id, value["name"], value["args"], value.get("description"), value.get("tool_call_id") or None,
                   allowed, args_schema, where, node, thread_id, workflow, at)


def to_middleware(request: ReviewRequest, decision: Decision) -> dict[str, Any]:
    """One decision in the middleware's shape. A `Modify` has been admitted: its `args` are the
    call's arguments with the person's edits merged over them.

    Raises:
        InvalidDecisionError: a kind the middleware has no answer for.
    """
    payload = request.payload if isinstance(request.payload, dict) else {}
    match decision:
        case Approve():
            return {"type": "approve"}
        case Modify(patch=patch):
            return {"type": "edit", "edited_action": {"name": payload.get("tool"), "args": patch.get("args", payload.get("args"))}}
        case Reject(reason=reason):
            return {"type": "reject", **({"message": reason} if reason else {})}
        case Respond(text=text):
            return {"type": "respond", "message": text}
        case Escalate():
            raise InvalidDecisionError(
                "LangChain's HumanInTheLoopMiddleware cannot take 'escalate'; answer approve, modify, reject or respond")
        case _:
            assert_never(decision)


def answer(request: ReviewRequest, decision: Decision) -> dict[str, Any]:
    """The middleware's decision for a review, checked against the interrupt's `response_schema`
    when LangGraph attached one (per call), so a decision LangGraph would refuse on resume is
    refused before it is recorded.

    Raises:
        InvalidDecisionError: the decision breaks the schema (naming where).
    """
    value = to_middleware(request, decision)
    schema = request.middleware.response_schema if request.middleware is not None else None
    if schema is not None:
        import jsonschema

        # the branch the decision's `type` names (LangGraph's discriminator), so the error is about that branch
        branch = (schema.get("discriminator") or {}).get("mapping", {}).get(value["type"])
        if branch is not None:
            schema = {"$ref": branch, "$defs": schema.get("$defs", {})}
        for err in sorted(jsonschema.Draft202012Validator(schema).iter_errors(value), key=lambda e: list(e.path)):
            where = ".".join(str(p) for p in err.path) or "the decision"
            raise InvalidDecisionError(
                f"review {request.key or request.review_id!r}: LangGraph's response_schema for this tool call refuses "
                f"{where}: {err.message}; nothing was recorded")
    return value


def batch_answer(decided: Iterable[tuple[ReviewRequest, Decision]]) -> dict[str, Any]:
    """The batched interrupt's resume value: `{"decisions": [...]}` in the order of its actions.

    Raises:
        InvalidDecisionError: an action has no decision, or two have the same place.
    """
    by_index: dict[int, dict[str, Any]] = {}
    size = 0
    for request, decision in decided:
        where = request.middleware
        if where is None or where.mode != "batched":
            raise InvalidDecisionError(f"review {request.review_id!r} is not one of a batched interrupt's actions")
        if where.index in by_index:
            raise InvalidDecisionError(f"two decisions for action {where.index} of interrupt {where.interrupt_id!r}")
        by_index[where.index], size = answer(request, decision), where.size
    missing = [i for i in range(size) if i not in by_index]
    if missing or not by_index:
        raise InvalidDecisionError(f"actions {missing} of the batch have no decision yet; the thread waits for them")
    return {"decisions": [by_index[i] for i in range(size)]}


def tool_schemas(graph: Any) -> dict[str, dict[str, Any]]:
    """Tool name -> argument schema of the tools a compiled agent graph runs (its `ToolNode`s):
    what a person's edit of a call is checked against. Unknown arguments are refused, as in our
    tool-approval template."""
    found: dict[str, dict[str, Any]] = {}
    for spec in getattr(getattr(graph, "builder", None), "nodes", {}).values():
        tools = getattr(getattr(spec, "runnable", None), "tools_by_name", None)
        if not isinstance(tools, Mapping):
            continue
        for name, tool in tools.items():
            raw: Any = getattr(tool, "tool_call_schema", None)
            schema = dict(raw) if isinstance(raw, dict) else raw.model_json_schema() if hasattr(raw, "model_json_schema") else None
            if schema is None:
                continue
            if schema.get("type", "object") == "object" and "additionalProperties" not in schema:
                schema["additionalProperties"] = False
            found[name] = schema
    return found


def _review(
    review_id: str, tool: str, args: Mapping[str, Any], description: Any, call_id: str | None, allowed: Sequence[str],
    args_schema: dict[str, Any] | None, where: MiddlewareAction, node: str, thread_id: str, workflow: str,
    created: datetime,
) -> ReviewRequest:
    payload = to_jsonable_python({"tool": tool, "args": dict(args), "call_id": call_id, "description": description},
                                 fallback=str)
    kinds = tuple(dict.fromkeys(OUR_KINDS[d] for d in allowed if d in OUR_KINDS))
    return ReviewRequest(
        review_id=review_id,
        thread_id=thread_id,
        workflow=workflow,
        node=node,
        position="before",
        kind=KIND,
        title=f"Run {_show(tool, args)}?",
        payload=payload,
        allowed=kinds,
        editable=("args",) if "modify" in kinds else (),
        source="interrupt",
        created_at=created,
        key=call_id,
        patch_target="payload",
        patch_schema=_patch_schema(args_schema) if "modify" in kinds and args_schema is not None else None,
        payload_hash=hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest(),
        middleware=where,
    )


def _patch_schema(args: dict[str, Any]) -> dict[str, Any]:
    args = dict(args)
    defs = args.pop("$defs", None)
    schema: dict[str, Any] = {"type": "object", "properties": {"args": args}, "required": ["args"]}
    if defs:
        schema["$defs"] = defs  # pydantic's and LangGraph's `$ref`s point at the root
    return schema


def _schema_types(schema: dict[str, Any] | None) -> list[str]:
    """The decision types a per-call `response_schema` allows (one branch, or a union of them)."""
    if schema is None:
        return []
    defs = schema.get("$defs", {})
    branches = [defs.get(str(b.get("$ref", "")).rsplit("/", 1)[-1], b) for b in schema.get("oneOf", schema.get("anyOf", []))]
    found = [b.get("properties", {}).get("type", {}).get("const") for b in branches or [schema]]
    return [t for t in found if isinstance(t, str)]


def _edit_args_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The `args` schema of a per-call `response_schema`'s edit branch (its `$defs` kept)."""
    if schema is None:
        return None
    defs = schema.get("$defs", {})
    args = defs.get("EditedAction", {}).get("properties", {}).get("args")
    return {**args, "$defs": defs} if isinstance(args, dict) else None


def _show(tool: str, args: Mapping[str, Any]) -> str:
    shown = ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in args.items())
    text = f"{tool}({shown})"
    return text if len(text) <= 120 else text[:117] + "..."

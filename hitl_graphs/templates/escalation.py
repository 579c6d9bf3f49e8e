"""Escalation: a case climbs ordered levels until one resolves it (the seed's Step 6, durable).

Levels are tried in order, by default agent -> senior agent -> human -> manager (`default_levels`):

- an `AgentLevel` runs an `EscalationHandler` (a function, or `ModelHandler` around any chat
  model, e.g. a more capable one) and its attempt is checked by the trigger: no reason to escalate, and the
  case is resolved by that level; a reason, and it moves one level up.
- a `HumanLevel` pauses for a person holding the level's role (`required_role`), who approves
  the last attempt's output, modifies it, rejects the case, or escalates it one level up.

What escalates is an `EscalationTrigger`: `LowConfidenceTrigger(threshold)`, `ErrorTrigger()`
(the handler raised or reported an error), `SensitiveTrigger()` (the attempt is flagged
sensitive), `CustomTrigger(predicate, reason=...)`, or several with `AnyTrigger(...)`. The
default is the seed's: an error, confidence below 0.7, or a sensitive flag.

Every escalation is recorded in the state's `escalations` (`from`, `to`, `reason`, `at` as an ISO
timestamp, `actor` for a person's), beside every attempt (`attempts`) and how the case ended
(`resolution`, and `ending`, the record every template writes), so `hitl show` tells the whole
path. A person's escalation is also in the ledger history as their `escalate` decision.

The ladder's parts (attempts, handlers, levels, triggers) are in `_escalation_ladder`; this
module wires them into a graph and re-exports them.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, TypedDict

from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Durability

from hitl_graphs.decisions import Approve, Decision, DecisionKind, Escalate, Modify, Reject
from hitl_graphs.effects import record_event
from hitl_graphs.endings import Ending
from hitl_graphs.errors import ConfigError, InvalidDecisionError
from hitl_graphs.gate import Node, check_default, request_review, to_json
from hitl_graphs.templates._escalation_ladder import (
    DEFAULT_TRIGGER,
    AgentLevel,
    AnyTrigger,
    Attempt,
    CustomTrigger,
    ErrorTrigger,
    EscalationCase,
    EscalationHandler,
    EscalationLevel,
    EscalationTrigger,
    HumanLevel,
    LowConfidenceTrigger,
    ModelHandler,
    SensitiveTrigger,
    default_levels,
    parse_model_reply,
)
from hitl_graphs.templates._steps import ended, ended_by

__all__ = [
    "AgentLevel",
    "AnyTrigger",
    "Attempt",
    "CustomTrigger",
    "DEFAULT_TRIGGER",
    "DURABILITY",
    "ErrorTrigger",
    "EscalationCase",
    "EscalationHandler",
    "EscalationLevel",
    "EscalationState",
    "EscalationTrigger",
    "HumanLevel",
    "LowConfidenceTrigger",
    "ModelHandler",
    "SensitiveTrigger",
    "create_escalation_graph",
    "default_levels",
    "parse_model_reply",
]


class EscalationState(TypedDict, total=False):
    """The escalation graph's state, JSON-native.

    Attributes:
        task: The case (the graph's input).
        level: The level the case is at.
        attempts: Every automated attempt, in order.
        escalations: `{"from", "to", "reason", "at", "actor"}` per escalation.
        output: The accepted output, once resolved.
        resolution: `{"status", "level", "actor", "reason"}`; status is `resolved` (an automated
            level's output stood), `approved`, `modified`, `rejected` (a person), or `unresolved`
            (the last level is automated and its attempt still triggered). Kept for code that
            reads it; see `ending`.
        ending: How the run ended (`hitl_graphs.endings`), `at` the level: `completed` (resolved,
            approved or modified), `rejected` / `expired` (a person's or a deadline's reject), or
            `stopped` (unresolved, with the trigger's reason).
    """

    task: Any
    level: str
    attempts: Annotated[list[Attempt], operator.add]
    escalations: Annotated[list[dict[str, Any]], operator.add]
    output: Any
    resolution: dict[str, Any]
    ending: Ending | None


DURABILITY: Durability = "async"
"""How a runner should checkpoint this graph: `Workflow(..., durability=escalation.DURABILITY)`.

After every step: an automated level's attempt is a model call (the costly part, and a real
model may answer differently the second time), so each level's attempt is kept as soon as it is
made and a crash does not ask that level again."""


# -- the graph ------------------------------------------------------------------------------


def create_escalation_graph(
    levels: Sequence[EscalationLevel],
    *,
    trigger: EscalationTrigger = DEFAULT_TRIGGER,
    output_schema: dict[str, Any] | None = None,
    timeout: float | timedelta | None = None,
    default: Decision | None = None,
) -> StateGraph[EscalationState]:
    """Build a graph that takes a case (`{"task": ...}`) up `levels` until one resolves it.

    One node per level, named after it, so the drawing shows the ladder. Returns the uncompiled
    graph (for a `Workflow`, your checkpointer, or a parent graph).

    Args:
        levels: The ladder, lowest first (see `default_levels`). Names must be unique.
        trigger: When an automated attempt goes up (default: error, confidence < 0.7, sensitive).
        output_schema: JSON Schema a person's modified `output` must satisfy (default: any JSON).
        timeout: Seconds (or a `timedelta`) after which each review this graph raises expires and
            `default` applies (`hitl sweep` / `Runner.sweep()` applies it; AgentScope's "proceed
            with the default after N seconds"). None: reviews wait for a person.
        default: The decision at the deadline: `Reject` (the default: the case is closed
            unresolved), `Approve` (the last attempt's output stands) or `Escalate` (up one level,
            nobody answered; at the top level, where nothing is above, it is a `Reject`).

    Raises:
        ConfigError: no levels, two with the same name, or a `default` a level cannot take.

    Example:
        >>> levels = [AgentLevel("bot", lambda case: {"output": "reset link sent", "confidence": 0.95}),
        ...           HumanLevel("support", role="support")]
        >>> graph = create_escalation_graph(levels, timeout=timedelta(hours=8), default=Escalate()).compile()
        >>> graph.invoke({"task": "I forgot my password"})["resolution"]["status"]
        'resolved'
    """
    if not levels:
        raise ConfigError("an escalation graph needs at least one level")
    names = [level.name for level in levels]
    if dupes := sorted({n for n in names if names.count(n) > 1}):
        raise ConfigError(f"escalation level names must be unique; {dupes[0]!r} appears twice")
    patch_schema = {"type": "object", "properties": {"output": output_schema}, "required": ["output"]} if output_schema else None
    check_default(default, ("approve", "reject", "escalate"))

    graph = StateGraph(EscalationState)
    for i, level in enumerate(levels):
        above = levels[i + 1].name if i + 1 < len(levels) else None
        node = (
            _agent_node(level, above, trigger)
            if isinstance(level, AgentLevel)
            else _human_node(level, above, patch_schema, timeout, default)
        )
        graph.add_node(level.name, node, destinations=(above, END) if above else (END,))
    graph.add_edge(START, levels[0].name)
    return graph


def _agent_node(level: AgentLevel, above: str | None, trigger: EscalationTrigger) -> Node[EscalationState, Command[Any]]:
    def node(state: EscalationState) -> Command[Any]:
        case: EscalationCase = {"task": state.get("task"), "attempts": list(state.get("attempts", [])),
                                "escalations": list(state.get("escalations", []))}
        try:
            attempt = _attempt(level.name, level.handler(case))
        except GraphBubbleUp:  # a handler that pauses (a nested review) must reach LangGraph
            raise
        except Exception as exc:  # a failing handler is a reason to escalate, not a crash
            attempt = {"level": level.name, "output": None, "confidence": None, "error": f"{type(exc).__name__}: {exc}",
                       "sensitive": False}
        reason = trigger(attempt)
        if reason is None:
            return Command(goto=END, update={"level": level.name, "attempts": [attempt], "output": attempt.get("output"),
                                             "resolution": _resolution("resolved", level.name),
                                             "ending": ended("completed", at=level.name)})
        if above is None:
            return Command(goto=END, update={"level": level.name, "attempts": [attempt],
                                             "resolution": _resolution("unresolved", level.name, reason=reason),
                                             "ending": ended("stopped", at=level.name, reason=reason)})
        record = _record(level.name, above, reason)
        record_event("escalated", record, name=f"escalated:{level.name}")
        return Command(goto=above, update={"level": above, "attempts": [attempt], "escalations": [record]})

    node.__name__ = level.name
    return node


def _human_node(
    level: HumanLevel, above: str | None, patch_schema: dict[str, Any] | None,
    timeout: float | timedelta | None, default: Decision | None,
) -> Node[EscalationState, Command[Any]]:
    allowed: tuple[DecisionKind, ...] = ("approve", "modify", "reject", *(("escalate",) if above else ()))
    if isinstance(default, Escalate) and above is None:  # nobody above to hand it to: fail closed
        default = Reject(reason=f"no decision in time, and no level above {level.name!r}", comment=default.comment)

    def node(state: EscalationState) -> Command[Any]:
        attempts = state.get("attempts", [])
        escalations = state.get("escalations", [])
        why = escalations[-1]["reason"] if escalations else None
        output = state["output"] if "output" in state else (attempts[-1].get("output") if attempts else None)
        decision = request_review(
            "escalation",
            {"task": state.get("task"), "level": level.name, "required_role": level.role, "reason": why,
             "output": output, "attempts": attempts, "escalations": escalations},
            title=f"Escalated to {level.name} (role {level.role})" + (f": {why}" if why else ""),
            allowed=allowed,
            editable=("output",),
            key=f"escalation:{level.name}",
            patch_target="payload",
            patch_schema=patch_schema,
            required_role=level.role,
            timeout=timeout,
            default=default,
        )
        by = {"actor": decision.actor, **({"comment": decision.comment} if decision.comment else {})}
        ending = ended_by(decision, at=level.name)
        match decision:
            case Approve():
                return Command(goto=END, update={"output": output, "resolution": _resolution("approved", level.name, **by),
                                                 "ending": ending})
            case Modify(patch=patch):
                return Command(goto=END, update={"output": patch["output"],
                                                 "resolution": _resolution("modified", level.name, **by), "ending": ending})
            case Reject(reason=reason):
                return Command(goto=END, update={"resolution": _resolution("rejected", level.name, reason=reason, **by),
                                                 "ending": ending})
            case Escalate(reason=reason) if above is not None:
                why_up = reason or f"escalated by {decision.actor or 'a person'}"
                record = _record(level.name, above, why_up, actor=decision.actor)
                record_event("escalated", record, name=f"escalated:{level.name}")
                return Command(goto=above, update={"level": above, "output": output, "escalations": [record]})
            case _:  # request_review refuses kinds outside `allowed`
                raise InvalidDecisionError(f"level {level.name!r} cannot take {decision.kind!r}")

    node.__name__ = level.name
    return node


def _attempt(level: str, raw: Mapping[str, Any]) -> Attempt:
    if not isinstance(raw, Mapping):
        raise TypeError(f"a handler returns a mapping like {{'output': ..., 'confidence': 0.9}}, got {type(raw).__name__}")
    data: dict[str, Any] = to_json(dict(raw))
    confidence = data.get("confidence")
    attempt: Attempt = {
        **data,  # type: ignore[typeddict-item]
        "level": level,
        "output": data.get("output"),
        "confidence": float(confidence) if isinstance(confidence, int | float) else None,
        "error": str(data["error"]) if data.get("error") else None,
        "sensitive": bool(data.get("sensitive", False)),
    }
    return attempt


def _record(frm: str, to: str, reason: str, *, actor: str | None = None) -> dict[str, Any]:
    return {"from": frm, "to": to, "reason": reason, "at": datetime.now(UTC).isoformat(), "actor": actor}


def _resolution(status: Literal["resolved", "approved", "modified", "rejected", "unresolved"], level: str,
                **extra: Any) -> dict[str, Any]:
    return {"status": status, "level": level, **{k: v for k, v in extra.items() if v is not None}}

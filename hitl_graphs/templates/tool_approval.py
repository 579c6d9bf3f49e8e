"""Tool-call approval: an agent loop whose tool calls a person reviews before they run, per tool.

The loop is `agent` (the model, tools bound) and `tools`, as in LangGraph's prebuilt agent,
with each tool call of a model turn sent to its own `tools` task (`Send`). That one shape gives
what a review set needs:

- Each call that a policy asks about pauses in its own task, keyed by its tool call id, so the
  calls of one turn are one pending set (same `turn` in their payloads) with one decision per
  call, answered by call id (never by position); answering one leaves the others pending.
- Calls that need no review run at once, in their own tasks; LangGraph keeps a finished task's
  writes while its siblings wait, so a resume never runs them again. A reviewed call runs right
  after its own decision, once.
- Nothing runs before its decision: the task's first step is the gate (`request_review`).

Decisions per call: `Approve` runs it; `Modify(patch={"args": {...}})` runs it with new arguments,
merged over the call's own (`{"args": {"amount": 900}}` edits one argument and keeps the rest;
the runner checks the merged arguments against the tool's argument schema, and then with the
tool's own argument model, validators included, before anything is written, so a bad value is
refused and the call stays pending); `Reject(reason=...)` does not run it and gives the
model the reason as the tool's result, so it can adapt.

Loop guard: a call identical (same tool, same arguments) to one a person rejected in this
thread is not asked again; the model gets "already rejected" as its result. And a model that
still asks for tools on its `max_turns`-th turn is stopped: those calls are answered "not run"
and the graph ends with `stop_reason` set. A person is never asked twice about the same thing,
and no model can loop forever.

Memory lives in the state, so it survives pauses and restarts: `approved_tools` (what
`AskOncePolicy` reads), `rejected_calls` (the loop guard) and `tool_log` (every call a policy
looked at: `info` calls that ran unpaused, each decision with its actor, each refusal).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Durability, Send

from hitl_graphs.decisions import Approve, Decision, DecisionKind, Modify, Reject
from hitl_graphs.effects import approved_before, record_event, remember_approval
from hitl_graphs.endings import Ending
from hitl_graphs.errors import ConfigError, InvalidDecisionError
from hitl_graphs.gate import check_default, decided_by_person, request_review, to_json
from hitl_graphs.patches import PATCH_CHECK
from hitl_graphs.policies import AlwaysAskPolicy, AskOncePolicy, ConfirmationPolicy
from hitl_graphs.reviews import ReviewRequest
from hitl_graphs.templates._steps import bind_tools, ended
from hitl_graphs.templates._tools import (
    ToolLike,
    _Call,
    _check_args,
    _invoke,
    _patch_schema,
    _same,
    _show,
    _tools_by_name,
    agent_tool,
    tool_args_schema,
)

__all__ = [
    "DURABILITY",
    "ToolApprovalState",
    "ToolLike",
    "agent_tool",
    "create_tool_approval_graph",
    "tool_args_schema",
]


def _union(current: list[str] | None, new: list[str] | None) -> list[str]:
    merged = list(current or [])
    merged.extend(n for n in (new or []) if n not in merged)
    return merged


class ToolApprovalState(TypedDict, total=False):
    """The agent loop's state: the conversation plus what the person decided, all JSON-native.

    Attributes:
        messages: The conversation (LangGraph's `add_messages` reducer).
        approved_tools: Tools a person approved (or modified) at least once in this thread.
        rejected_calls: `{"tool", "args", "reason"}` of each call a person rejected.
        tool_log: One entry per call a policy looked at: `{"call_id", "tool", "args", "level",
            "decision", "actor", "ran", "note"}`.
        turns: Model turns so far.
        stop_reason: Why the loop stopped early (turn limit), else absent (kept for code that
            reads it; see `ending`).
        ending: How the run ended (`hitl_graphs.endings`): `completed` when the model answered
            without tools (a rejected call does not end the run: the model carries on), `stopped`
            at the turn limit; `at` is `turn N`.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    approved_tools: Annotated[list[str], _union]
    rejected_calls: Annotated[list[dict[str, Any]], operator.add]
    tool_log: Annotated[list[dict[str, Any]], operator.add]
    turns: int
    stop_reason: str
    ending: Ending | None


class _Task(TypedDict, total=False):
    """What one `tools` task gets through `Send`: the call and what the router decided."""

    call: _Call
    turn: int
    level: Literal["info", "confirm", "verify"] | None
    phrase: str | None
    refused: str | None
    remembered: bool
    """Runs unasked because a person approved the tool in an earlier thread of this workflow's actor."""


_DECISIONS: tuple[DecisionKind, ...] = ("approve", "modify", "reject")

DURABILITY: Durability = "exit"
"""How a runner should checkpoint this graph: `Workflow(..., durability=tool_approval.DURABILITY)`.

Once per run, where it stops, together with the ledger's record of the pause. Safe here because
every tool call runs through `run_once`: after a crash `recover` replays the stretch since the
last pause with the recorded decisions, and a call that already ran returns its recorded result
(the model is asked again)."""

def create_tool_approval_graph(
    model: BaseChatModel,
    tools: Sequence[ToolLike],
    *,
    policies: Mapping[str, ConfirmationPolicy] | None = None,
    default_policy: ConfirmationPolicy = AlwaysAskPolicy(),
    system_prompt: str | None = None,
    max_turns: int = 10,
    name: str | None = None,
    timeout: float | timedelta | None = None,
    default: Decision | None = None,
) -> StateGraph[ToolApprovalState]:
    """Build an agent loop that asks a person before tool calls, per tool, by policy.

    Returns the uncompiled graph: give it to a `Runner` (via `Workflow`), compile it with your
    checkpointer, or compile it without one and add it as a node (or a tool, `agent_tool`) of a
    larger graph.

    Args:
        model: A LangChain chat model with tool calling (`ChatOpenAI`, `ChatAnthropic`,
            `ChatOllama`, ...), or `ScriptedChatModel` offline. LangChain's `GenericFakeChatModel`
            and `FakeListChatModel` cannot call tools and are refused here.
        tools: The tools the model may call.
        policies: Tool name -> policy (`AlwaysAskPolicy`, `NeverAskPolicy`, `AskOncePolicy`,
            `AskWhenPolicy`, or your own `ConfirmationPolicy`).
        default_policy: The policy of tools not named in `policies`: by default `AlwaysAskPolicy()`,
            so a tool nobody thought about is asked about rather than run.
        system_prompt: Sent before the conversation on every model call (not stored).
        max_turns: Model calls per thread before the loop is stopped (see the module docs).
        name: The agent's name, shown in review titles (useful for nested agents).
        timeout: Seconds (or a `timedelta`) after which each review this graph raises expires and
            `default` applies (`hitl sweep` / `Runner.sweep()` applies it; AgentScope's "proceed
            with the default after N seconds"). None: reviews wait for a person.
        default: The decision at the deadline: `Reject` (the default, fail closed: the tool
            does not run, and the model is told nobody decided in time) or `Approve`. A
            `verify`-level call is rejected at its deadline whatever `default` says (only a person
            can type its phrase), and an approval by the deadline is not "a person approved" for
            `AskOncePolicy`: the next call is asked about again.

    Raises:
        ConfigError: the model cannot call tools, two tools share a name, `policies` names an
            unknown tool, `max_turns` < 1, or a `default` a tool call review cannot take.

    Example:
        >>> from hitl_graphs import NeverAskPolicy
        >>> from hitl_graphs.testing import ScriptedChatModel, tool_call
        >>> def addition(a: float, b: float) -> float:
        ...     '''Add two numbers.'''
        ...     return a + b
        >>> model = ScriptedChatModel(script=[tool_call("addition", {"a": 5.5, "b": 3.2}), "8.7"])
        >>> graph = create_tool_approval_graph(model, [addition], policies={"addition": NeverAskPolicy()})
        >>> graph.compile().invoke({"messages": [("user", "5.5 + 3.2?")]})["messages"][-1].content
        '8.7'
        >>> timed = create_tool_approval_graph(model, [addition], timeout=timedelta(minutes=10), default=Reject())
    """
    by_name = _tools_by_name(tools)
    policies = dict(policies or {})
    if unknown := sorted(set(policies) - set(by_name)):
        raise ConfigError(f"policies name {unknown[0]!r}, which is not a tool here; tools: {', '.join(sorted(by_name))}")
    if max_turns < 1:
        raise ConfigError(f"max_turns must be at least 1, got {max_turns}")
    check_default(default, _DECISIONS)
    schemas = {n: _patch_schema(t) for n, t in by_name.items()}
    bound = bind_tools(model, list(by_name.values()), template="tool-approval")
    prefix = f"{name}: " if name else ""

    def agent(state: ToolApprovalState, config: RunnableConfig) -> ToolApprovalState:
        turns = state.get("turns", 0) + 1
        messages: list[AnyMessage] = list(state.get("messages", []))
        if system_prompt:
            messages = [SystemMessage(system_prompt), *messages]
        reply = bound.invoke(messages, config)
        update: ToolApprovalState = {"messages": [reply], "turns": turns}
        if not (isinstance(reply, AIMessage) and reply.tool_calls):  # `route` ends the graph
            update["ending"] = ended("completed", at=f"turn {turns}")
        elif turns >= max_turns:  # the calls are answered "not run", then the graph ends
            update["stop_reason"] = f"turn limit: the model still asked for tools after {max_turns} turns"
            update["ending"] = ended("stopped", at=f"turn {turns}", reason=update["stop_reason"])
        return update

    def route(state: ToolApprovalState) -> list[Send] | str:
        last = state["messages"][-1] if state.get("messages") else None
        calls = last.tool_calls if isinstance(last, AIMessage) else []
        if not calls:
            return END
        approved = set(state.get("approved_tools", []))
        rejected = {_same(r["tool"], r["args"]): r for r in state.get("rejected_calls", [])}
        sends = []
        for raw in calls:
            call: _Call = {"id": raw["id"] or "", "name": raw["name"], "args": to_json(raw["args"])}
            task: _Task = {"call": call, "turn": state.get("turns", 0)}
            if stop := state.get("stop_reason"):
                task["refused"] = f"Not run: {stop}."
            elif call["name"] not in by_name:
                task["refused"] = f"Not run: there is no tool {call['name']!r}; tools: {', '.join(sorted(by_name))}."
            elif (prior := rejected.get(_same(call["name"], call["args"]))) is not None:
                why = f" ({prior['reason']})" if prior.get("reason") else ""
                task["refused"] = (f"Not run: a person already rejected this exact call{why}. "
                                   "Do not ask for it again; change the arguments or answer without it.")
            else:
                # whether to ask is settled here, once per turn: a resume re-runs the `tools` task,
                # and an answer given there must hold even if the memory changed meanwhile
                policy = policies.get(call["name"], default_policy)
                before = call["name"] in approved
                if not before and isinstance(policy, AskOncePolicy) and policy.scope == "workflow":
                    before = task["remembered"] = approved_before(call["name"])
                ask = policy.confirmation(call["name"], call["args"], approved_before=before)
                if ask is not None:
                    task["level"], task["phrase"] = ask.level, ask.phrase
            sends.append(Send("tools", task))
        return sends

    def run_call(state: _Task, config: RunnableConfig) -> ToolApprovalState:  # `state`: LangGraph's name for it
        t = state
        call, level = t["call"], t.get("level")
        entry = {"call_id": call["id"], "tool": call["name"], "args": call["args"], "level": level,
                 "decision": None, "actor": None, "ran": False, "note": None}
        if refused := t.get("refused"):
            message = ToolMessage(refused, tool_call_id=call["id"], name=call["name"], status="error")
            return {"messages": [message], "tool_log": [{**entry, "note": refused}]}
        if level is None and t.get("remembered"):
            return {"messages": [_invoke(by_name[call["name"]], call, call["args"], config)], "approved_tools": [call["name"]],
                    "tool_log": [{**entry, "ran": True, "note": "approved before in this workflow for this actor"}]}
        if level is None:
            return {"messages": [_invoke(by_name[call["name"]], call, call["args"], config)]}
        policy = policies.get(call["name"], default_policy)
        by_workflow = isinstance(policy, AskOncePolicy) and policy.scope == "workflow"
        if level == "info":
            record_event("tool_info", {k: entry[k] for k in ("call_id", "tool", "args")}, name=f"info:{call['id']}")
            return {"messages": [_invoke(by_name[call["name"]], call, call["args"], config)],
                    "tool_log": [{**entry, "ran": True}]}
        decision = request_review(
            "tool_calls",
            {"call_id": call["id"], "tool": call["name"], "args": call["args"], "level": level, "turn": t.get("turn"),
             "description": by_name[call["name"]].description, **({"agent": name} if name else {})},
            title=f"{prefix}Run {_show(call)}?" + (f" Type {t.get('phrase')!r} to confirm." if level == "verify" else ""),
            allowed=_DECISIONS,
            editable=("args",),
            key=call["id"],
            patch_target="payload",
            patch_schema=schemas[call["name"]],
            verify_phrase=t.get("phrase") if level == "verify" else None,
            timeout=timeout,
            default=None if level == "verify" and isinstance(default, Approve) else default,
        )
        entry |= {"decision": decision.kind, "actor": decision.actor}
        # "ask once" remembers what a person approved; a deadline's default is nobody's approval
        person = decided_by_person(decision)
        approved = [call["name"]] if person else []
        if by_workflow and person and isinstance(decision, Approve | Modify):
            remember_approval(call["name"], decision.actor)
        match decision:
            case Approve():
                message = _invoke(by_name[call["name"]], call, call["args"], config)
                return {"messages": [message], "approved_tools": approved,
                        "tool_log": [{**entry, "ran": True, **({} if person else {"note": "approved by its deadline's default"})}]}
            case Modify(patch=patch):
                args = dict(patch["args"])
                message = _invoke(by_name[call["name"]], call, args, config)
                if isinstance(message.content, str):
                    message.content = f"[a person changed the arguments to {json.dumps(args, sort_keys=True)}] {message.content}"
                was = "arguments were " + json.dumps(call["args"], sort_keys=True)
                return {"messages": [message], "approved_tools": approved,
                        "tool_log": [{**entry, "args": args, "ran": True, "note": was}]}
            case Reject(reason=reason):
                who = "a person rejected this call" if person else "nobody decided on this call in time"
                text = (f"Not run: {who}{': ' + reason if reason else ''}. "
                        "Do not ask for it again with the same arguments.")
                return {"messages": [ToolMessage(text, tool_call_id=call["id"], name=call["name"], status="error")],
                        "rejected_calls": [{"tool": call["name"], "args": call["args"], "reason": reason}],
                        "tool_log": [{**entry, "note": reason}]}
            case _:  # request_review refuses kinds outside `allowed`
                raise InvalidDecisionError(f"a tool call review cannot take {decision.kind!r}")

    def after_tools(state: ToolApprovalState) -> str:
        return END if state.get("stop_reason") else "agent"

    graph = StateGraph(ToolApprovalState)
    graph.add_node("agent", agent)
    def check_args(request: ReviewRequest, patch: Mapping[str, Any]) -> None:
        # the JSON Schema a review carries cannot hold a tool's validators; the runner calls this
        # (the node's PATCH_CHECK) before a modify is recorded, so the tool never refuses it later
        payload = request.payload if isinstance(request.payload, dict) else {}
        tool = by_name.get(str(payload.get("tool")))
        if tool is not None and request.patch_schema == schemas[tool.name] and isinstance(patch.get("args"), dict):
            _check_args(tool, patch["args"])  # else a nested agent's call: its own schema was checked

    graph.add_node("tools", run_call, metadata={PATCH_CHECK: check_args})
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["tools", END])
    graph.add_conditional_edges("tools", after_tools, ["agent", END])
    return graph

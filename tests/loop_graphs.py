"""An agent loop paused at static breakpoints, as a user writes it with plain LangGraph: `agent`
asks for a tool call each turn, `tools` answers it, the message list grows. `--app
tests.loop_graphs` registers `loop-before` (`interrupt_before=["tools"]`) and `loop-after`
(`interrupt_after=["agent"]`)."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from hitl_graphs import Workflow, register

TURNS = 12
"""How many tool calls the agent asks for before it answers."""


class Loop(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    context: str
    turns: int


def agent(state: Loop) -> dict[str, Any]:
    n = state.get("turns", 0) + 1
    if n > TURNS:
        return {"messages": [AIMessage(content="all done", id=f"ai-{n:03}")], "turns": n}
    call = {"name": "search", "args": {"q": f"query {n:03}"}, "id": f"call-{n:03}"}
    return {"messages": [AIMessage(content="", id=f"ai-{n:03}", tool_calls=[call])], "turns": n}


def tools(state: Loop) -> dict[str, Any]:
    call = state["messages"][-1].tool_calls[0]  # type: ignore[union-attr]
    return {"messages": [ToolMessage(content=f"found {call['args']['q']}: " + "lorem ipsum " * 40,
                                     tool_call_id=call["id"], id=f"tool-{call['id']}")]}


def _route(state: Loop) -> str:
    return "tools" if state["messages"][-1].tool_calls else END  # type: ignore[union-attr]


def loop_graph() -> StateGraph[Loop]:
    graph = StateGraph(Loop)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", _route, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph


LOOP_BEFORE = Workflow("loop-before", lambda: loop_graph().compile(interrupt_before=["tools"]), editable=("context",))
LOOP_AFTER = Workflow("loop-after", lambda: loop_graph().compile(interrupt_after=["agent"]))
WORKFLOWS = [LOOP_BEFORE, LOOP_AFTER]

for _wf in WORKFLOWS:
    register(_wf, replace=True)

"""LangChain v1 agents (`create_agent` + `HumanInTheLoopMiddleware`) as the tests drive them,
importable by subprocesses (`hitl(db, ..., HITL_APP="tests.langchain_agents")`).

The model makes three tool calls in one turn: `send_email` (every decision allowed), `lookup`
(not gated: it runs without asking) and `delete_file` (approve or reject only). Each tool run
appends to the effects file (`tests.workflows.effect`), so a test counts what ran, across processes.
"""

from __future__ import annotations

from typing import Literal

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph.state import CompiledStateGraph

from hitl_graphs import Workflow, register
from hitl_graphs.testing import ScriptedChatModel, tool_call
from tests.workflows import effect


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    effect(f"send_email:{to}:{body}")
    return f"sent to {to}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    effect(f"delete_file:{path}")
    return f"deleted {path}"


@tool
def lookup(query: str) -> str:
    """Look something up (harmless: never reviewed)."""
    effect(f"lookup:{query}")
    return f"found {query}"


CALLS = AIMessage(content="", tool_calls=[
    *tool_call("send_email", {"to": "ana@example.com", "body": "hi"}, id="call_send").tool_calls,
    *tool_call("lookup", {"query": "weather"}, id="call_lookup").tool_calls,
    *tool_call("delete_file", {"path": "/srv/report.pdf"}, id="call_delete").tool_calls,
])
"""One model turn asking for three tools at once (parallel tool calls)."""

INPUT = {"messages": [{"role": "user", "content": "Mail Ana, check the weather, delete the report."}]}


def agent(mode: Literal["batched", "per_call"] = "batched") -> CompiledStateGraph:  # type: ignore[type-arg]
    """An agent written for plain LangChain: nothing of hitl_graphs in it but the scripted model.
    (`per_call` needs langchain 1.4.6+; the workflow builds it only when run.)"""
    return create_agent(
        ScriptedChatModel(script=[CALLS, "All done."]),
        tools=[send_email, lookup, delete_file],
        middleware=[HumanInTheLoopMiddleware(
            interrupt_on={"send_email": True, "delete_file": {"allowed_decisions": ["approve", "reject"]}},
            **({"interrupt_mode": mode} if mode != "batched" else {}),   # the default, also before 1.4.6
        )],
    )


BATCHED = Workflow("lc_batched", lambda: agent("batched"), example_input=INPUT)
PER_CALL = Workflow("lc_per_call", lambda: agent("per_call"), example_input=INPUT)
WORKFLOWS = [BATCHED, PER_CALL]

for _wf in WORKFLOWS:
    register(_wf, replace=True)

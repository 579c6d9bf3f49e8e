"""Graphs written for plain LangGraph, as a team has them before adopting the toolkit: a node that
reads its own answer shape from `interrupt()`, and a static breakpoint. `--app tests.plain_graphs`
registers them as the workflows `ship` (with `resume_value`), `ship-raw` (without) and `deploy`.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from hitl_graphs import Decision, Workflow, register
from tests.workflows import effect


class Order(TypedDict, total=False):
    item: str
    result: str


def ask_to_ship(state: Order) -> Order:
    answer = interrupt({"question": f"ship {state['item']}?"})
    if answer["approved"]:
        effect(f"ship:{state['item']}")
        return {"result": "shipped"}
    return {"result": "held"}


def ship_graph() -> StateGraph[Order]:
    graph = StateGraph(Order)
    graph.add_node("ask", ask_to_ship)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph


class Deploy(TypedDict, total=False):
    service: str
    deployed: bool


def deploy_graph() -> StateGraph[Deploy]:
    graph = StateGraph(Deploy)
    graph.add_node("plan", lambda s: {"deployed": False})
    graph.add_node("deploy", lambda s: {"deployed": True})
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "deploy")
    graph.add_edge("deploy", END)
    return graph


def approved(decision: Decision) -> dict[str, Any]:
    """The answer shape `ask_to_ship` reads."""
    return {"approved": decision.kind == "approve"}


SHIP = Workflow("ship", ship_graph, resume_value=approved)
SHIP_RAW = Workflow("ship-raw", ship_graph)
DEPLOY = Workflow("deploy", lambda: deploy_graph().compile(interrupt_before=["deploy"]))
WORKFLOWS = [SHIP, SHIP_RAW, DEPLOY]

for _wf in WORKFLOWS:
    register(_wf, replace=True)

"""Workflows the tests drive, importable by subprocesses (`--app tests.workflows`).

Side effects are appended to the file named by `$HITL_TEST_EFFECTS`, so a test can count how
often each ran across processes. `$HITL_TEST_DIE=<node>` makes that node SIGKILL its own process
on first entry (a marker file next to the effects file remembers it died once).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from hitl_graphs import Reject, Workflow, register, request_review, review_node
from hitl_graphs.examples import approval_workflow, email_workflow, register_examples


def effect(name: str) -> None:
    path = os.environ.get("HITL_TEST_EFFECTS")
    if path:
        with open(path, "a") as f:
            f.write(name + "\n")
            f.flush()
            os.fsync(f.fileno())


def maybe_die(where: str) -> None:
    if os.environ.get("HITL_TEST_DIE") != where:
        return
    marker = Path(os.environ["HITL_TEST_EFFECTS"] + f".died-{where}")
    if not marker.exists():
        marker.write_text("died")
        os.kill(os.getpid(), signal.SIGKILL)


def effects() -> list[str]:
    path = os.environ.get("HITL_TEST_EFFECTS")
    if not path or not os.path.exists(path):
        return []
    return Path(path).read_text().splitlines()


# -- pay: an interrupt gate before a payment ---------------------------------------------------


class PayState(TypedDict, total=False):
    to: str
    amount: int
    memo: str
    status: str


def _prepare(state: PayState) -> PayState:
    effect("prepare")
    return {"status": "prepared"}


def _pay(state: PayState) -> PayState:
    maybe_die("pay")
    effect(f"pay:{state['to']}:{state['amount']}")
    return {"status": "paid"}


def pay_graph() -> StateGraph[PayState]:
    g = StateGraph(PayState)
    g.add_node("prepare", _prepare)
    g.add_node(
        "review",
        review_node("gate", lambda s: {"to": s["to"], "amount": s["amount"]}, title="Pay?",
                    on_approve="pay", on_reject=END, editable=("amount", "memo"),
                    allowed=("approve", "modify", "reject")),
        destinations=("pay", END),
    )
    g.add_node("pay", _pay)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "review")
    g.add_edge("pay", END)
    return g


# -- fanout: two parallel branches, each with its own review ---------------------------------


def _merge(a: list[str], b: list[str]) -> list[str]:
    return a + b


class FanState(TypedDict, total=False):
    items: list[str]
    done: Annotated[list[str], _merge]


def _branch(name: str) -> Any:
    def node(state: FanState) -> FanState:
        decision = request_review("gate", {"branch": name}, title=f"Run {name}?", allowed=("approve", "reject"))
        if isinstance(decision, Reject):
            return {"done": [f"{name}:skipped"]}
        effect(f"branch:{name}")
        return {"done": [name]}

    return node


def fanout_graph() -> StateGraph[FanState]:
    g = StateGraph(FanState)
    g.add_node("left", _branch("left"))
    g.add_node("right", _branch("right"))
    g.add_edge(START, "left")
    g.add_edge(START, "right")
    g.add_edge("left", END)
    g.add_edge("right", END)
    return g


# -- raw: a user's own interrupt() call and interrupt_after ------------------------------------


class RawState(TypedDict, total=False):
    question: str
    answer: Any
    checked: bool


def _ask(state: RawState) -> RawState:
    answer = interrupt(state.get("question", "ok?"))
    return {"answer": answer}


def raw_graph() -> StateGraph[RawState]:
    g = StateGraph(RawState)
    g.add_node("ask", _ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    return g


class AfterState(TypedDict, total=False):
    draft: str
    published: bool


def _write(state: AfterState) -> AfterState:
    effect("write")
    return {"draft": "first draft"}


def _publish(state: AfterState) -> AfterState:
    effect(f"publish:{state['draft']}")
    return {"published": True}


def after_graph() -> Any:
    g = StateGraph(AfterState)
    g.add_node("write", _write)
    g.add_node("publish", _publish)
    g.add_edge(START, "write")
    g.add_edge("write", "publish")
    g.add_edge("publish", END)
    return g.compile(interrupt_after=["write"])


# -- delete: a payload patch checked by JSON Schema, a verify phrase, a review key -------------


class DeleteState(TypedDict, total=False):
    resource: str
    deleted: list[str]


DELETE_SCHEMA = {
    "type": "object",
    "properties": {"args": {"type": "object", "properties": {"resource": {"type": "string"}, "force": {"type": "boolean"}},
                            "required": ["resource"], "additionalProperties": False}},
}


def _delete(state: DeleteState) -> DeleteState:
    args = {"resource": state["resource"], "force": False}
    decision = request_review(
        "tool_calls", {"name": "delete", "args": args}, title=f"DELETE {state['resource']}?",
        editable=("args",), patch_target="payload", patch_schema=DELETE_SCHEMA,
        verify_phrase=f"DELETE {state['resource']}", key="call_delete_1",
    )
    if isinstance(decision, Reject):
        return {"deleted": []}
    if decision.kind == "modify":
        args = {**args, **decision.patch["args"]}
    effect(f"delete:{args['resource']}:{args['force']}")
    return {"deleted": [args["resource"]]}


def delete_graph() -> StateGraph[DeleteState]:
    g = StateGraph(DeleteState)
    g.add_node("delete", _delete)
    g.add_edge(START, "delete")
    g.add_edge("delete", END)
    return g


# -- governance: deadlines, roles, a loop for stale reviews, an effect run once ------------------


class GovState(TypedDict, total=False):
    amount: int
    n: int
    receipt: Any
    outcome: str


def _timed(default: Any) -> Any:
    def node(state: GovState) -> GovState:
        decision = request_review("gate", {"amount": state.get("amount", 1)}, title="Pay before the deadline?",
                                  timeout=float(os.environ.get("HITL_TEST_TIMEOUT", "0.5")), default=default)
        if isinstance(decision, Reject):
            return {"outcome": "rejected"}
        effect(f"timed:{decision.kind}")
        return {"outcome": decision.kind}

    return node


def _finance(state: GovState) -> GovState:
    decision = request_review("gate", {"amount": state["amount"]}, title="Pay out?", required_role="finance",
                              separation_of_duties=True, editable=("amount",))
    if isinstance(decision, Reject):
        return {"outcome": "rejected"}
    effect(f"finance:{state['amount']}")
    return {"outcome": "paid"}


def _loop(state: GovState) -> Any:
    from langgraph.types import Command

    decision = request_review("gate", {"n": state.get("n", 0)}, title="Good enough?", allowed=("approve", "reject"))
    if isinstance(decision, Reject):
        return Command(goto="loop", update={"n": state.get("n", 0) + 1})
    return Command(goto=END, update={"outcome": "accepted"})


def _charge(state: GovState) -> GovState:
    from hitl_graphs import run_once

    request_review("gate", {"amount": state["amount"]}, title="Charge the card?", allowed=("approve",))
    receipt = run_once("charge", lambda: (effect(f"charge:{state['amount']}"), {"id": "rcpt-1", "amount": state["amount"]})[1])
    maybe_die("charged")
    return {"receipt": receipt, "outcome": "charged"}


def _single(name: str, node: Any, *, loop: bool = False) -> Any:
    def build() -> StateGraph[GovState]:
        g = StateGraph(GovState)
        if loop:
            g.add_node(name, node, destinations=(name, END))
        else:
            g.add_node(name, node)
            g.add_edge(name, END)
        g.add_edge(START, name)
        return g

    return build


# -- flaky: a service after the review that may not answer; locker: holds the write lock ------


class SendState(TypedDict, total=False):
    to: str
    sent: bool


def _send(state: SendState) -> SendState:
    down = os.environ.get("HITL_TEST_DOWN")
    if down and os.path.exists(down):
        raise ConnectionError("mail service did not answer")
    effect(f"send:{state['to']}")
    return {"sent": True}


HELD: list[Any] = []
"""Connections `locker` opened and holds the write lock on (a test releases them)."""


def _lock_db(state: SendState) -> SendState:
    import sqlite3

    marker = Path(os.environ["HITL_TEST_EFFECTS"] + ".locked")
    if not marker.exists():  # the first run only
        marker.write_text("locked")
        conn = sqlite3.connect(os.environ["HITL_DB_PATH"], isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")  # held past the busy timeout: the run cannot record its end
        HELD.append(conn)
    effect("send")
    return {"sent": True}


def _gated(node: Any) -> Any:
    def build() -> StateGraph[SendState]:
        g = StateGraph(SendState)
        g.add_node("review", review_node("gate", lambda s: {"to": s["to"]}, title="Send?", on_approve="send",
                                         on_reject=END), destinations=("send", END))
        g.add_node("send", node)
        g.add_edge(START, "review")
        g.add_edge("send", END)
        return g

    return build


WORKFLOWS = [
    Workflow("flaky", _gated(_send), example_input={"to": "ana"}),
    Workflow("flaky-exit", _gated(_send), example_input={"to": "ana"}, durability="exit"),
    Workflow("locker", _gated(_lock_db), example_input={"to": "ana"}, durability="exit"),
    Workflow("timed", _single("pay", _timed(None)), example_input={"amount": 5}),
    Workflow("timed-approve", _single("notify", _timed(__import__("hitl_graphs").Approve())), example_input={"amount": 1}),
    Workflow("finance", _single("payout", _finance), example_input={"amount": 500}),
    Workflow("loop", _single("loop", _loop, loop=True), example_input={"n": 0}),
    Workflow("charge", _single("charge", _charge), example_input={"amount": 30}),
    Workflow("delete", delete_graph, example_input={"resource": "r-42"}),
    Workflow("pay", pay_graph, example_input={"to": "acme", "amount": 120}),
    Workflow("fanout", fanout_graph, example_input={"items": []}),
    Workflow("raw", raw_graph, example_input={"question": "ship it?"}),
    Workflow("after", after_graph, editable=("draft",)),
    Workflow("approval-noroute", lambda: approval_workflow().graph(), editable=("proposed_action",),
             on_approve={"approved": True}),
    approval_workflow(),
    email_workflow(),
]

for _wf in WORKFLOWS:
    register(_wf, replace=True)
register_examples()  # what the CLI knows (plan-review, ...), for tests that start them in-process

"""A `Modify` patch is checked against what the node needs, before the decision is recorded.

A patch can have the right outer type (a dict where the state holds a dict, a string where a tool
takes a string) and still be one the node cannot use: `{"proposed_action": {}}` for a node that
reads `action` and `target`, an account id the tool's own validator refuses. Recorded, such a
decision is spent and the node fails after it. Each case here is refused up front instead, and
the thread stays exactly as it was, still waiting for the same review.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hitl_graphs import (
    AlwaysAskPolicy,
    Approve,
    ConfigError,
    Modify,
    PatchError,
    Runner,
    ScriptedChatModel,
    Workflow,
    create_tool_approval_graph,
    request_review,
    tool_call,
)
from hitl_graphs.examples import approval_workflow
from tests.conftest import fingerprint, hitl
from tests.workflows import effect, effects

# -- a seed-style graph: loose state types, a static breakpoint, the needs declared on the Workflow


class DeployState(TypedDict, total=False):
    proposed_action: dict[str, Any]  # as the seed writes it: any dict passes the type check
    limit: int
    approved: bool | None
    result: str


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: str = Field(min_length=1)
    target: str = Field(min_length=1)
    replicas: int = 1


class DeployNeeds(BaseModel):
    """What `execute` reads: a well-formed action, within the limit the state sets."""

    proposed_action: Action
    limit: int

    @model_validator(mode="after")
    def _within_limit(self) -> DeployNeeds:
        if self.proposed_action.replicas > self.limit:
            raise ValueError(f"replicas {self.proposed_action.replicas} exceed the limit {self.limit}")
        return self


def _propose(state: DeployState) -> DeployState:
    return {"proposed_action": {"action": "restart", "target": "web"}, "limit": 3, "approved": None}


def _execute(state: DeployState) -> DeployState:
    action = state["proposed_action"]
    effect(f"execute:{action['action']}:{action['target']}:{action.get('replicas', 1)}")
    return {"result": f"did {action['action']} on {action['target']}"}


def _deploy_graph() -> Any:
    g = StateGraph(DeployState)
    g.add_node("propose", _propose)
    g.add_node("execute", _execute)
    g.add_edge(START, "propose")
    g.add_edge("propose", "execute")
    g.add_edge("execute", END)
    return g.compile(interrupt_before=["execute"])


def _deploy(**needs: Any) -> Workflow:
    return Workflow("deploy", _deploy_graph, editable=("proposed_action", "limit"), on_approve={"approved": True},
                    on_reject={"approved": False}, **needs)


BAD_ACTIONS = [
    ("empty", {"proposed_action": {}}, "field 'proposed_action.action' Field required"),
    ("blank-target", {"proposed_action": {"action": "restart", "target": ""}},
     "field 'proposed_action.target' String should have at least 1 character"),
    ("stray-key", {"proposed_action": {"action": "restart", "target": "web", "force": True}},
     "field 'proposed_action.force' Extra inputs are not permitted"),
    ("over-limit", {"proposed_action": {"action": "scale", "target": "web", "replicas": 5}},
     "replicas 5 exceed the limit 3"),  # the limit comes from the state: the patch does not name it
]


@pytest.mark.parametrize(("patch", "message"), [b[1:] for b in BAD_ACTIONS], ids=[b[0] for b in BAD_ACTIONS])
def test_a_breakpoint_patch_is_checked_against_the_workflows_patch_model(
    db: str, effects_file: Path, patch: dict[str, Any], message: str
) -> None:
    with Runner.open(db, workflows=[_deploy(patch_model=DeployNeeds)]) as runner:
        view = runner.start("deploy", {})
        before = fingerprint(db, view.thread_id)
        with pytest.raises(PatchError, match=re.escape(message) + r".*DeployNeeds"):
            runner.resume(view.thread_id, Modify(patch=patch, actor="ana"))
        assert fingerprint(db, view.thread_id) == before  # nothing recorded: the decision is not spent
        assert runner.show(view.thread_id).reviews == view.reviews
        good = {"proposed_action": {"action": "scale", "target": "web", "replicas": 5}, "limit": 5}
        done = runner.resume(view.thread_id, Modify(patch=good, actor="ana"))
    assert (done.status, done.outcome) == ("done", "completed")
    assert effects() == ["execute:scale:web:5"]


def test_without_a_patch_model_the_same_patch_breaks_the_node(db: str, effects_file: Path) -> None:
    """Why the model is needed: the state's own type (`dict[str, Any]`) lets the patch through."""
    with Runner.open(db, workflows=[_deploy()]) as runner:
        view = runner.start("deploy", {})
        with pytest.raises(KeyError, match="action"):
            runner.resume(view.thread_id, Modify(patch={"proposed_action": {}}, actor="ana"))
        failed = runner.show(view.thread_id)
    assert (failed.status, failed.reviews) == ("failed", ())  # and the decision is spent


def test_a_patch_model_must_be_a_pydantic_model() -> None:
    with pytest.raises(ConfigError, match="patch_model must be a pydantic model class"):
        _deploy(patch_model=DeployState)


def test_a_gate_patch_is_checked_against_the_patch_model_too(db: str, effects_file: Path) -> None:
    class Needs(BaseModel):
        amount: int = Field(gt=0, le=1000)

    class PayState(TypedDict, total=False):
        amount: int
        paid: int

    def pay(state: PayState) -> PayState:
        request_review("gate", {"amount": state["amount"]}, title="Pay?", editable=("amount",))
        effect(f"pay:{state['amount']}")
        return {"paid": state["amount"]}

    g = StateGraph(PayState)
    g.add_node("pay", pay)
    g.add_edge(START, "pay")
    g.add_edge("pay", END)
    with Runner.open(db, workflows=[Workflow("capped", g, patch_model=Needs)]) as runner:
        view = runner.start("capped", {"amount": 10})
        before = fingerprint(db, view.thread_id)
        with pytest.raises(PatchError, match=re.escape("field 'amount' Input should be greater than 0")):
            runner.resume(view.thread_id, Modify(patch={"amount": -5}))
        assert fingerprint(db, view.thread_id) == before
        assert runner.resume(view.thread_id, Modify(patch={"amount": 20})).state["paid"] == 20
    assert effects() == ["pay:20"]


# -- the built-in approval workflow ---------------------------------------------------------------


@pytest.mark.parametrize("patch", [
    {"proposed_action": {}},
    {"proposed_action": {"action": "restart"}},
    {"proposed_action": {"action": "restart", "target": ""}},
    {"proposed_action": {"action": " ", "target": "web"}},
], ids=["empty", "no-target", "blank-target", "blank-action"])
def test_the_builtin_approval_workflow_refuses_an_action_execute_cannot_do(db: str, patch: dict[str, Any]) -> None:
    with Runner.open(db, workflows=[approval_workflow()]) as runner:
        view = runner.start("approval", {"task": "web"})
        before = fingerprint(db, view.thread_id)
        with pytest.raises(PatchError, match="proposed_action"):
            runner.resume(view.thread_id, Modify(patch=patch, actor="ana"))
        assert fingerprint(db, view.thread_id) == before
        done = runner.resume(view.thread_id, Approve(actor="ana"))
    assert (done.status, done.state["result"], done.state["executions"]) == ("done", "did restart on web", 1)


# -- tool approval: the tool's own validation, not only its JSON Schema ------------------------------


class TransferArgs(BaseModel):
    account_id: str = Field(description="The account to pay from: digits only.")
    amount: int

    @field_validator("account_id")
    @classmethod
    def _digits(cls, value: str) -> str:
        if not value.isdigit():
            raise ValueError("an account id is digits only")
        return value


def _transfer(account_id: str, amount: int) -> str:
    effect(f"transfer:{account_id}:{amount}")
    return f"sent {amount} from {account_id}"


TRANSFER = StructuredTool.from_function(_transfer, name="transfer", description="Send money.", args_schema=TransferArgs)


def _transfer_model(messages: list[BaseMessage]) -> str | AIMessage:
    if not any(isinstance(m, ToolMessage) for m in messages):
        return tool_call("transfer", {"account_id": "56789", "amount": 10}, id="call_transfer")
    return "done"


def _transfers() -> Workflow:
    return Workflow("transfers", lambda: create_tool_approval_graph(
        ScriptedChatModel(responder=_transfer_model), [TRANSFER], default_policy=AlwaysAskPolicy()))


def test_tool_arguments_the_tool_would_refuse_are_refused_before_the_decision(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=[_transfers()]) as runner:
        view = runner.start("transfers", {"messages": [{"role": "user", "content": "pay 10"}]})
        before = fingerprint(db, view.thread_id)
        bad = Modify(patch={"args": {"account_id": "savings", "amount": 10}}, actor="ana")
        with pytest.raises(PatchError, match=re.escape("field 'args.account_id'") + ".*an account id is digits only"):
            runner.resume(view.thread_id, bad, review_id="call_transfer")
        one = Modify({"args": {"account_id": "savings"}}, actor="ana")  # merged over the shown args, then the tool's model
        with pytest.raises(PatchError, match=re.escape("field 'args.account_id'") + ".*an account id is digits only"):
            runner.resume(view.thread_id, one, review_id="call_transfer")
        assert fingerprint(db, view.thread_id) == before
        good = Modify(patch={"args": {"account_id": "11111", "amount": 10}}, actor="ana")
        done = runner.resume(view.thread_id, good, review_id="call_transfer")
    assert done.status == "done"
    assert effects() == ["transfer:11111:10"]


def test_the_cli_refuses_such_a_patch_in_one_line(db: str, effects_file: Path) -> None:
    started = hitl(db, "run", "approval", "--json")
    thread_id = json.loads(started.stdout)["thread_id"]
    before = fingerprint(db, thread_id)
    refused = hitl(db, "modify", thread_id, "--patch", json.dumps({"proposed_action": {"action": "stop", "target": " "}}))
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "error: field 'proposed_action.target' String should have at least 1 character, as the workflow's patch model "
        "ApprovalPatch requires; change the patch"]
    assert fingerprint(db, thread_id) == before

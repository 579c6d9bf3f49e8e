"""Escalation: each trigger, each level, each human decision, recorded, across a restart."""

from __future__ import annotations

import doctest
import importlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hitl_graphs import (
    AgentLevel,
    AnyTrigger,
    Approve,
    ConfigError,
    CustomTrigger,
    ErrorTrigger,
    Escalate,
    HumanLevel,
    InvalidDecisionError,
    LowConfidenceTrigger,
    ModelHandler,
    Modify,
    PatchError,
    Reject,
    Workflow,
    ScriptedChatModel,
    SensitiveTrigger,
    create_escalation_graph,
)
from hitl_graphs.errors import PermissionDeniedError
from hitl_graphs.examples.escalation import escalation_workflow
from tests.agent_workflows import ESCALATION_WORKFLOWS, TRIGGER
from tests.conftest import fingerprint, hitl, python
from tests.drivers import Driven
from tests.workflows import effects

APP = "tests.agent_workflows"
CONFIDENT = {"output": "refund 40", "confidence": 0.95}


@pytest.fixture
def workflows() -> list[Workflow]:
    """What the shared `runner` fixture (both drivers) runs in this module."""
    return [*ESCALATION_WORKFLOWS, escalation_workflow()]


def hops(state: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e["from"], e["to"], e["reason"]) for e in state.get("escalations", [])]


# -- triggers, alone -------------------------------------------------------------------------


@dataclass(frozen=True)
class TriggerCase:
    id: str
    trigger: Any
    attempt: dict[str, Any]
    reason: str | None


TRIGGERS = [
    TriggerCase("low-confidence", LowConfidenceTrigger(0.7), {"confidence": 0.69}, "low confidence: 0.69 < 0.7"),
    TriggerCase("confident-enough", LowConfidenceTrigger(0.7), {"confidence": 0.7}, None),
    TriggerCase("no-confidence-no-signal", LowConfidenceTrigger(0.7), {"confidence": None}, None),
    TriggerCase("error", ErrorTrigger(), {"error": "RuntimeError: down"}, "error: RuntimeError: down"),
    TriggerCase("no-error", ErrorTrigger(), {"error": None}, None),
    TriggerCase("sensitive", SensitiveTrigger(), {"sensitive": True}, "sensitive: flagged for a person"),
    TriggerCase("custom", CustomTrigger(lambda a: a.get("amount", 0) > 1000, reason="amount over 1000"), {"amount": 1001},
                "amount over 1000"),
    TriggerCase("any-first-wins", AnyTrigger((ErrorTrigger(), SensitiveTrigger())), {"error": "x", "sensitive": True}, "error: x"),
]


@pytest.mark.parametrize("case", TRIGGERS, ids=lambda c: c.id)
def test_triggers(case: TriggerCase) -> None:
    assert case.trigger(case.attempt) == case.reason


# -- automated levels: each trigger moves the case up ----------------------------------------


@dataclass(frozen=True)
class EscalateCase:
    id: str
    agent: dict[str, Any]
    reason: str | None
    ran: list[str] = field(default_factory=lambda: ["handler:agent", "handler:senior_agent"])


ESCALATES = [
    EscalateCase("confident-agent-resolves", CONFIDENT, None, ["handler:agent"]),
    EscalateCase("low-confidence", {"output": "refund 40?", "confidence": 0.4}, "low confidence: 0.4 < 0.7"),
    EscalateCase("handler-raises", {"raise": "billing API down"}, "error: RuntimeError: billing API down"),
    EscalateCase("handler-reports-error", {"output": None, "error": "no such order"}, "error: no such order"),
    EscalateCase("sensitive", {"output": "refund 40", "confidence": 0.99, "sensitive": True}, "sensitive: flagged for a person"),
    EscalateCase("custom-predicate", {"output": "refund 4000", "confidence": 0.99, "amount": 4000}, "amount over 1000"),
]


@pytest.mark.parametrize("case", ESCALATES, ids=lambda c: c.id)
def test_each_trigger_escalates_to_the_next_automated_level(runner: Driven, case: EscalateCase) -> None:
    done = runner.start("esc-ladder", {"task": {"agent": case.agent, "senior_agent": CONFIDENT}})
    assert done.status == "done"
    assert effects() == case.ran
    level = "agent" if case.reason is None else "senior_agent"
    assert done.state["resolution"] == {"status": "resolved", "level": level}
    assert done.state["output"] == "refund 40"
    assert hops(done.state) == ([] if case.reason is None else [("agent", "senior_agent", case.reason)])
    for record in done.state.get("escalations", []):
        assert datetime.fromisoformat(record["at"]).tzinfo is not None
    assert [a["level"] for a in done.state["attempts"]] == [r.split(":")[1] for r in case.ran]


def test_last_automated_level_that_still_triggers_is_unresolved(runner: Driven) -> None:
    done = runner.start("esc-bots", {"task": {"agent": {"raise": "down"}, "senior_agent": {"output": "?", "confidence": 0.1}}})
    assert done.state["resolution"] == {"status": "unresolved", "level": "senior_agent", "reason": "low confidence: 0.1 < 0.7"}
    assert "output" not in done.state
    assert hops(done.state) == [("agent", "senior_agent", "error: RuntimeError: down")]


# -- human levels: the decision resolves the case, or pushes it up ---------------------------

UNSURE = {"agent": {"output": "refund 40?", "confidence": 0.4}, "senior_agent": {"output": "refund 400", "confidence": 0.99,
                                                                                   "sensitive": True}}


@dataclass(frozen=True)
class HumanCase:
    id: str
    decision: Any
    resolution: dict[str, Any]
    output: Any


HUMAN = [
    HumanCase("approve", Approve(actor="ana"), {"status": "approved", "level": "human", "actor": "ana"}, "refund 400"),
    HumanCase("modify", Modify(patch={"output": "refund 350"}, actor="ana", comment="partial"),
              {"status": "modified", "level": "human", "actor": "ana", "comment": "partial"}, "refund 350"),
    HumanCase("reject", Reject(reason="fraud suspected", actor="ana"),
              {"status": "rejected", "level": "human", "actor": "ana", "reason": "fraud suspected"}, None),
]


@pytest.mark.parametrize("case", HUMAN, ids=lambda c: c.id)
def test_human_level_decisions_resolve_the_case(runner: Driven, case: HumanCase) -> None:
    view = runner.start("esc-ladder", {"task": UNSURE})
    (review,) = view.reviews
    assert (review.kind, review.node, review.key, review.required_role) == ("escalation", "human", "escalation:human", "reviewer")
    assert review.allowed == ("approve", "modify", "reject", "escalate")
    assert review.title == "Escalated to human (role reviewer): sensitive: flagged for a person"
    assert review.payload["required_role"] == "reviewer"
    assert review.payload["output"] == "refund 400"
    done = runner.resume(view.thread_id, case.decision, roles=["reviewer"])
    assert done.status == "done"
    assert done.state["resolution"] == case.resolution
    assert done.state.get("output") == case.output
    assert effects() == ["handler:agent", "handler:senior_agent"]       # the automated levels ran once
    assert hops(done.state) == [("agent", "senior_agent", "low confidence: 0.4 < 0.7"),
                                ("senior_agent", "human", "sensitive: flagged for a person")]


def test_refused_human_decisions_change_nothing(runner: Driven, db: str) -> None:
    view = runner.start("esc-ladder", {"task": UNSURE})
    before = fingerprint(db, view.thread_id)
    with pytest.raises(PermissionDeniedError, match="requires role 'reviewer'"):
        runner.resume(view.thread_id, Approve(actor="eve"), roles=["intern"])
    with pytest.raises(PatchError, match=re.escape("field 'output' expects string: 350 is not of type 'string'")):
        runner.resume(view.thread_id, Modify(patch={"output": 350}), roles=["reviewer"])
    assert fingerprint(db, view.thread_id) == before


def test_escalate_to_the_manager_across_a_restart(runner: Driven, db: str) -> None:
    view = runner.start("esc-ladder", {"task": UNSURE})
    code = (
        "from hitl_graphs import Runner, Escalate\n"
        "with Runner.open() as r:\n"
        f"    v = r.resume({view.thread_id!r}, Escalate(reason='over my limit', actor='ana'), roles=['reviewer'])\n"
        "    print(v.reviews[0].node, v.reviews[0].required_role)\n"
    )
    out = python(db, "import tests.agent_workflows\n" + code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["manager", "manager"]

    (review,) = runner.show(view.thread_id).reviews
    assert review.allowed == ("approve", "modify", "reject")           # the top: nowhere further to go
    assert review.title == "Escalated to manager (role manager): over my limit"
    with pytest.raises(InvalidDecisionError, match="does not allow 'escalate'; allowed: approve, modify, reject"):
        runner.resume(view.thread_id, Escalate(), roles=["manager"])
    done = runner.resume(view.thread_id, Approve(actor="max"), roles=["manager"])
    assert done.state["resolution"] == {"status": "approved", "level": "manager", "actor": "max"}
    assert done.state["output"] == "refund 400"
    assert hops(done.state)[-1] == ("human", "manager", "over my limit")
    assert done.state["escalations"][-1]["actor"] == "ana"
    assert effects() == ["handler:agent", "handler:senior_agent"]
    decided = [(e.event, e.actor, e.data.get("kind")) for e in runner.history(view.thread_id) if e.event == "decided"]
    assert decided == [("decided", "ana", "escalate"), ("decided", "max", "approve")]


def test_builtin_escalation_workflow_with_models(db: str, effects_file: Path) -> None:
    """The CLI's `escalation`: scripted agent and senior models, then a person, each step its own process."""
    out = hitl(db, "run", "escalation", "--json", HITL_APP=APP)
    assert out.returncode == 0, out.stderr
    view = json.loads(out.stdout)
    assert view["reviews"][0]["required_role"] == "reviewer"
    assert hops(view["state"]) == [("agent", "senior_agent", "low confidence: 0.55 < 0.7"),
                                   ("senior_agent", "human", "sensitive: flagged for a person")]
    thread = view["thread_id"]
    out = hitl(db, "modify", thread, "--patch", '{"output": "Refund $2,000."}', "--actor", "ana", "--role", "reviewer",
               "--json", HITL_APP=APP)
    assert out.returncode == 0, out.stderr
    done = json.loads(out.stdout)
    assert done["state"]["resolution"] == {"status": "modified", "level": "human", "actor": "ana"}
    assert done["state"]["output"] == "Refund $2,000."


def test_model_handler_retries_knowing_why() -> None:
    seen: list[str] = []

    def senior(messages: Any) -> str:
        seen.append(messages[-1].content)
        return '{"output": "refund 400", "confidence": 0.9}'

    graph = create_escalation_graph([
        AgentLevel("agent", ModelHandler(ScriptedChatModel(script=["I am not sure"]))),
        AgentLevel("senior", ModelHandler(ScriptedChatModel(responder=senior))),
    ], trigger=CustomTrigger(lambda a: a.get("confidence") is None, reason="no confidence given")).compile()
    done = graph.invoke({"task": "refund?"})
    assert done["resolution"] == {"status": "resolved", "level": "senior"}
    assert done["output"] == "refund 400"
    assert seen == ['The agent level answered "I am not sure" and it was escalated: no confidence given. Do better.']


CONFIG = [
    ("no-levels", lambda: create_escalation_graph([]), "an escalation graph needs at least one level"),
    ("duplicate-names", lambda: create_escalation_graph([HumanLevel("a", role="x"), HumanLevel("a", role="y")]),
     "escalation level names must be unique; 'a' appears twice"),
]


@pytest.mark.parametrize(("make", "message"), [c[1:] for c in CONFIG], ids=[c[0] for c in CONFIG])
def test_configuration_errors(make: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        make()


def test_default_trigger_is_the_seeds() -> None:
    from hitl_graphs.templates.escalation import DEFAULT_TRIGGER

    assert DEFAULT_TRIGGER({"confidence": 0.69}) == "low confidence: 0.69 < 0.7"
    assert DEFAULT_TRIGGER({"error": "boom"}) == "error: boom"
    assert DEFAULT_TRIGGER({"sensitive": True}) == "sensitive: flagged for a person"
    assert DEFAULT_TRIGGER({"confidence": 0.9}) is None
    assert TRIGGER({"amount": 5000}) == "amount over 1000"


@pytest.mark.parametrize("module", ["hitl_graphs.templates.escalation", "hitl_graphs.examples.escalation"])
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0

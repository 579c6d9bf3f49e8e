"""The built-in workflows as the CLI runs them: outcomes, and what `hitl history` tells."""

from __future__ import annotations

import json

import pytest

from hitl_graphs import Approve, Modify, Reject, Runner
from hitl_graphs.examples import approval_workflow
from tests.conftest import fingerprint, hitl


@pytest.fixture
def builtin(db: str) -> Runner:
    with Runner.open(db) as runner:  # no workflows given: the registry, built-ins included
        yield runner


def test_plan_review_history_shows_versions_deciders_and_executed_steps(builtin: Runner) -> None:
    view = builtin.start("plan-review", {"task": "ship it"})
    view = builtin.resume(view.thread_id, Modify(patch={"plan": ["a", "b", "c"]}, actor="ana"))
    assert view.reviews[0].kind == "plan"  # re-planned after 2 steps, reviewed again
    done = builtin.resume(view.thread_id, Approve(actor="bob"))
    assert (done.status, done.outcome) == ("done", "completed")
    history = builtin.history(view.thread_id)
    events = [(e.event, e.actor) for e in history]
    assert events.count(("decided", "ana")) == 1 and events.count(("decided", "bob")) == 1
    steps = [e.data["step"] for e in history if e.event == "step_executed"]
    assert steps == [r["step"] for r in done.state["results"]] and steps[:2] == ["a", "b"]
    requested = [e.data["payload"]["version"] for e in history if e.event == "review_requested"]
    assert requested == [1, 3]  # v2 is the person's edit of v1, v3 the re-plan
    assert [(v["version"], v["author"]) for v in done.state["plan_versions"]] == [(1, "planner"), (2, "ana"), (3, "planner")]


def test_plan_review_reject_ends_rejected_with_the_reason(builtin: Runner) -> None:
    """The README's table: a plan rejected ends `rejected` (as through a plain `Workflow`);
    `cancelled` is what `hitl cancel` says."""
    view = builtin.start("plan-review", {"task": "ship it"})
    done = builtin.resume(view.thread_id, Reject(actor="ana", reason="not this week"))
    assert (done.outcome, done.state.get("results", [])) == ("rejected", [])
    assert done.state["stopped"]["reason"] == "not this week"


def test_tool_agent_that_adapts_to_a_reject_completes(builtin: Runner) -> None:
    view = builtin.start("tool-approval")
    while view.reviews:
        review = view.reviews[0]
        decision = Reject(reason="no") if review.payload["tool"] == "get_balance" else Approve(verification=review.verify_phrase)
        view = builtin.resume(view.thread_id, decision, review_id=review.review_id)
    assert (view.status, view.outcome) == ("done", "completed")


def test_escalations_show_in_history(builtin: Runner) -> None:
    view = builtin.start("escalation")
    review = view.reviews[0]
    assert review.kind == "escalation"
    escalated = [e.data for e in builtin.history(view.thread_id) if e.event == "escalated"]
    assert escalated and all({"from", "to", "reason", "at"} <= set(e) for e in escalated)
    assert [e["to"] for e in escalated][-1] == review.payload["level"]


@pytest.mark.parametrize("patch", [{}, {"action": "restart"}, {"action": "restart", "target": 3}],
                         ids=["empty", "no-target", "target-not-text"])
def test_an_approval_patch_the_node_cannot_use_is_refused_before_it_is_recorded(db: str, patch: dict[str, object]) -> None:
    with Runner.open(db, workflows=[approval_workflow()]) as runner:
        thread_id = runner.start("approval", {"task": "web"}).thread_id
    before = fingerprint(db, thread_id)
    refused = hitl(db, "modify", thread_id, "--patch", json.dumps({"proposed_action": patch}))
    assert refused.returncode == 1 and "field 'proposed_action' expects ProposedAction" in refused.stderr
    assert fingerprint(db, thread_id) == before
    with Runner.open(db, workflows=[approval_workflow()]) as runner:
        view = runner.resume(thread_id, Modify(patch={"proposed_action": {"action": "restart", "target": "db"}}))
    assert (view.status, view.state["result"]) == ("done", "did restart on db")

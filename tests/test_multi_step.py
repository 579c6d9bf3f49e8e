"""Multi-step gates read as a person would: a phase runs, its output waits, the answer steers what
runs next, and each phase runs exactly as often as it should."""

from __future__ import annotations

import doctest
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from hitl_graphs import (
    Approve,
    ConfigError,
    Decision,
    Modify,
    PatchError,
    Phase,
    Reject,
    Runner,
    ScriptedChatModel,
    ThreadView,
    Workflow,
    create_multi_step_graph,
)
from hitl_graphs.examples import multi_step as multi_step_example
from hitl_graphs.templates import multi_step
from tests.conftest import fingerprint, python
from tests.drivers import Driven
from tests.staged_workflows import STAGED
from tests.workflows import effects


@pytest.fixture
def workflows() -> list[Workflow]:
    """What the shared `runner` fixture (both drivers) runs in this module."""
    return STAGED


@dataclass(frozen=True)
class Stop:
    """Not a decision: the test cancels the thread (`hitl cancel`), the way a person stops it."""

    reason: str
    actor: str = "ana"


@dataclass(frozen=True)
class Case:
    id: str
    answers: Sequence[Decision | Stop]
    effects: list[str]
    outcome: str
    outputs: dict[str, str]
    gates: list[tuple[str, int, str]]
    """(phase, attempt, decision) per gate, in order."""


FROM_A = "analyse=analyse v1"
CASES = [
    Case("approve-all", [Approve(actor="ana")] * 3,
         ["phase:analyse:1", "phase:plan:1", "phase:tests:1"], "completed",
         {"analyse": "analyse v1", "plan": f"plan v1 from {FROM_A}", "tests": f"tests v1 from {FROM_A}; plan=plan v1 from {FROM_A}"},
         [("analyse", 1, "approve"), ("plan", 1, "approve"), ("tests", 1, "approve")]),
    Case("modify-is-what-later-phases-see", [Modify(patch={"output": "needs: add ints"}, actor="ana"), Approve(), Approve()],
         ["phase:analyse:1", "phase:plan:1", "phase:tests:1"], "completed",
         {"analyse": "needs: add ints", "plan": "plan v1 from analyse=needs: add ints",
          "tests": "tests v1 from analyse=needs: add ints; plan=plan v1 from analyse=needs: add ints"},
         [("analyse", 1, "modify"), ("plan", 1, "approve"), ("tests", 1, "approve")]),
    Case("redo-with-feedback", [Reject(reason="cover floats", actor="ana"), Approve(), Approve(), Approve()],
         ["phase:analyse:1", "phase:analyse:2", "phase:plan:1", "phase:tests:1"], "completed",
         {"analyse": "analyse v2 after 'cover floats'"},
         [("analyse", 1, "reject"), ("analyse", 2, "approve"), ("plan", 1, "approve"), ("tests", 1, "approve")]),
    Case("rejected-after-max-attempts", [Approve(), Reject(reason="no"), Reject(reason="still no", actor="bo")],
         ["phase:analyse:1", "phase:plan:1", "phase:plan:2"], "rejected",
         {"analyse": "analyse v1"},
         [("analyse", 1, "approve"), ("plan", 1, "reject"), ("plan", 2, "reject")]),
    Case("stop", [Approve(), Stop("requirements changed")],
         ["phase:analyse:1", "phase:plan:1"], "cancelled",
         {"analyse": "analyse v1"},
         [("analyse", 1, "approve"), ("plan", 1, "pending")]),
]


def _answer(runner: Driven, view: ThreadView, answer: Decision | Stop) -> ThreadView:
    if isinstance(answer, Stop):
        return runner.cancel(view.thread_id, actor=answer.actor, reason=answer.reason)
    return runner.resume(view.thread_id, answer)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_answer_at_a_gate(runner: Driven, case: Case) -> None:
    view = runner.start("phases-fx", {"task": "adder"})
    for answer in case.answers:
        assert view.status == "paused"
        view = _answer(runner, view, answer)
    assert (view.status, view.outcome, view.reviews) == ("done", case.outcome, ())
    assert effects() == case.effects
    for phase, output in case.outputs.items():
        assert view.state["outputs"][phase] == output
    assert [(g["phase"], g["attempt"], g["decision"]) for g in view.state["gates"]] == case.gates


def test_the_gate_stands_after_the_phase_it_reviews(runner: Driven) -> None:
    view = runner.start("phases-fx", {"task": "adder"})
    assert effects() == ["phase:analyse:1"]
    (review,) = view.reviews
    assert (review.kind, review.node, review.position, review.key) == ("phase", "review_analyse", "after", "analyse#1")
    assert review.payload == {"task": "adder", "phase": "analyse", "instructions": "Do analyse.", "number": 1, "of": 3,
                              "attempt": 1, "max_attempts": 2, "output": "analyse v1", "earlier": {}}
    assert review.title == "Phase 1/3 analyse (attempt 1/2): analyse v1"
    assert (review.allowed, review.editable) == (("approve", "modify", "reject"), ("output",))
    redo = runner.resume(view.thread_id, Reject(reason="more", actor="ana"), review_id="analyse#1")
    assert redo.reviews[0].key == "analyse#2"
    assert redo.reviews[0].payload["output"] == "analyse v2 after 'more'"


def test_rejected_and_stopped_record_where_and_why(runner: Driven) -> None:
    rejected = runner.start("phases-fx", {"task": "adder"})
    for reason in ("no", "still no"):
        rejected = runner.resume(rejected.thread_id, Reject(reason=reason, actor="bo"))
    assert rejected.state["stopped"] == {"at": "analyse", "by": "bo", "reason": "still no"}
    decided = [e for e in runner.history(rejected.thread_id) if e.event == "decided"]
    assert [(e.actor, e.data["reason"]) for e in decided] == [("bo", "no"), ("bo", "still no")]

    stopped = runner.resume(runner.start("phases-fx", {"task": "adder"}).thread_id, Approve())
    stopped = runner.cancel(stopped.thread_id, actor="ana", reason="requirements changed")
    history = runner.history(stopped.thread_id)
    (gate,) = [e for e in history if e.event == "review_requested" and e.data["node"] == "review_plan"]
    (cancel,) = [e for e in history if e.event == "cancel_requested"]
    assert (cancel.actor, cancel.data["reason"]) == ("ana", "requirements changed")
    assert [e.review_id for e in history if e.event.endswith("cancelled") and e.review_id] == [gate.review_id]
    assert (stopped.state["phase"], stopped.state["output"]) == ("plan", "plan v1 from analyse=analyse v1")


def test_gates_skipped_by_policy_run_unattended(runner: Driven) -> None:
    view = runner.start("phases-marked", {"task": "migrate"})
    assert effects() == ["phase:routine:1", "phase:risky:1"]
    (review,) = view.reviews
    assert (review.node, review.payload["output"]) == ("review_risky", "NEEDS_APPROVAL: drop the old table?")
    # a redo is reviewed even though its output no longer asks for it
    view = runner.resume(view.thread_id, Reject(reason="keep the table"))
    assert view.reviews[0].payload["output"] == "risky done"
    done = runner.resume(view.thread_id, Approve())
    assert done.outcome == "completed"
    assert effects() == ["phase:routine:1", "phase:risky:1", "phase:risky:2", "phase:final:1"]
    assert [(g["phase"], g["decision"], g["by"]) for g in done.state["gates"]] == [
        ("routine", "skipped", "policy"), ("risky", "reject", None), ("risky", "approve", None),
        ("final", "skipped", "policy")]
    assert [e.event for e in runner.history(done.thread_id)].count("review_requested") == 2


BAD = [
    ("wrong-type", {"output": 3}, "field 'output' expects str, got int"),
    ("not-editable", {"outputs": {"analyse": "x"}}, "field 'outputs' may not be changed in this review; editable fields: output"),
]


@pytest.mark.parametrize(("patch", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_edit_is_refused_and_changes_nothing(runner: Driven, db: str, patch: dict[str, Any], message: str) -> None:
    view = runner.start("phases-fx", {"task": "adder"})
    before = fingerprint(db, view.thread_id)
    with pytest.raises(PatchError, match=message):
        runner.resume(view.thread_id, Modify(patch=patch))
    assert fingerprint(db, view.thread_id) == before


def test_chat_model_phases_see_earlier_outputs_and_feedback(db: str, effects_file: Path) -> None:
    seen: list[list[BaseMessage]] = []

    def reply(messages: Sequence[BaseMessage]) -> str:
        seen.append(list(messages))
        return ["reqs", "reqs with floats", "plan"][len(seen) - 1]

    model = ScriptedChatModel(responder=reply)
    graph = create_multi_step_graph([Phase("analyse", model, "Analyse the requirements."),
                                     Phase("plan", model, "Draft the plan.")])
    with Runner.open(db, workflows=[Workflow("llm-phases", graph)]) as runner:
        view = runner.start("llm-phases", {"task": "adder"})
        view = runner.resume(view.thread_id, Reject(reason="floats too"))
        view = runner.resume(view.thread_id, Modify(patch={"output": "reqs: ints and floats"}))
        done = runner.resume(view.thread_id, Approve())
    assert done.state["outputs"] == {"analyse": "reqs: ints and floats", "plan": "plan"}
    assert [m.text for m in seen[1][1:]] == [
        "Task: adder\n\nPhase 1 (analyse): Analyse the requirements.", "reqs",
        "A person sent this back: floats too\nRedo the phase."]
    assert [m.text for m in seen[2][1:]] == [
        "Task: adder\n\nPhase 1 (analyse): Analyse the requirements.", "reqs: ints and floats",
        "Phase 2 (plan): Draft the plan."]


def test_each_phase_runs_once_across_processes(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=STAGED) as runner:
        runner.start("phases-fx", {"task": "adder"}, thread_id="gates-proc")
    resumed = python(db, "import tests.staged_workflows\nfrom hitl_graphs import Runner, Reject, Approve\n"
                         "with Runner.open() as r:\n"
                         "    v = r.resume('gates-proc', Reject(reason='floats', actor='ana'))\n"
                         "    v = r.resume('gates-proc', Approve(actor='ana'))\n"
                         "    print(v.reviews[0].key)")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "plan#1"
    with Runner.open(db, workflows=STAGED) as runner:
        runner.resume("gates-proc", Approve())
        done = runner.resume("gates-proc", Approve())
    assert done.outcome == "completed"
    assert done.state["outputs"]["analyse"] == "analyse v2 after 'floats'"
    assert effects() == ["phase:analyse:1", "phase:analyse:2", "phase:plan:1", "phase:tests:1"]


@pytest.mark.parametrize(
    ("phases", "kwargs", "message"),
    [
        ([], {}, "needs at least one phase"),
        ([Phase("a", print), Phase("a", print)], {}, "phase names must be unique .* 'a' is used twice"),
        ([Phase("a", print), Phase("review_a", print)], {}, "'review_a' is used twice"),
        ([Phase("a", print)], {"max_attempts": 0}, "max_attempts must be at least 1, got 0"),
        ([Phase("a", "gpt")], {}, "phase 'a' must be a LangChain chat model or a callable"),  # type: ignore[arg-type]
    ],
    ids=["empty", "duplicate", "gate-clash", "attempts", "not-callable"],
)
def test_misconfiguration_is_refused(phases: list[Phase], kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_multi_step_graph(phases, **kwargs)


def test_a_phase_must_return_text(db: str, effects_file: Path) -> None:
    graph = create_multi_step_graph([Phase("count", lambda p: 3)])  # type: ignore[arg-type, return-value]
    with Runner.open(db, workflows=[Workflow("bad-phase", graph)]) as runner:
        with pytest.raises(ConfigError, match="phase 'count' returned int; a phase step returns its output as text"):
            runner.start("bad-phase", {"task": "t"})


def test_builtin_demo_redoes_with_feedback(db: str) -> None:
    with Runner.open(db, workflows=[multi_step_example.multi_step_workflow()]) as runner:
        view = runner.start("multi-step")
        view = runner.resume(view.thread_id, Reject(reason="mention overflow"))
        assert view.reviews[0].payload["output"] == (
            "Analyse the requirements for a function that adds two numbers: done. [revised: mention overflow]")
        for _ in range(3):
            view = runner.resume(view.thread_id, Approve())
    assert (view.outcome, list(view.state["outputs"])) == ("completed", ["analyse", "plan", "tests"])


@pytest.mark.parametrize("module", [multi_step, multi_step_example], ids=lambda m: m.__name__)
def test_docstring_examples_run(module: Any) -> None:
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0

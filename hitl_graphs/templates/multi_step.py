"""Multi-step approval gates: phases run in order, and a person reviews each one's output after it
runs, before the next begins.

AgentScope's "Multi-Step Approval Gates" loop (analyse requirements -> draft plan -> write tests,
with `approve` / `stop` typed between phases) and the LangGraph skill's `interrupt_after`
multi-step graph, as one durable graph. Each phase is a node, followed by its gate node:

    analyse -> review_analyse -> plan -> review_plan -> tests -> review_tests -> END

At a gate (a review of kind `phase`, position `after`, key `<phase>#<attempt>`):

- **Approve**: the next phase runs.
- **Modify** `{"output": "..."}`: the edited output is what later phases see (`outputs[phase]`).
- **Reject** with a reason: the phase runs again with the reason as feedback, up to `max_attempts`
  attempts; a reject of the last attempt ends the thread as `rejected`, with the phase, who and
  why in the state's `ending` (and `stopped`) and in the history.
- **Stop**: `Runner.cancel(thread_id, reason=...)` / `hitl cancel THREAD --reason ...` halts the
  workflow where it stands, outcome `cancelled`. The history records who and why
  (`cancel_requested`) and where: the cancelled review is the gate of the phase it stood at (its
  `review_requested` event names the node `review_<phase>`); the state keeps `phase` and `output`.

Stop is not a `Reject`: a reject asks for another attempt, so one word cannot also mean "halt".
And it needs no gate of its own: cancelling a thread is how every workflow is halted, at any
pause, with the reason in the history.

A `gate_policy` makes gates conditional: a phase whose output it passes runs on unattended (a
`skipped` record in `gates`), e.g. `review_when_marked()` asks only when the output carries the
`NEEDS_APPROVAL:` marker, as in AgentScope's conditional interruption. A phase redone after a
reject is always reviewed: the person who asked for changes sees them.

Example:
    >>> from hitl_graphs import Approve, Reject, Runner, Workflow
    >>> phases = [Phase("draft", lambda p: f"draft {p.attempt}" + (f" ({p.feedback[-1]})" if p.feedback else "")),
    ...           Phase("publish", lambda p: f"published {p.outputs['draft']}")]
    >>> with Runner.open(":memory:", workflows=[Workflow("doc", create_multi_step_graph(phases))]) as runner:
    ...     view = runner.start("doc", {"task": "release notes"})
    ...     view = runner.resume(view.thread_id, Reject(reason="shorter"))
    ...     print(view.reviews[0].payload["output"])
    ...     view = runner.resume(view.thread_id, Approve())
    ...     print(runner.resume(view.thread_id, Approve()).state["outputs"])
    draft 2 (shorter)
    {'draft': 'draft 2 (shorter)', 'publish': 'published draft 2 (shorter)'}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import Literal, Protocol, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Durability

from hitl_graphs.decisions import Approve, Decision, DecisionKind, Modify, Reject
from hitl_graphs.endings import Ending
from hitl_graphs.errors import ConfigError, InvalidDecisionError
from hitl_graphs.gate import Node, check_default, request_review
from hitl_graphs.templates._steps import Stopped, ask, check_step, ended, ended_by, short

__all__ = [
    "DURABILITY",
    "GateDecision",
    "GatePolicy",
    "GateRecord",
    "MultiStepState",
    "PHASE_PROMPT",
    "Phase",
    "PhaseInput",
    "PhaseOutput",
    "PhaseStep",
    "create_multi_step_graph",
    "review_when_marked",
]

GateDecision = Literal["pending", "approve", "modify", "reject", "skipped"]
_DECISIONS: tuple[DecisionKind, ...] = ("approve", "modify", "reject")


@dataclass(frozen=True, slots=True)
class PhaseInput:
    """What a phase step is told.

    Attributes:
        task: The workflow's task.
        phase: This phase's name.
        instructions: This phase's instructions.
        outputs: The approved (or edited) outputs of the phases before, in order.
        attempt: 1 for the first run of the phase, 2 after one reject, ...
        feedback: The reasons given with each earlier reject of this phase, oldest first.
        rejected: The outputs those rejects sent back, oldest first.

    Example:
        >>> def draft(phase: PhaseInput) -> str:
        ...     return f"{phase.phase} v{phase.attempt}" + (f" ({phase.feedback[-1]})" if phase.feedback else "")
        >>> draft(PhaseInput(task="t", phase="draft", attempt=2, feedback=("shorter",)))
        'draft v2 (shorter)'
    """

    task: str
    phase: str
    instructions: str = ""
    outputs: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    attempt: int = 1
    feedback: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()


class PhaseStep(Protocol):
    """Runs one phase and returns its output as text."""

    def __call__(self, phase: PhaseInput, /) -> str: ...


@dataclass(frozen=True, slots=True)
class Phase:
    """One phase of a multi-step workflow.

    Args:
        name: The phase's node name (`review_<name>` is its gate).
        run: A chat model (given the task, the earlier phases and their outputs, and this phase's
            instructions) or a callable taking a `PhaseInput` and returning the output text.
        instructions: What the phase is to do (the model's prompt for this phase).

    Example:
        >>> Phase("analyse", lambda p: "ok", "Analyse the requirements.").name
        'analyse'
    """

    name: str
    run: BaseChatModel | PhaseStep
    instructions: str = ""


@dataclass(frozen=True, slots=True)
class PhaseOutput:
    """What a gate policy looks at: one phase's output, as it ran.

    Example:
        >>> needs_review = lambda result: result.output.startswith("NEEDS_APPROVAL:")
        >>> needs_review(PhaseOutput(task="t", phase="plan", output="NEEDS_APPROVAL: drop table", attempt=1))
        True"""

    task: str
    phase: str
    output: str
    attempt: int


class GatePolicy(Protocol):
    """Whether a person must review this phase output (`False`: the next phase runs unattended).

    Called once per phase run, in the phase's node. Keep it a pure function of its argument.
    """

    def __call__(self, result: PhaseOutput, /) -> bool: ...


def review_when_marked(marker: str = "NEEDS_APPROVAL:") -> GatePolicy:
    """A gate policy asking a person only when the output contains `marker`.

    AgentScope's conditional interruption: the agent is told to start its answer with
    `NEEDS_APPROVAL:` when unsure, and runs on unattended otherwise.

    Example:
        >>> policy = review_when_marked()
        >>> policy(PhaseOutput(task="t", phase="p", output="NEEDS_APPROVAL: drop the table?", attempt=1))
        True
        >>> policy(PhaseOutput(task="t", phase="p", output="renamed a variable", attempt=1))
        False
    """

    def policy(result: PhaseOutput) -> bool:
        return marker in result.output

    return policy


class GateRecord(TypedDict):
    """One phase run and what its gate did with it."""

    phase: str
    attempt: int
    output: str
    """The output as the phase produced it."""
    decision: GateDecision
    by: str | None
    """The person who decided, or `policy` when the gate was skipped."""
    reason: str | None
    comment: str | None
    edited: str | None
    """With `modify`: the output as the person edited it (what later phases see)."""


class MultiStepState(TypedDict, total=False):
    """The multi-step graph's state. A person edits `output` only."""

    task: str
    phase: str
    """The phase running or under review."""
    attempt: int
    output: str
    """The output of the phase under review."""
    outputs: dict[str, str]
    """Approved (or edited) outputs by phase, in phase order: what later phases see."""
    gates: list[GateRecord]
    stopped: Stopped | None
    """Where, who and why the last attempt of a phase was rejected (kept; see `ending`)."""
    ending: Ending | None
    """How the run ended (`hitl_graphs.endings`), `at` the phase: `completed` after the last
    phase, `rejected` / `expired` when its last attempt was rejected."""


DURABILITY: Durability = "async"
"""How a runner should checkpoint this graph: `Workflow(..., durability=multi_step.DURABILITY)`.

After every step: a phase step is any callable, run without `run_once`, so a phase may act on
the world; a checkpoint after each phase keeps a finished one from running again after a crash
(with `"exit"`, phases a gate policy let through unattended would all run again)."""


PHASE_PROMPT = (
    "You work through a task in phases. A person reviews each phase's output before the next phase "
    "begins, and may send it back with feedback. Reply with the phase's output only."
)


def create_multi_step_graph(
    phases: Sequence[Phase],
    *,
    max_attempts: int = 3,
    gate_policy: GatePolicy | None = None,
    timeout: float | timedelta | None = None,
    default: Decision | None = None,
) -> StateGraph[MultiStepState]:
    """Build a graph that runs `phases` in order with a review gate after each.

    Give it to `Workflow(...)`, compile it yourself, or add the compiled graph as a node of a
    larger graph whose state has the same keys. The input is `{"task": ...}`.

    Args:
        phases: The phases, in order; their names must be unique.
        max_attempts: How many times a phase may run; a reject of the last attempt ends the
            thread as rejected.
        gate_policy: Which phase outputs need a person (`None`: all of them). A phase redone
            after a reject is always reviewed.
        timeout: Seconds (or a `timedelta`) after which each review this graph raises expires and
            `default` applies (`hitl sweep` / `Runner.sweep()` applies it; AgentScope's "proceed
            with the default after N seconds"). None: reviews wait for a person.
        default: The decision at the deadline: `Reject` (the default: the phase is redone, and
            the last attempt's reject ends the thread) or `Approve` (the next phase runs).

    Raises:
        ConfigError: no phases, a repeated name, a step that is neither a chat model nor a sync
            callable, `max_attempts < 1`, or a `default` a gate cannot take.

    Example:
        >>> graph = create_multi_step_graph([Phase("a", lambda p: "x"), Phase("b", lambda p: "y")],
        ...                                 timeout=timedelta(minutes=30), default=Approve())
        >>> sorted(graph.nodes)
        ['a', 'b', 'review_a', 'review_b']
    """
    if not phases:
        raise ConfigError("create_multi_step_graph needs at least one phase")
    if max_attempts < 1:
        raise ConfigError(f"max_attempts must be at least 1, got {max_attempts}")
    check_default(default, _DECISIONS)
    names = [p.name for p in phases]
    nodes = names + [_gate(n) for n in names]
    if duplicate := next((n for n in nodes if nodes.count(n) > 1), None):
        raise ConfigError(f"phase names must be unique (and a phase's gate is review_<name>); {duplicate!r} is used twice")
    for p in phases:
        check_step(p.run, f"phase {p.name!r}")

    graph = StateGraph(MultiStepState)
    for index, phase in enumerate(phases):
        after = phases[index + 1].name if index + 1 < len(phases) else END
        step: PhaseStep = _model_step(phase.run, phases, index) if isinstance(phase.run, BaseChatModel) else phase.run
        graph.add_node(phase.name, _run_phase(phase, step, after, gate_policy), destinations=(_gate(phase.name), after))
        graph.add_node(_gate(phase.name), _gate_node(phase, index, len(phases), after, max_attempts, timeout, default),
                       destinations=(after, phase.name) if after != END else (phase.name, END))
    graph.add_edge(START, phases[0].name)
    return graph


def _run_phase(phase: Phase, step: PhaseStep, after: str, policy: GatePolicy | None) -> Node[MultiStepState, Command[str]]:
    def run(state: MultiStepState) -> Command[str]:
        gates = list(state.get("gates") or [])
        sent_back = [g for g in gates if g["phase"] == phase.name and g["decision"] == "reject"]
        attempt = len(sent_back) + 1
        outputs = dict(state.get("outputs") or {})
        task = state.get("task", "")
        output = step(PhaseInput(
            task=task, phase=phase.name, instructions=phase.instructions, outputs=MappingProxyType(outputs),
            attempt=attempt, feedback=tuple(g["reason"] or "" for g in sent_back),
            rejected=tuple(g["output"] for g in sent_back),
        ))
        if not isinstance(output, str):
            raise ConfigError(f"phase {phase.name!r} returned {type(output).__name__}; a phase step returns its output as text")
        ask_person = attempt > 1 or policy is None or policy(PhaseOutput(task=task, phase=phase.name, output=output, attempt=attempt))
        record = GateRecord(phase=phase.name, attempt=attempt, output=output, decision="pending", by=None,
                            reason=None, comment=None, edited=None)
        update: MultiStepState = {"phase": phase.name, "attempt": attempt, "output": output}
        if ask_person:
            return Command(goto=_gate(phase.name), update={**update, "gates": [*gates, record]})
        skipped = GateRecord(**{**record, "decision": "skipped", "by": "policy"})
        update |= {"gates": [*gates, skipped], "outputs": {**outputs, phase.name: output}}
        if after == END:
            update["ending"] = ended("completed", at=phase.name)
        return Command(goto=after, update=update)

    return run


class _Decided(TypedDict):
    """The fields of a `GateRecord` every decision sets (typed, so a merged record stays one)."""

    by: str | None
    comment: str | None


def _gate_node(
    phase: Phase, index: int, count: int, after: str, max_attempts: int, timeout: float | timedelta | None,
    default: Decision | None,
) -> Node[MultiStepState, Command[str]]:
    def gate(state: MultiStepState) -> Command[str]:
        gates = list(state["gates"])
        record = gates[-1]
        attempt = record["attempt"]
        outputs = dict(state.get("outputs") or {})
        decision = request_review(
            "phase",
            {"task": state.get("task", ""), "phase": phase.name, "instructions": phase.instructions,
             "number": index + 1, "of": count, "attempt": attempt, "max_attempts": max_attempts,
             "output": record["output"], "earlier": outputs},
            title=f"Phase {index + 1}/{count} {phase.name} (attempt {attempt}/{max_attempts}): {short(record['output'])}",
            allowed=_DECISIONS,
            editable=("output",),
            position="after",
            key=f"{phase.name}#{attempt}",
            timeout=timeout,
            default=default,
        )
        decided: _Decided = {"by": decision.actor, "comment": decision.comment}
        match decision:
            case Approve():
                gates[-1] = {**record, **decided, "decision": "approve"}
                final = record["output"]
            case Modify(patch=patch):
                # the runner has written the validated patch into the state; a graph resumed
                # without it gets the patch here
                final = str(patch.get("output", state.get("output", record["output"])))
                gates[-1] = {**record, **decided, "decision": "modify", "edited": final}
            case Reject(reason=reason):
                gates[-1] = {**record, **decided, "decision": "reject", "reason": reason}
                if attempt < max_attempts:
                    return Command(goto=phase.name, update={"gates": gates})
                stopped = Stopped(at=phase.name, by=decision.actor, reason=reason)
                return Command(goto=END, update={"gates": gates, "stopped": stopped,
                                                 "ending": ended_by(decision, at=phase.name)})
            case _:  # request_review refuses kinds not allowed
                raise InvalidDecisionError(f"a phase gate cannot take {decision.kind!r}")
        update: MultiStepState = {"gates": gates, "output": final, "outputs": {**outputs, phase.name: final}}
        if after == END:
            update["ending"] = ended_by(decision, at=phase.name)
        return Command(goto=after, update=update)

    return gate


def _model_step(model: BaseChatModel, phases: Sequence[Phase], index: int) -> PhaseStep:
    """Ask `model` for a phase's output. Earlier phases' outputs and this phase's rejected
    attempts are its own turns in the conversation, so a scripted model's n-th reply goes to the
    n-th phase run, and a real model sees what it is asked to redo."""

    def step(p: PhaseInput) -> str:
        messages: list[BaseMessage] = [SystemMessage(PHASE_PROMPT)]
        for i, phase in enumerate(phases[: index + 1]):
            intro = f"Task: {p.task}\n\n" if i == 0 else ""
            messages.append(HumanMessage(f"{intro}Phase {i + 1} ({phase.name}): {phase.instructions or phase.name}"))
            if i < index:
                messages.append(AIMessage(p.outputs.get(phase.name, "")))
        for output, reason in zip(p.rejected, p.feedback, strict=True):
            messages += [AIMessage(output), HumanMessage(f"A person sent this back: {reason or 'no reason given'}\nRedo the phase.")]
        return ask(model, messages)

    return step


def _gate(name: str) -> str:
    return f"review_{name}"

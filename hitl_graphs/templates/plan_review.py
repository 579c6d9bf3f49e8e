"""Plan review: a planner writes a plan, a person reviews it before any step runs.

smolagents pauses its agent after each `PlanningStep` with a step callback and lets a person
approve, edit or cancel the plan, then resumes with the agent's memory kept. This is that loop
as a LangGraph graph, durable across processes:

    plan -> review_plan -> execute -> execute -> ... -> (every `planning_interval` steps) plan -> ...

- **Approve**: the steps run in order, each in its own graph step (its own checkpoint), so a step
  that ran is not run again by a later pause, a resume in another process, or a recovery (only a
  crash in the middle of a step can repeat that one step).
- **Modify** `{"plan": [...]}`: exactly the edited plan runs (reworded, added, removed, reordered).
- **Reject**: nothing more runs; the graph ends and the thread's outcome is `rejected` through
  any `Workflow`, with who and why in the state's `ending` (and, as before, `stopped`) and in the
  history's `decided` event. (`Runner.cancel` / `hitl cancel` ends a thread as `cancelled`.)
- **Re-planning** every `planning_interval` executed steps (smolagents' option of that name): the
  planner updates the remaining plan from what was done, and the update is reviewed again.

The memory (smolagents' `agent.memory.steps`) lives in the state, so it survives pauses and
processes: `plan_versions` (every version, who wrote it, who approved, edited or rejected it) and
`results` (every executed step with its result, in order). `plan_memory(state)` reads it back as
one timeline; the runner's history holds each review requested and who decided what. How the run
ended is the state's `ending` (`hitl_graphs.endings.outcome` reads it for every template), and
`DURABILITY` beside the factory is how a runner should checkpoint it.

Example:
    >>> from hitl_graphs import Modify, Runner, Workflow
    >>> graph = create_plan_review_graph(lambda ctx: ["look", "fix"], lambda step, ctx: f"did {step}")
    >>> with Runner.open(":memory:", workflows=[Workflow("fix", graph)]) as runner:
    ...     paused = runner.start("fix", {"task": "the build is red"})
    ...     print(paused.reviews[0].payload["numbered"])
    ...     done = runner.resume(paused.thread_id, Modify(patch={"plan": ["fix", "test"]}, actor="ana"))
    ...     print([r["step"] for r in done.state["results"]], done.outcome)
    ['1. look', '2. fix']
    ['fix', 'test'] completed
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Durability
from pydantic import JsonValue

from hitl_graphs.decisions import Approve, Decision, DecisionKind, Modify, Reject
from hitl_graphs.effects import record_event, run_once
from hitl_graphs.endings import outcome, thread_outcome
from hitl_graphs.errors import ConfigError, InvalidDecisionError
from hitl_graphs.gate import check_default, request_review, to_json
from hitl_graphs.reviews import Outcome
from hitl_graphs.templates._plan_state import (
    Executor,
    PlanContext,
    Planner,
    PlanProposal,
    PlanState,
    PlanStatus,
    PlanVersion,
    ReviewHook,
    StepResult,
)
from hitl_graphs.templates._steps import (
    Stopped,
    ask,
    check_step,
    ended,
    ended_by,
    is_chat_model,
    numbered,
    parse_steps,
    short,
    thread_id,
)

__all__ = [
    "DURABILITY",
    "EXECUTOR_PROMPT",
    "Executor",
    "PLANNER_PROMPT",
    "PlanContext",
    "PlanProposal",
    "PlanState",
    "PlanStatus",
    "PlanVersion",
    "Planner",
    "ReviewHook",
    "StepResult",
    "create_plan_review_graph",
    "plan_memory",
    "plan_outcome",
]

_DECISIONS: tuple[DecisionKind, ...] = ("approve", "modify", "reject")

PLANNER_PROMPT = (
    "You plan how to carry out a task. Reply with the plan only: numbered lines, one step per line "
    "(1. ..., 2. ...). A person reviews the plan before any step runs."
)
EXECUTOR_PROMPT = "You carry out one step of an approved plan at a time. Reply with the step's result only."

DURABILITY: Durability = "exit"
"""How a runner should checkpoint this graph: `Workflow(..., durability=plan_review.DURABILITY)`.

Once per run, where it stops, together with the ledger's record of the pause. Safe here because
every step runs through `run_once`: after a crash `recover` replays the stretch since the last
pause with the recorded decision, and a step that already ran returns its recorded result."""


class _Decided(TypedDict):
    """The fields of a `PlanVersion` every decision sets (typed, so a merged version stays one)."""

    decided_by: str | None
    comment: str | None


def create_plan_review_graph(
    planner: BaseChatModel | Planner,
    executor: BaseChatModel | Executor,
    *,
    planning_interval: int | None = None,
    on_review: ReviewHook | None = None,
    timeout: float | timedelta | None = None,
    default: Decision | None = None,
) -> StateGraph[PlanState]:
    """Build the plan-review graph: plan, pause for review before anything runs, execute the steps.

    Give it to `Workflow(...)` (the runner compiles it with its checkpointer), compile it yourself,
    or add the compiled graph as a node of a larger graph whose state has the same keys.

    Args:
        planner: A chat model (asked for numbered lines) or a callable returning the steps.
        executor: A chat model (asked for each step's result) or a callable `(step, context)`.
        planning_interval: Re-plan after every this many executed steps (smolagents'
            `planning_interval`); each update is reviewed before it runs. `None`: plan once.
        on_review: Called once per plan about to be reviewed, with a `PlanProposal` (to notify a
            person, as smolagents' `step_callbacks` are used). It runs at the end of the planning
            step, which a resume never re-runs; a crash between it and the pause (or `recover`)
            may call it twice, never zero times. An exception it raises fails the run.
        timeout: Seconds (or a `timedelta`) after which each review this graph raises expires and
            `default` applies (`hitl sweep` / `Runner.sweep()` applies it; AgentScope's "proceed
            with the default after N seconds"). None: reviews wait for a person.
        default: The decision at the deadline: `Reject` (the default: nothing runs, fail closed)
            or `Approve` (the plan runs as proposed).

    Raises:
        ConfigError: a step is neither a chat model nor a sync callable, `planning_interval < 1`,
            or a `default` a plan review cannot take.

    Example:
        >>> graph = create_plan_review_graph(lambda ctx: ["a", "b"], lambda step, ctx: step.upper(),
        ...                                  planning_interval=1, timeout=timedelta(hours=4), default=Approve())
        >>> sorted(graph.nodes)
        ['execute', 'plan', 'review_plan']
    """
    check_step(planner, "planner")
    check_step(executor, "executor")
    if planning_interval is not None and planning_interval < 1:
        raise ConfigError(f"planning_interval must be at least 1 (or None to plan once), got {planning_interval}")
    check_default(default, _DECISIONS)
    write_plan = _model_planner(planner) if is_chat_model(planner) else planner
    run_step = _model_executor(executor) if is_chat_model(executor) else executor

    def plan(state: PlanState, config: RunnableConfig) -> PlanState:
        versions = list(state.get("plan_versions") or [])
        done = list(state.get("results") or [])
        remaining = list(state.get("plan") or [])[state.get("next_step", 0):]
        context = PlanContext(task=state.get("task", ""), plan=tuple(remaining), done=tuple(done), versions=tuple(versions))
        steps = _steps_of(write_plan(context))
        proposal = PlanVersion(version=len(versions) + 1, steps=steps, author="planner", after_step=len(done),
                               status="proposed", decided_by=None, comment=None, reason=None)
        if on_review is not None:
            on_review(PlanProposal(thread_id=thread_id(config), key=_key(proposal), task=context.task,
                                   version=proposal["version"], plan=tuple(steps), done=len(done)))
        return {"plan": steps, "next_step": 0, "plan_versions": [*versions, proposal]}

    def review_plan(state: PlanState) -> Command[str]:
        versions = list(state["plan_versions"])
        proposal = versions[-1]
        done = state.get("results") or []
        # what ran since the person last looked (under the plan reviewed before this one), not
        # every result so far: the payload is stored with each review and would grow with the run
        since = versions[-2]["after_step"] if len(versions) > 1 else 0
        decision = request_review(
            "plan",
            {"task": state.get("task", ""), "version": proposal["version"], "plan": proposal["steps"],
             "numbered": numbered(proposal["steps"]), "done": done[since:], "done_count": len(done)},
            title=f"Plan v{proposal['version']} ({_count(len(proposal['steps']), 'step')}"
                  f"{f', {len(done)} done' if done else ''}) for: {short(state.get('task', ''))}",
            allowed=_DECISIONS,
            editable=("plan",),
            key=_key(proposal),
            timeout=timeout,
            default=default,
        )
        decided: _Decided = {"decided_by": decision.actor, "comment": decision.comment}
        match decision:
            case Approve():
                versions[-1] = {**proposal, **decided, "status": "approved"}
                steps = proposal["steps"]
            case Modify(patch=patch):
                # the runner has written the validated patch into the state; a graph resumed
                # without it gets the patch here
                steps = list(patch.get("plan", state.get("plan") or []))
                versions[-1] = {**proposal, **decided, "status": "edited"}
                versions.append(PlanVersion(version=proposal["version"] + 1, steps=steps,
                                            author=decision.actor or "reviewer", after_step=proposal["after_step"],
                                            status="approved", decided_by=decision.actor, comment=decision.comment,
                                            reason=None))
            case Reject(reason=reason):
                versions[-1] = {**proposal, **decided, "status": "rejected", "reason": reason}
                at = f"plan v{proposal['version']}"
                stopped = Stopped(at=at, by=decision.actor, reason=reason)
                return Command(goto=END, update={"plan_versions": versions, "stopped": stopped,
                                                 "ending": ended_by(decision, at=at)})
            case _:  # request_review refuses kinds not allowed
                raise InvalidDecisionError(f"a plan review cannot take {decision.kind!r}")
        update: PlanState = {"plan": steps, "next_step": 0, "plan_versions": versions}
        if not steps:  # an approved (or edited) empty plan: nothing to run, the work is done
            update["ending"] = ended_by(decision, at=f"plan v{versions[-1]['version']}")
        return Command(goto="execute" if steps else END, update=update)

    def execute(state: PlanState) -> PlanState:
        steps = state["plan"]
        position = state.get("next_step", 0)
        done = list(state.get("results") or [])
        versions = state["plan_versions"]
        context = PlanContext(task=state.get("task", ""), plan=tuple(steps), done=tuple(done), versions=tuple(versions))
        # run_once: a crash after the step ran but before the checkpoint does not run it again
        result = run_once(f"step-{len(done) + 1}", run_step, steps[position], context)
        entry = StepResult(index=len(done) + 1, step=steps[position], result=result,
                           plan_version=versions[-1]["version"])
        record_event("step_executed", dict(entry))
        update: PlanState = {"results": [*done, entry], "next_step": position + 1}
        if position + 1 >= len(steps):  # the last step: `after_step` ends the graph
            update["ending"] = ended("completed", at=f"plan v{versions[-1]['version']}", by=versions[-1]["decided_by"])
        return update

    def after_step(state: PlanState) -> str:
        position = state["next_step"]
        if position >= len(state["plan"]):
            return END
        if planning_interval is not None and position % planning_interval == 0:
            return "plan"
        return "execute"

    graph = StateGraph(PlanState)
    graph.add_node("plan", plan)
    graph.add_node("review_plan", review_plan, destinations=("execute", END))
    graph.add_node("execute", execute)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "review_plan")
    graph.add_conditional_edges("execute", after_step, ["execute", "plan", END])
    return graph


def plan_outcome(state: Mapping[str, Any]) -> Outcome:
    """How a plan-review thread ended, as `Workflow(outcome=...)` reads it: `rejected` once a
    person (or a deadline) rejected a plan, else `completed`.

    Kept for code that passes it; the runner reads the graph's `ending` record by itself, so a
    plain `Workflow` says the same. `hitl_graphs.endings.outcome` gives the whole record.

    Example:
        >>> plan_outcome({"stopped": {"at": "plan v1", "by": "ana", "reason": "no"}}), plan_outcome({})
        ('rejected', 'completed')
    """
    if (ending := outcome(state)) is not None:
        return thread_outcome(ending)
    return "rejected" if state.get("stopped") else "completed"  # a state from before `ending`


def plan_memory(state: PlanState | dict[str, Any]) -> list[dict[str, JsonValue]]:
    """The thread's memory as one timeline, as smolagents' `agent.memory.steps` shows it.

    Entries in order, each with a `type`: `task`, then each `plan` version (with who wrote it and
    who approved, edited or rejected it) followed by the `step`s run from it, and `stopped` if a
    person rejected a plan. Pass `runner.show(thread_id).state` (or a graph's state values).

    Example:
        >>> state = {"task": "t", "plan_versions": [
        ...     {"version": 1, "steps": ["a"], "author": "planner", "after_step": 0, "status": "approved",
        ...      "decided_by": "ana", "comment": None, "reason": None}],
        ...     "results": [{"index": 1, "step": "a", "result": "ok", "plan_version": 1}]}
        >>> [(e["type"], e.get("version") or e.get("step") or e.get("task")) for e in plan_memory(state)]
        [('task', 't'), ('plan', 1), ('step', 'a')]
    """
    timeline: list[dict[str, JsonValue]] = [{"type": "task", "task": state.get("task", "")}]
    results = list(state.get("results") or [])
    for version in state.get("plan_versions") or []:
        # a version written after k steps comes after the k-th step
        while results and results[0]["index"] <= version["after_step"]:
            timeline.append({"type": "step", **to_json(results.pop(0))})
        timeline.append({"type": "plan", **to_json(version)})
    timeline.extend({"type": "step", **to_json(r)} for r in results)
    if stopped := state.get("stopped"):
        timeline.append({"type": "stopped", **to_json(stopped)})
    return timeline


# -- chat models as planner and executor ---------------------------------------------------------


def _model_planner(model: BaseChatModel) -> Planner:
    """Ask `model` for numbered lines. Earlier plans are its own turns in the conversation, so it
    updates rather than restarts (and a scripted model gives its n-th reply to the n-th plan)."""

    def planner(context: PlanContext) -> list[str]:
        return parse_steps(ask(model, _planner_messages(context)))

    return planner


def _planner_messages(context: PlanContext) -> list[BaseMessage]:
    """The conversation a chat-model planner is asked: the task, its earlier plans, what became of
    them and what ran, then (when re-planning) the remaining steps to update."""
    messages: list[BaseMessage] = [SystemMessage(PLANNER_PROMPT), HumanMessage(f"Task: {context.task}\nWrite the plan.")]
    versions = list(context.versions)
    mine = [i for i, v in enumerate(versions) if v["author"] == "planner"]
    for i in mine:
        version = versions[i]
        messages.append(AIMessage("\n".join(numbered(version["steps"]))))
        in_force = version["version"]
        notes = []
        if version["status"] == "edited" and i + 1 < len(versions):
            in_force = versions[i + 1]["version"]
            notes.append("A person edited the plan to:\n" + "\n".join(numbered(versions[i + 1]["steps"])))
        elif version["status"] == "approved":
            notes.append("A person approved the plan.")
        ran = [r for r in context.done if r["plan_version"] == in_force]
        if ran:
            notes.append("Executed:\n" + "\n".join(f"{r['index']}. {r['step']} -> {r['result']}" for r in ran))
        if i == mine[-1]:
            notes.append("Remaining plan:\n" + ("\n".join(numbered(context.plan)) or "(none)")
                         + "\nUpdate the remaining plan: reply with the steps still to do, as numbered lines.")
        messages.append(HumanMessage("\n\n".join(notes)))
    return messages


def _model_executor(model: BaseChatModel) -> Executor:
    """Ask `model` for one step's result; earlier steps and their results are its memory."""

    def executor(step: str, context: PlanContext) -> str:
        messages: list[BaseMessage] = [SystemMessage(EXECUTOR_PROMPT)]
        for i, done in enumerate(context.done):
            intro = f"Task: {context.task}\n\n" if i == 0 else ""
            messages += [HumanMessage(f"{intro}Step {done['index']}: {done['step']}"), AIMessage(str(done["result"]))]
        intro = f"Task: {context.task}\n\n" if not context.done else ""
        messages.append(HumanMessage(f"{intro}Step {len(context.done) + 1}: {step}"))
        return ask(model, messages)

    return executor


def _steps_of(steps: Sequence[str]) -> list[str]:
    if isinstance(steps, str):
        raise ConfigError("the planner returned a string; return a list of steps (a chat model's reply is parsed for you)")
    return [str(step) for step in steps]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _key(version: PlanVersion) -> str:
    return f"plan-v{version['version']}"

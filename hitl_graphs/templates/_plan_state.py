"""What flows through a plan review: the plan's versions, the executed steps, the graph's state,
and what a planner, an executor and an `on_review` hook are given.

The data half of `hitl_graphs.templates.plan_review`, which wires it into a graph and re-exports
the public names from here; import them from there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict

from pydantic import BaseModel, ConfigDict

from hitl_graphs.endings import Ending
from hitl_graphs.templates._steps import Stopped

PlanStatus = Literal["proposed", "approved", "edited", "rejected"]


class PlanVersion(TypedDict):
    """One version of the plan: what the planner (or a person) wrote and what became of it."""

    version: int
    steps: list[str]
    author: str
    """`planner`, or the person who edited the previous version into this one."""
    after_step: int
    """How many steps had run when this version was written (0: the first plan)."""
    status: PlanStatus
    decided_by: str | None
    comment: str | None
    reason: str | None


class StepResult(TypedDict):
    """One executed step, in the order steps ran."""

    index: int
    """1-based position among all executed steps of the thread."""
    step: str
    result: Any
    plan_version: int
    """The plan version the step was run from."""


class PlanState(TypedDict, total=False):
    """The plan-review graph's state. A person edits `plan` only."""

    task: str
    plan: list[str]
    """The plan under review, then being executed: the steps still to run when it was approved."""
    next_step: int
    """How many steps of `plan` have run."""
    results: list[StepResult]
    plan_versions: list[PlanVersion]
    stopped: Stopped | None
    """Where, who and why a person rejected a plan (kept for code that reads it; see `ending`)."""
    ending: Ending | None
    """How the run ended (`hitl_graphs.endings`): completed, rejected or expired, at `plan vN`."""


@dataclass(frozen=True, slots=True)
class PlanContext:
    """What a planner or an executor is told.

    Attributes:
        task: The task the plan is for.
        plan: For the planner, the steps not yet run (for the first plan: a `plan` given in the
            input, else empty); for the executor, the approved plan being run.
        done: The steps executed so far, with their results.
        versions: Every plan version so far (a chat-model planner replays them as its memory).

    Example:
        >>> def executor(step: str, context: PlanContext) -> str:
        ...     return f"{step}: done ({len(context.done)} before)"
        >>> executor("check logs", PlanContext(task="fix CI", plan=("check logs",)))
        'check logs: done (0 before)'
    """

    task: str
    plan: tuple[str, ...] = ()
    done: tuple[StepResult, ...] = ()
    versions: tuple[PlanVersion, ...] = ()


class Planner(Protocol):
    """Writes the plan: the steps still to do, in order."""

    def __call__(self, context: PlanContext, /) -> Sequence[str]: ...


class Executor(Protocol):
    """Runs one step and returns its result (anything JSON can hold)."""

    def __call__(self, step: str, context: PlanContext, /) -> Any: ...


class PlanProposal(BaseModel):
    """What `on_review` is told when a plan is about to be reviewed (e.g. to notify someone).

    Attributes:
        thread_id: The thread that will pause (None outside a checkpointed run).
        key: The review's key: `hitl approve THREAD --review plan-v1` addresses it.
        task: The task.
        version: The plan version under review.
        plan: Its steps.
        done: How many steps have run so far.

    Example:
        >>> def notify(proposal: PlanProposal) -> None:
        ...     print(f"plan v{proposal.version} for {proposal.task!r} waits: hitl approve {proposal.thread_id}")
        >>> notify(PlanProposal(thread_id="t1", key="plan-v1", task="fix CI", version=1, plan=("a",), done=0))
        plan v1 for 'fix CI' waits: hitl approve t1
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    thread_id: str | None
    key: str
    task: str
    version: int
    plan: tuple[str, ...]
    done: int


ReviewHook = Callable[[PlanProposal], None]

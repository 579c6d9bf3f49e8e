"""Workflows by name, so a process that never saw a thread can rebuild its graph and resume it.

A thread's checkpoints hold its state, not its code. The ledger records which workflow a thread
runs; any process that registers the same name (the CLI with `--app`, a web worker, a cron job)
can show and resume it.

Example:
    >>> from langgraph.graph import StateGraph
    >>> from typing import TypedDict
    >>> class S(TypedDict):
    ...     n: int
    >>> g = StateGraph(S)
    >>> _ = g.add_node("inc", lambda s: {"n": s["n"] + 1})
    >>> _ = g.set_entry_point("inc")
    >>> wf = register(Workflow("counter", g), replace=True)
    >>> get_workflow("counter").name
    'counter'
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Durability
from pydantic import BaseModel

from hitl_graphs.decisions import Decision
from hitl_graphs.errors import ConfigError, UnknownWorkflowError
from hitl_graphs.reviews import Outcome


class CheckpointerReplacedWarning(UserWarning):
    """A workflow's graph came compiled with a checkpointer of its own, and the runner runs it on
    the runner's saver instead (the ledger must share the checkpoints' database)."""


@dataclass(frozen=True)
class Workflow:
    """A named graph the runner can start and resume.

    Args:
        name: The name threads are recorded under (`hitl run NAME`).
        graph: A `StateGraph` (compiled by the runner with its checkpointer), a compiled graph
            (its `interrupt_before`/`interrupt_after` are kept; a checkpointer it was compiled
            with is replaced by the runner's, with a `CheckpointerReplacedWarning`), or a
            zero-argument factory returning either.
        description: One line for `hitl workflows`.
        editable: State fields a `Modify` may patch at static breakpoints and at plain
            `interrupt()` calls; `None` allows every field of the state schema.
        on_approve: State patch written when a static-breakpoint review is approved or modified,
            before the graph continues (e.g. `{"approved": True}` for the seed's graphs).
        on_reject: State patch written on reject at a static breakpoint, after which the graph
            continues along its own rejection route. `None`: a reject ends the thread as rejected.
        reason_field: State field that receives `Reject.reason` at a static breakpoint.
        example_input: Input `hitl run` uses when none is given.
        outcome: Reads how a finished thread ended from its final state (`completed`,
            `rejected` or `cancelled`; `None` keeps the default). By default a graph whose state
            declares `ending: Ending` (every template does) ends as that record says
            (`hitl_graphs.endings`), and any other graph that ends right after a reject is
            `rejected`, else `completed`; a reading of your own goes here.
        durability: How often its runs checkpoint (LangGraph's setting). `"exit"`: once, where a
            run stops, committed together with the ledger's record of the pause: the fast choice,
            and safe when every side effect after a review goes through `run_once` (a crash makes
            `recover` run the stretch since the last pause again). `"sync"` / `"async"`: after
            every step too. `None`: the runner's setting (LangGraph's default, `"async"`, unless
            the runner was given one). Each template declares its own beside its factory
            (`plan_review.DURABILITY`, ...), which the built-in workflows pass.
        serde_types: Classes the graph's state may hold that its state schema does not name
            (checkpoints load only the types they are allowed to; see `hitl_graphs.serde`).
        patch_model: A pydantic model of what the nodes need of the state after a person's
            `Modify`: its fields are state keys, and the state with the patch applied must
            validate against it (constraints, nested models, rules across fields), or the patch
            is refused before the decision is recorded. For graphs whose state types are looser
            than their nodes (`proposed_action: dict` read as `action` and `target`), at static
            breakpoints and plain `interrupt()` calls above all (see `hitl_graphs.patches`).

        resume_value: How a decision becomes the value a plain `interrupt()` of the graph returns
            (one the toolkit did not raise: `request_review` always gets the decision). By
            default the decision as JSON, a `DecisionDict` (`{"kind": "approve", ...}`); a graph
            written for plain LangGraph often expects its own shape, e.g.
            `resume_value=lambda d: {"approved": d.kind == "approve"}`. Return JSON-native data
            (checkpoints store it). Called before the decision is recorded, so one it raises on is
            refused; a graph that still raises on the value gets its decision released
            (`ResumeRefusedError`: the review waits again), never a thread stuck with it.

    Example:
        >>> from hitl_graphs.examples.basics import approval_graph
        >>> wf = Workflow("deploy", lambda: approval_graph().compile(interrupt_before=["execute"]),
        ...               on_approve={"approved": True}, on_reject={"approved": False})
        >>> wf.name
        'deploy'
    """

    name: str
    graph: Any
    description: str = ""
    editable: Sequence[str] | None = None
    on_approve: Mapping[str, Any] = field(default_factory=dict)
    on_reject: Mapping[str, Any] | None = None
    reason_field: str | None = None
    example_input: Mapping[str, Any] | None = None
    outcome: Callable[[Mapping[str, Any]], Outcome | None] | None = None
    durability: Durability | None = None
    serde_types: Sequence[type] = ()
    patch_model: type[BaseModel] | None = None
    resume_value: Callable[[Decision], Any] | None = None

    def __post_init__(self) -> None:
        if self.patch_model is not None and not (isinstance(self.patch_model, type) and issubclass(self.patch_model, BaseModel)):
            raise ConfigError(
                f"workflow {self.name!r}: patch_model must be a pydantic model class (a BaseModel subclass), "
                f"got {self.patch_model!r}"
            )

    def compile(self, checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
        """The graph bound to `checkpointer`, keeping its breakpoints."""
        graph = self.graph() if callable(self.graph) and not isinstance(self.graph, StateGraph | CompiledStateGraph) else self.graph
        if isinstance(graph, StateGraph):
            return graph.compile(checkpointer=checkpointer)
        if isinstance(graph, CompiledStateGraph):
            theirs = graph.checkpointer
            if isinstance(theirs, BaseCheckpointSaver) and theirs is not checkpointer:
                warnings.warn(CheckpointerReplacedWarning(
                    f"workflow {self.name!r}: its graph was compiled with checkpointer={type(theirs).__name__}, which "
                    f"the runner replaces with its own {type(checkpointer).__name__} on the runner's database (the ledger "
                    "sits beside the checkpoints, in one transaction). Threads your saver already holds in a SQLite "
                    "file: open that file (`Runner.open(path)`) and `runner.adopt` them. Compile the graph without a "
                    "checkpointer to silence this."), stacklevel=3)
            return graph.copy(update={"checkpointer": checkpointer})
        raise ConfigError(
            f"workflow {self.name!r}: graph must be a StateGraph, a compiled StateGraph or a factory of one, "
            f"got {type(graph).__name__}"
        )


_REGISTRY: dict[str, Workflow] = {}


def register(workflow: Workflow, *, replace: bool = False) -> Workflow:
    """Make a workflow available by name to runners and the CLI.

    Example:
        >>> from hitl_graphs.examples.basics import email_graph
        >>> register(Workflow("mail", email_graph), replace=True).name
        'mail'

    Raises:
        ConfigError: the name is taken and `replace` is false.
    """
    if workflow.name in _REGISTRY and not replace and _REGISTRY[workflow.name] is not workflow:
        raise ConfigError(f"a workflow named {workflow.name!r} is already registered; pass replace=True")
    _REGISTRY[workflow.name] = workflow
    return workflow


def get_workflow(name: str) -> Workflow:
    """The registered workflow called `name`.

    Example:
        >>> get_workflow("counter").name
        'counter'

    Raises:
        UnknownWorkflowError: naming the registered workflows.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise UnknownWorkflowError(
            f"no workflow named {name!r}; registered: {known} (load yours with --app MODULE)"
        ) from None


def registered() -> dict[str, Workflow]:
    """A copy of the registry: name -> workflow (only what was registered: the library registers
    nothing by itself; the CLI registers the demo workflows, `hitl_graphs.examples`).

    Example:
        >>> "counter" in registered()
        True"""
    return dict(_REGISTRY)


def load_app(module: str) -> None:
    """Import a user's module so its `register(...)` calls run (the CLI's `--app`).

    The working directory is searched first, as `python -m` and uvicorn do: an installed `hitl`
    script starts with its own folder on `sys.path`, not the user's project, so without this
    `hitl --app mymodule` would need `PYTHONPATH=.`.

    Example::

        load_app("myapp.workflows")   # myapp/workflows.py calls register(Workflow(...))

    Raises:
        ConfigError: the module cannot be imported.
    """
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"cannot import --app module {module!r}: {exc}") from None

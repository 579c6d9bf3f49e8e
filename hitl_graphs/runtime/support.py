"""Small pieces the flows share: a run's config, the thread view, schema fields.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig

from hitl_graphs.effects import CONFIG_KEY as EFFECTS_KEY
from hitl_graphs.effects import EffectLog
from hitl_graphs.endings import declares_ending, outcome, thread_outcome
from hitl_graphs.gate import to_json
from hitl_graphs.interop import langchain_agents
from hitl_graphs.storage.base import ReviewRow, ThreadRow
from hitl_graphs.patches import state_fields
from hitl_graphs.reviews import Outcome, ReviewRequest, ThreadView
from hitl_graphs.runtime.driver import Graph as Graph  # re-exported: the flows import it from here
from hitl_graphs.storage.base import DEFER_KEY, WRITTEN_KEY

log = logging.getLogger("hitl_graphs")


def thread_view(row: ThreadRow, values: Any, pending: Sequence[ReviewRequest], decided: Sequence[str]) -> ThreadView:
    values = to_json(values)
    decided = [d for d in decided if d not in waiting_for_batch(pending)]  # kept for the batch, not lost in a crash
    return ThreadView(
        thread_id=row.thread_id,
        workflow=row.workflow,
        status=row.status,
        outcome=row.outcome,
        reviews=tuple(pending),
        state=values if isinstance(values, dict) else {"value": values},
        error=row.error,
        awaiting_recovery=tuple(decided) if row.status != "running" else (),
    )


def waiting_for_batch(pending: Sequence[ReviewRequest]) -> set[str]:
    """Review ids of every action of a LangChain middleware batch that still has a pending review:
    those already decided wait for the rest (the thread resumes once all are), not for `recover`."""
    return {langchain_agents.batch_review_id(m.interrupt_id, i)
            for r in pending if (m := r.middleware) is not None and m.mode == "batched" for i in range(m.size)}


def outcome_of(review: ReviewRow) -> Outcome:
    return "rejected" if review.decision and review.decision.get("kind") == "reject" else "completed"


def ending_outcome(graph: Graph, values: dict[str, Any]) -> Outcome | None:
    """The outcome a finished run's ending record stands for, if its graph declares one (every
    template does), so a template ends the same through any `Workflow`."""
    if not declares_ending(getattr(getattr(graph, "builder", None), "state_schema", None)):
        return None
    ending = outcome(values)
    return thread_outcome(ending) if ending is not None else None


def run_config(thread_id: str, effects: EffectLog | None = None, *, defer: bool = False,
               written: list[str] | None = None) -> RunnableConfig:
    """A run's config; `written` collects the ids of the top-level checkpoints the run writes (`WRITTEN_KEY`)."""
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if written is not None:
        configurable[WRITTEN_KEY] = written
    if effects is not None:
        configurable[EFFECTS_KEY] = effects
    if defer:  # the run's checkpoint joins the ledger's commit of where it stopped
        configurable[DEFER_KEY] = True
    return {"configurable": configurable}


def node_names(nodes: Any) -> tuple[str, ...]:
    if nodes == "*" or nodes is None:
        return () if nodes is None else ("*",)
    return tuple(nodes)


def schema_fields(graph: Graph) -> tuple[str, ...]:
    schema = getattr(getattr(graph, "builder", None), "state_schema", None)
    return _fields_of(schema) if schema is not None else ()


@functools.lru_cache(maxsize=128)
def agent_tool_schemas(graph: Graph) -> dict[str, dict[str, Any]]:
    """The argument schemas of the tools a (LangChain agent) graph runs; cached, as the runner
    keeps one compiled graph per workflow."""
    return langchain_agents.tool_schemas(graph)


@functools.lru_cache(maxsize=128)
def _fields_of(schema: type) -> tuple[str, ...]:
    # get_type_hints costs ~0.15 ms; a state schema does not change while the process runs
    return tuple(state_fields(schema))



"""Run an approved side effect once, even when LangGraph runs its node again.

LangGraph re-runs a whole node when a thread resumes, and after a crash it re-runs the step
that was interrupted. A payment made in such a node would be made twice. `run_once` records
the effect's result in the store (same database, committed before it returns) under the
thread, the task and a name, and on re-execution returns the recorded result instead of running
the effect again.

One window remains, as with any exactly-once scheme against an outside system: a crash after the
effect happened but before its result was committed. Pass `effect_key(name)` to the outside
system as an idempotency key (payment providers accept one) to close it.

Example::

    def pay_node(state):
        receipt = run_once("charge", charge_card, state["card"], state["amount"])
        return {"receipt": receipt}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.config import get_config

from hitl_graphs.gate import to_json
from hitl_graphs.storage.base import EffectStore


CONFIG_KEY = "hitl_effects"


EffectLog = EffectStore
"""The old name of `EffectStore`, kept for imports from before the storage boundary."""


def effect_key(name: str) -> str:
    """A key unique to this effect in this thread, node, graph step and task: the same when the
    node runs again (a resume, or a run done again after a crash).

    LangGraph's task ids are not used: they derive from the checkpoint a step started from,
    which a run with `durability="exit"` does not keep, so a run done again gets new ones. The
    step number and the task's path do not change. (Inside a subgraph, the enclosing nodes' names
    count, not their steps: give effects of a subgraph run several times distinct names.)

    Example::

        charge_card(card, amount, idempotency_key=effect_key("charge"))"""
    config = get_config()
    configurable = config.get("configurable", {})
    metadata = config.get("metadata", {})
    nodes = "/".join(part.split(":", 1)[0] for part in str(configurable.get("checkpoint_ns", "")).split("|") if part)
    path = ",".join(str(p) for p in metadata.get("langgraph_path", ()) if isinstance(p, str | int))
    return f"{configurable.get('thread_id')}|{nodes}|{metadata.get('langgraph_step', '')}|{path}|{name}"


def run_once(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call `fn(*args, **kwargs)` unless this node already did so for `name`; return its result.

    The result is stored as JSON and returned in its JSON form both times, so the first run and
    a replay see the same value. Use a distinct `name` per effect within a node. Outside a
    hitl Runner (no ledger in the config) the effect simply runs.

    Example::

        def pay(state):
            receipt = run_once("charge", charge_card, state["card"], state["amount"])
            return {"receipt": receipt}
    """
    config = get_config()
    log: EffectStore | None = config.get("configurable", {}).get(CONFIG_KEY)
    if log is None:
        return to_json(fn(*args, **kwargs))
    thread_id = config["configurable"]["thread_id"]
    key = effect_key(name)
    found, result = log.get(thread_id, key)
    if found:
        return result
    result = to_json(fn(*args, **kwargs))
    log.put(thread_id, key, result)
    return result


def approved_before(tool: str) -> bool:
    """Inside a node: whether a person approved `tool` before in this workflow for the thread's
    actor (`AskOncePolicy(scope="workflow")`). False outside a hitl Runner."""
    config = get_config()
    log: EffectStore | None = config.get("configurable", {}).get(CONFIG_KEY)
    return log is not None and log.remembered(config["configurable"]["thread_id"], tool)


def remember_approval(tool: str, approved_by: str | None) -> None:
    """Inside a node: remember that a person approved `tool`, for the workflow and the thread's actor."""
    config = get_config()
    log: EffectStore | None = config.get("configurable", {}).get(CONFIG_KEY)
    if log is not None:
        log.remember(config["configurable"]["thread_id"], tool, approved_by)


def record_event(event: str, data: dict[str, Any], *, name: str | None = None) -> None:
    """Add an entry to the thread's history (and audit log) from inside a node, once.

    What a node did (a plan step executed, a phase's output) shows in `hitl history` next to the
    reviews and decisions. Re-running the node (resume, crash recovery) does not add it twice.
    Outside a hitl Runner it does nothing.

    Example::

        def deploy(state):
            url = run_once("deploy", push_release, state["version"])
            record_event("deployed", {"version": state["version"], "url": url})
            return {"url": url}
    """
    config = get_config()
    log: EffectStore | None = config.get("configurable", {}).get(CONFIG_KEY)
    if log is None:
        return
    log.record_once(config["configurable"]["thread_id"], "event|" + effect_key(name or event), event, to_json(data))

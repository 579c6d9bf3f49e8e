"""Run an approved side effect once, even when LangGraph runs its node again.

LangGraph re-runs a whole node when a thread resumes, and after a crash it re-runs the step
that was interrupted. A payment made in such a node would be made twice. `run_once` records
the effect's result in the ledger (same database, committed before it returns) under the
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

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

from langgraph.config import get_config

from hitl_graphs import audit
from hitl_graphs.gate import to_json
from hitl_graphs.store import pending_rows, write_transaction

SCHEMA = """
CREATE TABLE IF NOT EXISTS hitl_effects (
    thread_id TEXT NOT NULL,
    key       TEXT NOT NULL,
    result    TEXT NOT NULL,
    at        REAL NOT NULL,
    PRIMARY KEY (thread_id, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hitl_remembered (
    workflow    TEXT NOT NULL,
    actor       TEXT NOT NULL,
    tool        TEXT NOT NULL,
    approved_by TEXT,
    at          REAL NOT NULL,
    PRIMARY KEY (workflow, actor, tool)
) WITHOUT ROWID;
"""

CONFIG_KEY = "hitl_effects"


class EffectLog:
    """The ledger table of recorded effect results; the runner passes it to graphs it runs."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        self.conn = conn
        self.lock = lock
        self._events = _history_buffer(conn)

    def get(self, thread_id: str, key: str) -> tuple[bool, Any]:
        with self.lock:
            row = self.conn.execute("SELECT result FROM hitl_effects WHERE thread_id = ? AND key = ?", (thread_id, key)).fetchone()
        return (True, json.loads(row[0])) if row else (False, None)

    def record_once(self, thread_id: str, key: str, event: str, data: dict[str, Any]) -> None:
        """Append `event` to the thread's audit history unless `key` was recorded before.

        It joins the next transaction on the connection (the task's writes, the next effect, or
        the ledger's record of where the run stopped) instead of costing a commit of its own.
        """
        self._events.add(thread_id, key, event, data)

    def remembered(self, thread_id: str, tool: str) -> bool:
        """Whether a person approved `tool` before in this thread's workflow, for its actor."""
        with self.lock:
            row = self.conn.execute(
                "SELECT 1 FROM hitl_threads t JOIN hitl_remembered r ON r.workflow = t.workflow AND r.actor = t.started_by "
                "WHERE t.thread_id = ? AND r.tool = ?", (thread_id, tool)).fetchone()
        return row is not None

    def remember(self, thread_id: str, tool: str, approved_by: str | None) -> bool:
        """Remember an approval of `tool` for the thread's workflow and actor; False if the thread
        has no actor (nothing to remember it for)."""
        with write_transaction(self.conn, self.lock) as c:
            added = c.execute(
                "INSERT OR IGNORE INTO hitl_remembered (workflow, actor, tool, approved_by, at) "
                "SELECT workflow, started_by, ?, ?, ? FROM hitl_threads WHERE thread_id = ? AND started_by IS NOT NULL",
                (tool, approved_by, time.time(), thread_id)).rowcount
        return bool(added)

    def put(self, thread_id: str, key: str, result: Any) -> None:
        """Record an effect's result; flushed to disk before the node goes on (it happened)."""
        with write_transaction(self.conn, self.lock) as c:
            c.execute("INSERT OR IGNORE INTO hitl_effects VALUES (?, ?, ?, ?)", (thread_id, key, json.dumps(result), time.time()))


def _record(c: sqlite3.Connection, thread_id: str, key: str, event: str, data: dict[str, Any], now: float) -> None:
    added = c.execute("INSERT OR IGNORE INTO hitl_effects VALUES (?, ?, ?, ?)", (thread_id, key, json.dumps(data), now)).rowcount
    if added:
        audit.append(c, thread_id, [audit.Event(event, data=data)], now)


class _HistoryBuffer:
    """History entries waiting for the next transaction on the connection (`PendingRows`)."""

    durable = False  # a crash before they commit re-runs the node that records them

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str], tuple[str, dict[str, Any], float]] = {}

    def add(self, thread_id: str, key: str, event: str, data: dict[str, Any]) -> None:
        with self._lock:
            self._rows.setdefault((thread_id, key), (event, data, time.time()))

    def waiting(self) -> bool:
        return bool(self._rows)

    def write(self, conn: sqlite3.Connection) -> Callable[[bool], None] | None:
        with self._lock:
            if not self._rows:
                return None
            rows, self._rows = self._rows, {}
        for (thread_id, key), (event, data, at) in rows.items():
            _record(conn, thread_id, key, event, data, at)

        def after(committed: bool) -> None:
            if not committed:
                with self._lock:
                    for k, v in rows.items():
                        self._rows.setdefault(k, v)

        return after


def _history_buffer(conn: sqlite3.Connection) -> _HistoryBuffer:
    """The connection's one buffer."""
    pending = pending_rows(conn)
    for rows in pending:
        if isinstance(rows, _HistoryBuffer):
            return rows
    buffer = _HistoryBuffer()
    pending.append(buffer)
    return buffer


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
    log: EffectLog | None = config.get("configurable", {}).get(CONFIG_KEY)
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
    log: EffectLog | None = config.get("configurable", {}).get(CONFIG_KEY)
    return log is not None and log.remembered(config["configurable"]["thread_id"], tool)


def remember_approval(tool: str, approved_by: str | None) -> None:
    """Inside a node: remember that a person approved `tool`, for the workflow and the thread's actor."""
    config = get_config()
    log: EffectLog | None = config.get("configurable", {}).get(CONFIG_KEY)
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
    log: EffectLog | None = config.get("configurable", {}).get(CONFIG_KEY)
    if log is None:
        return
    log.record_once(config["configurable"]["thread_id"], "event|" + effect_key(name or event), event, to_json(data))

"""What a static breakpoint's review shows: what changed since the paused node last ran.

A breakpoint (`interrupt_before` / `interrupt_after`) used to store the whole state in its review
at every pause; in a loop (agent -> tools -> agent, paused before `tools`) the message list grows,
so each pause stored the whole history again and a person re-read all of it to find what is new.
The review now carries only what the paused node has not seen:

    {"changed":   {key: new value, ...},      # keys written since, shown whole
     "appended":  {key: [new items], ...},    # list keys that only grew: the new items alone
     "unchanged": [key, ...],                 # keys the node saw as they are now (names only)
     "next":      [node, ...]}

The first pause before a node that never ran shows every key under `changed` (the whole state, as
before). The whole current state is always one call away (`Runner.show(thread_id).state`, `hitl
show --state`, the web inbox's "Full current state"); reviews stored with the old shape
(`{"state": ..., "next": ...}`) are not rewritten and still display.

**How "not seen" is read from the checkpoint.** LangGraph's `versions_seen[node]` records, each
time a node runs, the versions of the channels that *triggered* it (`branch:to:tools`), not of
every state key it read; so a state key is never in it. But every write of a step gets one new
version, the highest so far plus one: versions are a clock. A node's trigger was written in the
step just before the node ran, so the highest version it has seen is the clock when it started,
and a state key whose version is newer was written after the node read its input (its own output
included). A key can show as changed that the node did see (a `Modify` patch written between the
trigger and the run); never the other way round.

For `interrupt_after` the node has just run, so the same reading gives what that step wrote (the
node's output and its siblings'), which is what a person reviews after a node: what it did.

To show only the new items of a growing list, the value the node saw is needed: the state of the
checkpoint the node started from, the first ancestor whose every version is at or below that
clock (`interrupt_after`: the parent, already read). If the items it had are no longer a prefix
(a reducer removed or replaced one), or that checkpoint is not found within `MAX_HOPS` (durability
`"exit"` skips intermediate checkpoints), the key is shown whole under `changed`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph.checkpoint.base import Checkpoint

from hitl_graphs.gate import to_json

Version = str | int | float
MAX_HOPS = 6
"""How many ancestors a breakpoint pause reads, at most, to find what a list looked like to the node."""

CHANGE_KEYS = ("changed", "appended", "unchanged", "next")


def seen_clock(checkpoint: Checkpoint, nodes: Iterable[str]) -> Version | None:
    """The newest version every node of `nodes` had seen when it last started; None if one never ran."""
    clocks: list[Version] = []
    for node in nodes:
        seen = checkpoint["versions_seen"].get(node)
        if not seen:
            return None
        clocks.append(max(seen.values()))
    return min(clocks) if clocks else None


def unseen_keys(values: Mapping[str, Any], checkpoint: Checkpoint, clock: Version | None) -> list[str]:
    """The state keys written after `clock` (all of them when `clock` is None), in state order."""
    versions = checkpoint["channel_versions"]
    return [k for k in values if clock is None or (k in versions and versions[k] > clock)]  # type: ignore[operator]


def lists_among(values: Mapping[str, Any], keys: Sequence[str]) -> list[str]:
    """The keys whose value is a list: the ones worth reading the earlier state for."""
    return [k for k in keys if isinstance(values.get(k), list)]


def started_from(checkpoint: Checkpoint, clock: Version) -> bool:
    """Whether `checkpoint` is the state a node starting at `clock` read (nothing in it is newer)."""
    return all(v <= clock for v in checkpoint["channel_versions"].values())  # type: ignore[operator]


def changes(values: Mapping[str, Any], next: Sequence[str], unseen: Sequence[str],
            earlier: Mapping[str, Any] | None) -> dict[str, Any]:
    """The review payload: `unseen` keys whole, or only their new items when `earlier` (what the node
    saw) holds a prefix of the list; every other key by name. Values are JSON (`to_json`)."""
    changed: dict[str, Any] = {}
    appended: dict[str, Any] = {}
    for key in unseen:
        value = values[key]
        before = earlier.get(key) if earlier is not None else None
        if isinstance(value, list) and isinstance(before, list) and _starts_with(value, before):
            if len(value) > len(before):  # the same items again: unchanged
                appended[key] = to_json(value[len(before):])
        else:
            changed[key] = to_json(value)
    unchanged = [k for k in values if k not in changed and k not in appended]
    return {"changed": changed, "appended": appended, "unchanged": unchanged, "next": list(next)}


def _starts_with(value: list[Any], prefix: list[Any]) -> bool:
    if len(prefix) > len(value):
        return False
    try:
        return bool(value[: len(prefix)] == prefix)
    except Exception:  # a value whose equality raises is shown whole
        return False


def is_changes(payload: Any) -> bool:
    """Whether a breakpoint payload has this module's shape (older reviews hold `{"state", "next"}`)."""
    return isinstance(payload, dict) and all(k in payload for k in CHANGE_KEYS)

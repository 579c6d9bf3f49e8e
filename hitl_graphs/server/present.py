"""What the web inbox says about a review: its payload in the form a person reads, and where it
stands for this reviewer ("decided by ana 2 minutes ago", "expired", "you lack the role finance").

The same shapes as the terminal's `render.py`: a plan as numbered steps, tool arguments, a
phase's output as text, an escalation's chain, a static breakpoint's changes, else pretty JSON. Pure functions of the review,
the thread's history and the principal, so each page states the same facts the runner enforces.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hitl_graphs.breakpoint_changes import is_changes
from hitl_graphs.identity import Principal
from hitl_graphs.reviews import HistoryEntry, ReviewRequest


def ago(when: datetime | None, now: datetime | None = None) -> str:
    """`2 minutes ago`, `just now`, `in 3 hours` (a deadline)."""
    if when is None:
        return ""
    now = now or datetime.now(UTC)
    seconds = (now - (when if when.tzinfo else when.replace(tzinfo=UTC))).total_seconds()
    future, seconds = seconds < 0, abs(seconds)
    if seconds < 45:
        return "just now" if not future else "in a few seconds"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size or unit == "minute":
            n = max(1, round(seconds / size))
            text = f"{n} {unit}{'s' if n != 1 else ''}"
            return f"in {text}" if future else f"{text} ago"
    raise AssertionError("unreachable")


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def payload_view(kind: str, payload: Any, node: str = "") -> dict[str, Any]:
    """The payload as the review page shows it: `shape` picks the template block."""
    p = payload if isinstance(payload, dict) else None
    if p is None:
        return {"shape": "json", "json": pretty(payload)}
    if kind == "plan" and isinstance(p.get("plan"), list):
        done = [d.get("step", d) if isinstance(d, dict) else d for d in p.get("done") or []]
        return {"shape": "plan", "task": p.get("task", ""), "steps": [str(s) for s in p["plan"]],
                "done": [str(d) for d in done], "version": p.get("version")}
    if kind == "tool_calls" and "args" in p:
        return {"shape": "tool", "tool": p.get("tool") or p.get("name") or "tool", "level": p.get("level"),
                "description": p.get("description"), "args": pretty(p["args"])}
    if kind == "escalation":
        return {"shape": "escalation", "level": p.get("level"), "reason": p.get("reason"), "task": p.get("task"),
                "output": str(p.get("output", "")), "chain": [e for e in p.get("escalations") or [] if isinstance(e, dict)]}
    if isinstance(p.get("output"), str):
        return {"shape": "text", "label": p.get("phase") or node, "text": p["output"],
                "note": p.get("instructions")}
    if kind == "reply" and "answer" in p:
        return {"shape": "text", "label": "agent", "text": str(p["answer"]), "note": None}
    if kind == "breakpoint" and is_changes(p):
        return {"shape": "changes", "changed": [(str(k), pretty(v)) for k, v in p["changed"].items()],
                "appended": [(str(k), len(v) if isinstance(v, list) else 1, pretty(v)) for k, v in p["appended"].items()],
                "unchanged": [str(k) for k in p["unchanged"]]}
    return {"shape": "json", "json": pretty(payload)}


@dataclass(frozen=True, slots=True)
class Standing:
    """Where a review stands for the person looking: may they decide, and if not, why."""

    may_decide: bool
    state: str
    """`pending`, `decided`, `expired`, `cancelled`, `gone`, `forbidden`."""
    message: str


def started_by(history: Sequence[HistoryEntry]) -> str | None:
    return next((e.actor for e in history if e.event == "started"), None)


def standing(review_id: str, pending: ReviewRequest | None, history: Sequence[HistoryEntry], me: Principal,
             now: datetime | None = None) -> Standing:
    """The banner of a review page, from the same facts the runner checks on a decision."""
    now = now or datetime.now(UTC)
    if pending is not None:
        if pending.deadline is not None and pending.deadline <= now:
            return Standing(False, "expired", f"expired {ago(pending.deadline, now)}: its deadline passed; "
                                              "the default decision applies at the next sweep")
        if pending.required_role and pending.required_role not in me.roles:
            return Standing(False, "forbidden", f"you lack the role {pending.required_role}: someone who holds it "
                                                "must decide (ask for a token with that role)")
        if pending.separation_of_duties and started_by(history) == me.actor:
            return Standing(False, "forbidden", "you started this thread, so someone else must decide "
                                                "(separation of duties)")
        due = f"; it expires {ago(pending.deadline, now)}" if pending.deadline else ""
        return Standing(True, "pending", f"waiting for a decision{due}")
    decided = next((e for e in reversed(history) if e.event == "decided" and e.review_id == review_id), None)
    if decided is not None:
        kind = decided.data.get("kind", "a decision")
        if decided.data.get("by") == "deadline":
            return Standing(False, "expired", f"expired {ago(decided.at, now)}: nobody decided before its deadline, "
                                              f"so its default ({kind}) applied")
        who = "you" if decided.actor == me.actor else decided.actor or "someone"
        return Standing(False, "decided", f"decided by {who} {ago(decided.at, now)}: {kind}")
    if any(e.event == "cancelled" for e in history):
        return Standing(False, "cancelled", "cancelled: the thread was ended without a decision")
    return Standing(False, "gone", "no longer pending")


def requested(review_id: str, history: Sequence[HistoryEntry]) -> HistoryEntry | None:
    """The `review_requested` event of a review (what it showed, once it is no longer pending)."""
    return next((e for e in history if e.event == "review_requested" and e.review_id == review_id), None)

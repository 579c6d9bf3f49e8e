"""How a review looks in a terminal: a plan as numbered steps, tool arguments as highlighted
JSON, a phase's output as text, an escalation with its history, a static breakpoint as what
changed since the paused node last ran. Any other kind shows its payload as JSON.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.json import JSON
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from hitl_graphs.breakpoint_changes import is_changes
from hitl_graphs.review_refs import review_ref
from hitl_graphs.reviews import ReviewRequest


def render_review(review: ReviewRequest, console: Console) -> None:
    """Print one review: what is asked, who may answer how, and the payload in its best form."""
    console.print(Panel(Group(_header(review), Text(""), _body(review)), title=f"review · {review.kind}", expand=False))


def _header(r: ReviewRequest) -> Text:
    text = Text()
    text.append(r.title + "\n", style="bold")
    text.append(f"thread {r.thread_id}  review {review_ref(r)}\n", style="cyan")
    text.append(f"{r.workflow} · {r.position} {r.node}")
    may = ", ".join(r.allowed)
    text.append(f" · may: {may}")
    if r.editable and "modify" in r.allowed:
        text.append(f" · editable: {', '.join(r.editable)}")
    if r.required_role:
        text.append(f" · role: {r.required_role}", style="yellow")
    if r.deadline:
        text.append(f" · deadline {r.deadline:%Y-%m-%d %H:%M:%S}", style="yellow")
    if r.verify_phrase:
        text.append(f"\ntype {r.verify_phrase!r} to approve", style="bold red")
    return text


def _body(r: ReviewRequest) -> RenderableType:
    p: Any = r.payload
    if not isinstance(p, dict):
        return JSON.from_data(p, default=str)
    if r.kind == "plan" and isinstance(p.get("plan"), list):
        table = Table(show_header=False, box=None)
        for done in p.get("done") or []:
            table.add_row("[green]✓[/green]", Text(str(done.get("step", done)) if isinstance(done, dict) else str(done), style="dim"))
        for i, step in enumerate(p["plan"], 1):
            table.add_row(f"{i}.", str(step))
        return Group(Text(f"task: {p.get('task', '')}", style="italic"), table)
    if r.kind == "tool_calls" and "args" in p:
        name = p.get("tool") or p.get("name") or "tool"
        args = Syntax(json.dumps(p["args"], indent=2, default=str), "json", theme="ansi_dark", background_color="default")
        level = f" [{p['level']}]" if p.get("level") else ""
        return Group(Text(f"{name}{level}", style="bold magenta"), args)
    if r.kind == "escalation":
        table = Table("from", "to", "reason", title="escalations", title_justify="left")
        for e in p.get("escalations") or []:
            table.add_row(str(e.get("from")), str(e.get("to")), str(e.get("reason")))
        return Group(Text(f"level {p.get('level')} · reason: {p.get('reason')}"), Panel(str(p.get("output", "")), title="result"), table)
    if "output" in p and isinstance(p["output"], str):
        label = p.get("phase") or r.node
        return Group(Text(f"{label}", style="bold"), Panel(p["output"], expand=False))
    if r.kind == "reply" and "answer" in p:
        return Panel(str(p["answer"]), title="agent", expand=False)
    if r.source == "breakpoint" and is_changes(p):
        return _changes(r, p)
    return JSON.from_data(p, default=str)


def _changes(r: ReviewRequest, p: dict[str, Any]) -> RenderableType:
    """A breakpoint's review: the keys the node has not seen first, the rest by name only."""
    parts: list[RenderableType] = []
    if p["changed"]:
        parts += [Text("changed", style="bold"), JSON.from_data(p["changed"], default=str)]
    for key, items in p["appended"].items():
        parts += [Text(f"{key}: {len(items)} new item(s)", style="bold"), JSON.from_data(items, default=str)]
    if not p["changed"] and not p["appended"]:
        parts.append(Text(f"nothing changed since {r.node} last ran", style="italic"))
    if p["unchanged"]:
        parts.append(Text(f"unchanged: {', '.join(map(str, p['unchanged']))}", style="dim"))
    parts.append(Text(f"whole state: hitl show {r.thread_id} --state", style="dim"))
    return Group(*parts)

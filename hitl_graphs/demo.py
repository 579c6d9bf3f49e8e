"""`hitl demo` / `make demo`: a guided walk through the four review patterns, offline.

Plan review, tool-call approval, multi-step gates and escalation, each on its built-in workflow,
on the default SQLite database (so the `hitl ...` commands it prints work afterwards) and the
scripted model: no API key, no network. At a terminal the person decides every review (approve,
modify in `$EDITOR` or inline, reject...); without one (CI, a pipe) scripted decisions are taken
and printed, a bad edit included, and the walk exits 0.

At the end one more plan-review thread is started and left paused, for the reader: the walk
never decides it, so the `hitl show` / `hitl approve` it prints work from another terminal,
tomorrow (and another process is asked to list it, to show the pause is in the file).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.rule import Rule

from hitl_graphs.decisions import Approve, Decision, Escalate, Modify, Reject
from hitl_graphs.errors import DecisionError
from hitl_graphs.render import render_review
from hitl_graphs.reviewer import ConsoleReviewer, Reviewer, ScriptedReviewer
from hitl_graphs.reviews import ReviewRequest, ThreadView
from hitl_graphs.runner import Runner


@dataclass(frozen=True)
class Pattern:
    """One stop of the walk: which workflow, what to say, and the scripted answers."""

    title: str
    workflow: str
    intro: str
    scripted: dict[str, Decision | Callable[[ReviewRequest], Decision]]
    bad_edit: Modify | None = None
    roles: tuple[str, ...] = ()
    summary: Callable[[dict], str] = lambda state: ""  # type: ignore[type-arg]


def _tool_decision(review: ReviewRequest) -> Decision:
    if review.payload.get("tool") == "get_phone_number":  # type: ignore[union-attr]
        return Modify(actor="demo", patch={"args": {"name": "Alice Smith"}})
    return Approve(actor="demo", verification=review.verify_phrase)


def _phase_decision(review: ReviewRequest) -> Decision:
    payload = review.payload if isinstance(review.payload, dict) else {}
    if payload.get("phase") == "analyse" and payload.get("attempt") == 1:
        return Reject(actor="demo", reason="mention the edge cases")
    if payload.get("phase") == "tests":
        return Modify(actor="demo", patch={"output": "Unit tests: 2+2=4, -1+1=0, 0.1+0.2≈0.3."})
    return Approve(actor="demo")


def _escalation_decision(review: ReviewRequest) -> Decision:
    if review.payload.get("level") == "human":  # type: ignore[union-attr]
        return Escalate(actor="demo", reason="over my refund limit")
    return Modify(actor="demo", patch={"output": "Refund $2,400 to the original card, and a $20 voucher."})


PATTERNS = [
    Pattern(
        "1 · Plan review: look at the plan before anything runs",
        "plan-review",
        "A planner proposes numbered steps; nothing runs until a person approves, edits or rejects "
        "them. Every 2 steps the planner updates the rest of the plan, and that is reviewed again.",
        {"plan": lambda r: Modify(actor="demo", patch={"plan": ["Research the breakthroughs", "Pick three",
                                                                 "Write a 3-line summary"]})
         if r.payload.get("version") == 1 else Approve(actor="demo")},  # type: ignore[union-attr]
        bad_edit=Modify(actor="demo", patch={"plan": "just do it"}),
        summary=lambda s: "ran: " + ", ".join(r["step"] for r in s.get("results", [])),
    ),
    Pattern(
        "2 · Tool-call approval: per-tool policies",
        "tool-approval",
        "An agent calls tools. The balance tool asks every time, the addition tool never asks, the "
        "phone tool asks the first time only. Arguments can be edited (checked against the tool's schema).",
        {"tool_calls": _tool_decision},
        bad_edit=Modify(actor="demo", patch={"args": {"account_id": 56789}}),
        summary=lambda s: str(s.get("messages", [{}])[-1].get("content", "")).replace("\n", " "),
    ),
    Pattern(
        "3 · Multi-step gates: review each phase's output",
        "multi-step",
        "Three phases run in order; each output is reviewed after its phase, before the next one. "
        "Reject sends the phase back with feedback; an edit is what later phases see.",
        {"phase": _phase_decision},
        summary=lambda s: " | ".join(f"{k}: {v}" for k, v in (s.get("outputs") or {}).items()),
    ),
    Pattern(
        "4 · Escalation: agent → senior agent → human → manager",
        "escalation",
        "Automated levels try first; low confidence or a sensitive answer escalates to a person with "
        "the `reviewer` role, who may push it up to the `manager`.",
        {"escalation": _escalation_decision},
        roles=("reviewer", "manager"),
        summary=lambda s: f"resolution: {s.get('resolution')} · output: {s.get('output')}",
    ),
]


def run_demo(runner: Runner, *, console: Console, interactive: bool, actor: str = "you") -> None:
    """Walk the four patterns; at a terminal the person decides, else the script does."""
    console.print(Markdown("# hitl_graphs: human review for LangGraph agents\nOffline: SQLite at "
                           f"`{runner.store.location}` and a scripted model. Every pause below is durable."))
    for pattern in PATTERNS:
        console.print(Rule(pattern.title))
        console.print(pattern.intro)
        reviewer: Reviewer = ConsoleReviewer(console, actor=actor) if interactive else _Announcing(pattern.scripted, console)
        view = runner.start(pattern.workflow)
        view = _answer(runner, view, reviewer, console, pattern, interactive)
        console.print(f"[green]{view.status} ({view.outcome})[/green] {pattern.summary(view.state)}")
        console.print(f"[dim]history: hitl history {view.thread_id}[/dim]")
    _leave_one_paused(runner, console, interactive)
    console.print(Rule())
    console.print("Next: `hitl pending`, `hitl review` (decide everything waiting), `hitl run plan-review`, `hitl --help`.")
    db = runner.store.location
    console.print(f"In a browser: `hitl --db {db} token create --actor you --role reviewer --role manager` (prints a token), "
                  f"then `hitl --db {db} serve` and open http://127.0.0.1:8000/ to paste it: the web inbox on this database "
                  "(needs the web extra, which `make demo` installs).")


class _Announcing(ScriptedReviewer):
    """The scripted reviewer, saying out loud what it decided."""

    def __init__(self, decisions: dict[str, Decision | Callable[[ReviewRequest], Decision]], console: Console) -> None:
        super().__init__(decisions)
        self.console = console

    def decide(self, review: ReviewRequest, state: Mapping[str, Any]) -> Decision:
        decision = super().decide(review, state)
        self.console.print(f"[bold]scripted decision:[/bold] {decision.model_dump_json(exclude_none=True)}")
        return decision


def _answer(runner: Runner, view: ThreadView, reviewer: Reviewer, console: Console, pattern: Pattern,
            interactive: bool) -> ThreadView:
    bad = None if interactive else pattern.bad_edit
    while view.reviews:
        review = view.reviews[0]
        render_review(review, console)
        if bad is not None and "modify" in review.allowed:
            console.print(f"[bold]a bad edit first:[/bold] {bad.model_dump_json(exclude_none=True)}")
            try:
                runner.resume(view.thread_id, bad, review_id=review.review_id, roles=pattern.roles)
            except DecisionError as exc:
                console.print(f"[red]refused:[/red] {exc} [dim](the thread is still paused, unchanged)[/dim]")
            bad = None
        try:
            decision = reviewer.decide(review, view.state)
            view = runner.resume(view.thread_id, decision, review_id=review.review_id, roles=pattern.roles)
        except DecisionError as exc:
            console.print(f"[red]refused:[/red] {exc} [dim](nothing changed; decide again)[/dim]")
            if not interactive:
                raise
    return view


def _leave_one_paused(runner: Runner, console: Console, interactive: bool) -> None:
    """Start one more plan review and leave it paused: the pause lives in the database, not in
    this process, and the commands printed here are the reader's to run (the walk never decides it)."""
    console.print(Rule("5 · Yours to decide, later"))
    view = runner.start("plan-review")
    console.print(
        f"Thread [cyan]{view.thread_id}[/cyan] is paused in the database, and this walk leaves it paused for you. "
        f"Close this terminal, come back tomorrow, and run:\n  [bold]hitl show {view.thread_id}[/bold]\n"
        f"  [bold]hitl approve {view.thread_id}[/bold]"
    )
    if interactive:
        return
    console.print("[dim]checking from a separate process: hitl pending --workflow plan-review[/dim]")
    done = subprocess.run(
        [sys.executable, "-m", "hitl_graphs.cli", "--db", runner.store.location, "pending", "--workflow", "plan-review", "--json"],
        capture_output=True, text=True,
    )
    found = view.thread_id in done.stdout
    console.print("[green]another process sees the pending review[/green]" if found and done.returncode == 0
                  else f"[red]another process could not list it: {done.stderr.strip()}[/red]")

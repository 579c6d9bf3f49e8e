"""`hitl demo` / `make demo`: a guided walk through the review patterns, offline.

It runs on the default database (so the `hitl ...` commands it prints work afterwards), with no
API key. Where standard input is a terminal the person decides each review; otherwise (CI, a
pipe) scripted decisions are taken and printed.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

from rich.console import Console
from rich.prompt import Prompt
from rich.rule import Rule

from hitl_graphs.decisions import Approve, Decision, Modify, Reject
from hitl_graphs.errors import DecisionError
from hitl_graphs.reviews import ReviewRequest, ThreadView
from hitl_graphs.runner import Runner


def decide_in_terminal(console: Console, review: ReviewRequest) -> Decision:
    """Ask a person at a terminal for a decision on one review."""
    choices = [k for k in ("approve", "modify", "reject") if k in review.allowed]
    kind = Prompt.ask("decision", choices=choices, default="approve", console=console)
    if kind == "approve":
        return Approve(actor="you")
    if kind == "reject":
        return Reject(actor="you", reason=Prompt.ask("reason", default="", console=console) or None)
    import json

    while True:
        raw = Prompt.ask(f"patch as JSON (editable: {', '.join(review.editable)})", console=console)
        try:
            value = json.loads(raw)
            if isinstance(value, dict) and value:
                return Modify(actor="you", patch=value)
        except json.JSONDecodeError as exc:
            console.print(f"[red]not JSON: {exc.msg}[/red]")
            continue
        console.print("[red]give a JSON object with at least one field[/red]")


def run_demo(runner: Runner, *, console: Console, interactive: bool) -> None:
    """The walk: an `interrupt()` gate, then a static breakpoint resumed by another process."""
    from hitl_graphs.render import render_review

    def decide(review: ReviewRequest, scripted: Decision) -> Decision:
        if interactive:
            return decide_in_terminal(console, review)
        console.print(f"[dim]scripted decision:[/dim] {scripted.model_dump_json(exclude_none=True)}")
        return scripted

    def answer(view: ThreadView, scripted: Decision, bad: Decision | None = None) -> ThreadView:
        while view.reviews:
            review = view.reviews[0]
            render_review(review, console)
            if bad is not None and not interactive:
                console.print(f"[dim]a bad edit first:[/dim] {bad.model_dump_json(exclude_none=True)}")
                try:
                    runner.resume(view.thread_id, bad, review_id=review.review_id)
                except DecisionError as exc:
                    console.print(f"[red]refused:[/red] {exc}  [dim](the thread is still paused, unchanged)[/dim]")
                bad = None
            try:
                view = runner.resume(view.thread_id, decide(review, scripted), review_id=review.review_id)
            except DecisionError as exc:
                console.print(f"[red]refused:[/red] {exc}; try again")
        return view

    console.print(Rule("1 · a review gate before a side effect (interrupt())"))
    view = runner.start("email", {"to": "ana@example.com", "topic": "the quarterly report"})
    console.print(f"thread [cyan]{view.thread_id}[/cyan] paused for review")
    view = answer(view, Modify(actor="demo", patch={"subject": "Q3 report: numbers inside"}),
                  bad=Modify(actor="demo", patch={"subject": 42}))
    _outcome(console, view, lambda s: f"sent={s.get('sent')} subject={s.get('subject')!r}")

    console.print(Rule("2 · a static breakpoint, resumed later by another process"))
    view = runner.start("approval", {"task": "web-frontend"})
    render_review(view.reviews[0], console)
    console.print(
        "This thread now lives in the database. Close everything, come back tomorrow, and run:\n"
        f"  [bold]hitl approve {view.thread_id}[/bold]"
    )
    if interactive:
        decision = decide_in_terminal(console, view.reviews[0])
        view = runner.resume(view.thread_id, decision)
    else:
        console.print("[dim]running that command in a separate process now...[/dim]")
        done = subprocess.run(
            [sys.executable, "-m", "hitl_graphs.cli", "--db", runner.store.path, "approve", view.thread_id, "--actor", "demo"],
            capture_output=True, text=True,
        )
        console.print(done.stdout.strip() or done.stderr.strip())
        view = runner.show(view.thread_id)
    _outcome(console, view, lambda s: f"result={s.get('result')!r}")
    console.print(Rule("history of that thread"))
    for entry in runner.history(view.thread_id):
        who = f" by {entry.actor}" if entry.actor else ""
        console.print(f"  {entry.event}{who}")
    console.print(Rule())
    console.print("Next: `hitl pending`, `hitl run email`, `hitl --help`. The database is " + runner.store.path)


def _outcome(console: Console, view: ThreadView, summary: Callable[[dict], str]) -> None:  # type: ignore[type-arg]
    console.print(f"[green]{view.status} ({view.outcome})[/green] {summary(view.state)}")

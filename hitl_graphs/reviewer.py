"""Who answers a review in-process: a person at a terminal, or a script.

`ConsoleReviewer` asks at the terminal (approve / modify / reject, and respond / escalate where
allowed; at a static breakpoint, whose review shows what changed, `state` prints the whole state); a modify opens `$EDITOR` on the editable values, or takes JSON inline, and a refused
edit is shown and asked again. `ScriptedReviewer` answers from a table: the demo's scripted mode
and a test double, as httpx ships `MockTransport`. `review_pending` walks everything pending.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from rich.console import Console
from rich.json import JSON
from rich.prompt import Prompt

from hitl_graphs.decisions import Approve, Decision, Escalate, Modify, Reject, Respond
from hitl_graphs.errors import DecisionError, HitlError
from hitl_graphs.render import render_review
from hitl_graphs.reviews import ReviewRequest, ThreadView
from hitl_graphs.runner import Runner


class Reviewer(Protocol):
    """Anything that turns a review (and the thread's state) into a decision."""

    def decide(self, review: ReviewRequest, state: Mapping[str, Any]) -> Decision: ...


Ask = Callable[[str, Sequence[str] | None, str | None], str]


def _rich_ask(console: Console) -> Ask:
    def ask(prompt: str, choices: Sequence[str] | None, default: str | None) -> str:
        options = list(choices) if choices is not None else None
        if default is None:
            return Prompt.ask(prompt, choices=options, console=console)
        return Prompt.ask(prompt, choices=options, default=default, console=console)

    return ask


class ConsoleReviewer:
    """Ask a person at a terminal.

    Args:
        console: Where prompts and errors go.
        actor: Recorded as who decided.
        ask: How to read an answer (defaults to Rich prompts; tests pass their own).
        editor: Command to edit values in (default `$VISUAL` / `$EDITOR`; inline JSON without).

    Example:
        >>> answers = iter(["reject", "not now"])
        >>> import io
        >>> reviewer = ConsoleReviewer(Console(file=io.StringIO()), actor="ana",
        ...                            ask=lambda prompt, choices, default: next(answers), editor="")
        >>> review = ReviewRequest(review_id="r", thread_id="t", workflow="w", node="n", position="before",
        ...     kind="gate", title="Go?", payload={}, allowed=("approve", "reject"), editable=(),
        ...     source="interrupt", created_at="2026-01-01T00:00:00Z")
        >>> reviewer.decide(review, {})
        Reject(actor='ana', comment=None, seen=None, kind='reject', reason='not now')
    """

    def __init__(self, console: Console, *, actor: str, ask: Ask | None = None, editor: str | None = None) -> None:
        self.console = console
        self.actor = actor
        self.ask = ask or _rich_ask(console)
        self.editor = (os.environ.get("VISUAL") or os.environ.get("EDITOR") or "") if editor is None else editor

    def decide(self, review: ReviewRequest, state: Mapping[str, Any]) -> Decision:
        choices = [k for k in ("approve", "modify", "reject", "respond", "escalate") if k in review.allowed]
        if "modify" in choices and not review.editable:
            choices.remove("modify")
        # a breakpoint's review shows what changed since the node last ran; "state" shows the rest
        asks = [*choices, "state"] if review.source == "breakpoint" else choices
        kind = self.ask("decision", asks, choices[0])
        while kind == "state":
            self.console.print(JSON.from_data(dict(state), default=str))
            kind = self.ask("decision", asks, choices[0])
        seen = review.payload_hash or None
        verification = None
        if review.verify_phrase and kind in ("approve", "modify"):
            verification = self.ask(f"type {review.verify_phrase!r} to confirm", None, None)
        match kind:
            case "approve":
                return Approve(actor=self.actor, seen=seen, verification=verification)
            case "reject":
                return Reject(actor=self.actor, seen=seen, reason=self.ask("reason", None, "") or None)
            case "respond":
                return Respond(actor=self.actor, seen=seen, text=self.ask("your reply", None, None))
            case "escalate":
                return Escalate(actor=self.actor, seen=seen, reason=self.ask("reason", None, "") or None)
            case _:
                return Modify(actor=self.actor, seen=seen, verification=verification, patch=self._edit(review, state))

    def _edit(self, review: ReviewRequest, state: Mapping[str, Any]) -> dict[str, Any]:
        payload = review.payload if isinstance(review.payload, dict) else {}
        current = {f: payload[f] if f in payload else state.get(f) for f in review.editable}
        while True:
            if not self.editor:
                self.console.print(f"current values: {json.dumps(current, default=str)}", highlight=False, soft_wrap=True)
            text = self._editor_text(current) if self.editor else self.ask(
                f"patch as JSON ({', '.join(review.editable)})", None, None)
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                self.console.print(f"[red]not JSON: {exc.msg} (line {exc.lineno} column {exc.colno}); try again[/red]")
                continue
            if not isinstance(value, dict):
                self.console.print("[red]give a JSON object of field: new value; try again[/red]")
                continue
            patch = {k: v for k, v in value.items() if current.get(k, object()) != v}
            if patch:
                return patch
            self.console.print("[yellow]nothing changed; edit a value or choose another decision[/yellow]")

    def _editor_text(self, current: dict[str, Any]) -> str:
        with tempfile.NamedTemporaryFile("w+", suffix=".json", delete=False) as f:
            json.dump(current, f, indent=2, default=str)
            path = f.name
        try:
            subprocess.run([*shlex.split(self.editor), path], check=False)
            with open(path) as f:
                return f.read()
        finally:
            os.unlink(path)


class ScriptedReviewer:
    """Answer from a table: review kind (or `*`) -> decision, or a function of the review.

    Example:
        >>> reviewer = ScriptedReviewer({"plan": Approve(actor="bot")})
        >>> review = ReviewRequest(review_id="r", thread_id="t", workflow="w", node="n", position="before",
        ...     kind="plan", title="Plan", payload={}, allowed=("approve",), editable=(),
        ...     source="interrupt", created_at="2026-01-01T00:00:00Z")
        >>> reviewer.decide(review, {}).kind
        'approve'
    """

    def __init__(self, decisions: Mapping[str, Decision | Callable[[ReviewRequest], Decision]]) -> None:
        self.decisions = decisions

    def decide(self, review: ReviewRequest, state: Mapping[str, Any]) -> Decision:
        choice = self.decisions.get(review.kind) or self.decisions.get("*")
        if choice is None:
            raise KeyError(f"ScriptedReviewer has no decision for kind {review.kind!r}")
        return choice(review) if callable(choice) else choice


def answer(runner: Runner, view: ThreadView, reviewer: Reviewer, console: Console, *, roles: tuple[str, ...] = ()) -> ThreadView:
    """Show and decide a thread's pending reviews one by one until it stops pausing for them.

    A refused decision is shown and asked again; the thread is unchanged meanwhile.
    """
    while view.reviews:
        review = view.reviews[0]
        render_review(review, console)
        try:
            decision = reviewer.decide(review, view.state)
            view = runner.resume(view.thread_id, decision, review_id=review.review_id, roles=roles)
        except DecisionError as exc:
            console.print(f"[red]refused:[/red] {exc}")
            if isinstance(reviewer, ScriptedReviewer):
                raise
    return view


def review_pending(runner: Runner, reviewer: Reviewer, console: Console, *, roles: tuple[str, ...] = (),
                   workflow: str | None = None) -> int:
    """Decide everything pending, oldest first, one review after another; returns how many."""
    done = 0
    skipped: set[str] = set()
    while True:
        waiting = [r for r in runner.pending(workflow=workflow, roles=roles or None, limit=50) if r.review_id not in skipped]
        if not waiting:
            return done
        review = waiting[0]
        try:
            view = runner.show(review.thread_id)
            render_review(review, console)
            decision = reviewer.decide(review, view.state)
            after = runner.resume(review.thread_id, decision, review_id=review.review_id, roles=roles)
            done += 1
            console.print(f"[green]{after.status}[/green]" + (f" ({after.outcome})" if after.outcome else ""))
        except HitlError as exc:
            console.print(f"[red]refused:[/red] {exc}")
            if isinstance(exc, DecisionError) and not isinstance(reviewer, ScriptedReviewer):
                continue  # ask again about the same review
            skipped.add(review.review_id)

"""A person's decisions: approve, modify, reject, respond, escalate, cancel, and review (all pending at the terminal)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from hitl_graphs.commands._base import (
    ActorOpt,
    CommentOpt,
    DeferOpt,
    JsonFlag,
    ReviewOpt,
    RoleOpt,
    SeenOpt,
    VerifyOpt,
    actor_of,
    app,
    decide,
    emit_view,
    fail,
    json_arg,
    open_runner,
    out,
    roles_of,
)
from hitl_graphs.decisions import Approve, Escalate, Modify, Reject, Respond


@app.command()
def approve(
    thread: str,
    review: ReviewOpt = None,
    actor: ActorOpt = None,
    comment: CommentOpt = None,
    verify: VerifyOpt = None,
    role: RoleOpt = None,
    seen: SeenOpt = None,
    defer: DeferOpt = False,
    as_json: JsonFlag = False,
) -> None:
    """Approve the pending review; the thread runs to its next review or its end."""
    decide(thread, Approve(actor=actor_of(actor), comment=comment, verification=verify, seen=seen), review, as_json, role, defer)


@app.command()
def modify(
    thread: str,
    patch: Annotated[str, typer.Option("--patch", help='New values, a JSON object: \'{"plan": ["a", "b"]}\'; tool arguments merge over those shown.')],
    review: ReviewOpt = None,
    actor: ActorOpt = None,
    comment: CommentOpt = None,
    verify: VerifyOpt = None,
    role: RoleOpt = None,
    seen: SeenOpt = None,
    defer: DeferOpt = False,
    as_json: JsonFlag = False,
) -> None:
    """Approve with edits: the patch is checked against the review and the state's types first.

    Tool arguments merge over those shown: --patch '{"args": {"amount": 900}}' changes that one argument and keeps the others; the merged arguments are checked with the tool's own argument model before anything is recorded.
    """
    values = json_arg(patch, "--patch")
    if not values:
        fail("--patch is empty; name at least one field to change")
    decide(thread, Modify(patch=values, actor=actor_of(actor), comment=comment, verification=verify, seen=seen), review, as_json, role, defer)


@app.command()
def reject(
    thread: str,
    reason: Annotated[str | None, typer.Option("--reason", help="Why; the workflow may show it to the model.")] = None,
    review: ReviewOpt = None,
    actor: ActorOpt = None,
    comment: CommentOpt = None,
    role: RoleOpt = None,
    seen: SeenOpt = None,
    defer: DeferOpt = False,
    as_json: JsonFlag = False,
) -> None:
    """Reject the pending review; the workflow's rejection route runs, or the thread ends as rejected."""
    decide(thread, Reject(reason=reason, actor=actor_of(actor), comment=comment, seen=seen), review, as_json, role, defer)


@app.command()
def respond(
    thread: str,
    text: Annotated[str, typer.Option("--text", help="Your reply, in free text.")],
    review: ReviewOpt = None,
    actor: ActorOpt = None,
    comment: CommentOpt = None,
    role: RoleOpt = None,
    seen: SeenOpt = None,
    defer: DeferOpt = False,
    as_json: JsonFlag = False,
) -> None:
    """Reply in free text (conversation turns, redirecting the agent) where the review allows it."""
    decide(thread, Respond(text=text, actor=actor_of(actor), comment=comment, seen=seen), review, as_json, role, defer)


@app.command()
def escalate(
    thread: str,
    reason: Annotated[str | None, typer.Option("--reason", help="Why it goes up a level.")] = None,
    review: ReviewOpt = None,
    actor: ActorOpt = None,
    comment: CommentOpt = None,
    role: RoleOpt = None,
    seen: SeenOpt = None,
    defer: DeferOpt = False,
    as_json: JsonFlag = False,
) -> None:
    """Hand the case one level up, where the review allows it."""
    decide(thread, Escalate(reason=reason, actor=actor_of(actor), comment=comment, seen=seen), review, as_json, role, defer)


@app.command()
def cancel(
    thread: str,
    reason: Annotated[str | None, typer.Option("--reason", help="Why, for the history.")] = None,
    actor: ActorOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """End a thread now; nothing more runs and its pending reviews are cancelled."""
    with open_runner() as runner:
        emit_view(runner.cancel(thread, actor=actor_of(actor), reason=reason), as_json)


@app.command()
def review(
    workflow: Annotated[str | None, typer.Option("--workflow", help="Only this workflow's reviews.")] = None,
    role: RoleOpt = None,
    actor: ActorOpt = None,
) -> None:
    """Decide everything pending at the terminal, one review after another."""
    from hitl_graphs.reviewer import ConsoleReviewer, review_pending

    if not sys.stdin.isatty():
        fail("hitl review needs a terminal on standard input; use hitl approve/modify/reject in scripts")
    with open_runner() as runner:
        count = review_pending(runner, ConsoleReviewer(out, actor=actor_of(actor)), out, roles=tuple(roles_of(role)),
                               workflow=workflow)
    out.print(f"{count} review(s) decided; nothing else is waiting" if count else "nothing is waiting for a decision")

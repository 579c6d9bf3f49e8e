"""What every `hitl` command shares: the Typer app, the global options, opening the runner,
refusing in one line, reading JSON arguments, printing views; and the decision helper the
decision commands share."""

from __future__ import annotations

import getpass
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.json import JSON

from hitl_graphs.decisions import Decision
from hitl_graphs.errors import HitlError, StaleReviewError, ThreadBusyError
from hitl_graphs.examples import register_examples
from hitl_graphs.locations import DB_ENV, default_location, missing_database
from hitl_graphs.registry import load_app
from hitl_graphs.render import render_review
from hitl_graphs.review_refs import review_ref
from hitl_graphs.reviews import ReviewRequest, ThreadView
from hitl_graphs.runner import Runner

app = typer.Typer(
    name="hitl",
    help="Human-in-the-loop review for LangGraph: list paused threads and approve, modify or reject them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False, soft_wrap=True)


class _Opts:
    db: str | None = None
    started: float | None = None
    """When the `hitl` process started (set by `main`); None when the app is invoked in-process."""
    invoked_at: float = 0.0


opts = _Opts()

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
ReviewOpt = Annotated[str | None, typer.Option(
    "--review", help="Which review, when several are pending: its id as `hitl pending` and `hitl show` print it (a key such "
                     "as a tool call id, else the start of its id), or the tool it calls if no other pending review calls it.")]
ActorOpt = Annotated[str | None, typer.Option("--actor", help="Who decides (default: $HITL_ACTOR, else your login).")]
RoleOpt = Annotated[
    list[str] | None, typer.Option("--role", help="A role you hold (repeatable; default: $HITL_ROLES, comma-separated).")
]
SeenOpt = Annotated[str | None, typer.Option("--seen", help="The payload hash you reviewed; refused if the review changed since.")]
VerifyOpt = Annotated[str | None, typer.Option("--verify", help="The verification phrase a verify-level review asks for.")]
CommentOpt = Annotated[str | None, typer.Option("--comment", help="A note kept in the history.")]
DeferOpt = Annotated[bool, typer.Option(
    "--defer", help="Record the decision and return at once; a worker (`hitl worker`) runs the thread on.")]


@app.callback()
def _main(
    db: Annotated[str | None, typer.Option(
        "--db", help="SQLite file or postgresql:// URL (default: $HITL_DB, else checkpoints/hitl.sqlite in the project root: "
                     "the nearest folder up from here with a pyproject.toml or .git). Only run, demo and init create a file.")] = None,
    app_module: Annotated[
        str | None, typer.Option("--app", help="Import this module first, to register your own workflows (or $HITL_APP).")
    ] = None,
) -> None:
    opts.db = db
    opts.invoked_at = time.time()
    register_examples()  # the demo workflows: the CLI knows them, the library registers nothing
    module = app_module or os.environ.get("HITL_APP")
    if module:
        guard(lambda: load_app(module))


def fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def guard(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except HitlError as exc:
        fail(str(exc))


@contextmanager
def open_runner(*, create: bool = False) -> Iterator[Runner]:
    """The runner on the database; only commands that start threads (`create`) may create it:
    the others refuse a path that does not exist, so a typo is not a new, empty database."""
    path = opts.db or default_location()
    if not create:
        source = "--db" if opts.db else "$HITL_DB" if os.environ.get(DB_ENV) else "the default, in the project root"
        if (missing := missing_database(path, source)) is not None:
            fail(missing)
    try:
        with Runner.open(path) as runner:
            yield runner
    except HitlError as exc:
        fail(str(exc))
    except typer.Exit:
        raise
    except Exception as exc:  # a node of the user's graph raised: say so in one line
        fail(f"the graph raised {type(exc).__name__}: {exc}")


def json_arg(text: str, option: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        fail(f"{option} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
    except RecursionError:
        fail(f"{option} is nested too deeply to read; send a flatter value")
    if not isinstance(value, dict):
        fail(f"{option} must be a JSON object, got {type(value).__name__}")
    return value


def pin(runner: Runner, thread: str) -> str | None:
    """The review a decision without --review is about: the one pending when the command started.

    If the thread is running, or what is pending now was raised after this command started (a
    run that was going on meanwhile paused again), the person has not seen it: refuse.
    """
    view = runner.show(thread)
    if view.status == "running":
        raise ThreadBusyError(f"thread {thread!r} is running right now; look at what it asks once it pauses "
                              f"(`hitl show {thread}`), then decide")
    if len(view.reviews) != 1:
        return None  # nothing or several pending: resume says which, and how to name one
    review = view.reviews[0]
    started = opts.started if opts.started is not None else opts.invoked_at
    if review.created_at.timestamp() > started:
        raise StaleReviewError(
            f"thread {thread!r} moved on while this command started: review {review_ref(review)!r} "
            f"({review.title}) was raised after it, so you have not seen it; nothing was decided. "
            f"Look (`hitl show {thread}`), then decide with --review {review_ref(review)}"
        )
    return review.review_id


def actor_of(actor: str | None) -> str:
    return actor or os.environ.get("HITL_ACTOR") or getpass.getuser()


def roles_of(roles: list[str] | None) -> list[str]:
    if roles:
        return roles
    return [r.strip() for r in os.environ.get("HITL_ROLES", "").split(",") if r.strip()]


# -- output ---------------------------------------------------------------------------------


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def review_json(r: ReviewRequest) -> dict[str, Any]:
    return r.model_dump(mode="json")


def view_json(view: ThreadView) -> dict[str, Any]:
    return view.model_dump(mode="json")


def print_view(view: ThreadView) -> None:
    status = view.status + (f" ({view.outcome})" if view.outcome else "")
    out.print(f"thread [cyan]{view.thread_id}[/cyan] · workflow {view.workflow} · [bold]{status}[/bold]")
    if view.error:
        out.print(f"[red]{view.error}[/red]")
    if view.awaiting_recovery:
        out.print(f"[yellow]decided, awaiting recovery: {', '.join(view.awaiting_recovery)} (run `hitl recover`)[/yellow]")
    for review in view.reviews:
        render_review(review, out)
    if len(view.reviews) > 1:
        refs = ", ".join(review_ref(r) for r in view.reviews)
        out.print(f"next: hitl approve|modify|reject {view.thread_id} --review REVIEW   (REVIEW: one of {refs})")
    elif view.reviews:
        out.print(f"next: hitl approve {view.thread_id}   |   hitl modify {view.thread_id} --patch '{{...}}'   |   hitl reject {view.thread_id}")
    else:
        out.print("state:")
        out.print(JSON.from_data(view.state, default=str))


def emit_view(view: ThreadView, as_json: bool) -> None:
    print_json(view_json(view)) if as_json else print_view(view)


def decide(thread: str, decision: Decision, review: str | None, as_json: bool, roles: list[str] | None = None,
           defer: bool = False) -> None:
    with open_runner() as runner:
        if review is None:
            review = pin(runner, thread)
        act = runner.decide if defer else runner.resume  # --defer: a worker runs the thread on
        emit_view(act(thread, decision, review_id=review, roles=roles_of(roles)), as_json)

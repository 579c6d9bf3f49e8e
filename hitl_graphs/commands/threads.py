"""Starting, listing and reading threads: run, init, pending, show, history, workflows, adopt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.json import JSON

from hitl_graphs.commands._base import (
    JsonFlag,
    app,
    emit_view,
    fail,
    json_arg,
    open_runner,
    out,
    print_json,
    print_view,
    review_json,
    view_json,
)
from hitl_graphs.registry import registered
from hitl_graphs.review_refs import review_ref
from hitl_graphs.reviews import HistoryEntry


@app.command()
def run(
    workflow: Annotated[str, typer.Argument(help="A registered workflow (see `hitl workflows`).")],
    thread: Annotated[str | None, typer.Option("--thread", help="Thread id to use (default: a new random id).")] = None,
    input: Annotated[str | None, typer.Option("--input", help="The run's input, a JSON object.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Start a thread; it runs to its first review or its end."""
    data = json_arg(input, "--input") if input is not None else None
    with open_runner(create=True) as runner:
        emit_view(runner.start(workflow, data, thread_id=thread), as_json)


@app.command()
def init() -> None:
    """Create the database (--db, $HITL_DB or the default) if it does not exist; the commands that read or decide refuse a missing one."""
    with open_runner(create=True) as runner:
        where = runner.store.location
        typer.echo(f"database ready at {where if '://' in where else Path(where).resolve()}")


@app.command()
def pending(
    workflow: Annotated[str | None, typer.Option("--workflow", help="Only this workflow's reviews.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many, oldest first.")] = 50,
    offset: Annotated[int, typer.Option("--offset", help="Skip this many (for paging).")] = 0,
    role: Annotated[
        list[str] | None, typer.Option("--role", help="Only what an actor with this role may decide (repeatable).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """List reviews waiting for a decision, across all threads."""
    with open_runner() as runner:
        reviews = runner.pending(workflow=workflow, roles=role, limit=limit, offset=offset)
        stranded = [] if as_json else runner.stranded()
    if as_json:
        print_json([review_json(r) for r in reviews])
        return
    if stranded:
        out.print(f"[yellow]{len(stranded)} thread(s) hold a decision a crash kept from being applied: "
                  "run `hitl recover`[/yellow]")
    if not reviews:
        out.print("nothing is waiting for a decision")
        return
    for r in reviews:
        needs = f" · role {r.required_role}" if r.required_role else ""
        due = f" · due {r.deadline:%Y-%m-%d %H:%M}" if r.deadline else ""
        out.print(f"[cyan]{r.thread_id}[/cyan]  {r.workflow} · {r.position} {r.node} · {r.kind}{needs}{due}"
                  f"  [dim]{r.created_at:%Y-%m-%d %H:%M}[/dim]")
        out.print(f"    {r.title}  [dim](review {review_ref(r)}: {', '.join(r.allowed)})[/dim]")
    out.print("decide with: hitl approve|modify|reject THREAD [--review REVIEW]", style="dim")


@app.command()
def show(
    thread: str,
    state: Annotated[bool, typer.Option("--state", help="Print the whole current state after the reviews.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """A thread's status, its pending reviews and its current state (--json has everything)."""
    with open_runner() as runner:
        view = runner.show(thread)
    emit_view(view, as_json)
    if state and not as_json and view.reviews:  # a thread with no review prints its state anyway
        out.print("state:")
        out.print(JSON.from_data(view.state, default=str))


@app.command()
def history(thread: str, as_json: JsonFlag = False) -> None:
    """Everything that happened to a thread: reviews requested, who decided what, and the end."""
    with open_runner() as runner:
        entries = runner.history(thread)
    if as_json:
        print_json([e.model_dump(mode="json") for e in entries])
        return
    for e in entries:
        out.print(_history_line(e))


def _history_line(e: HistoryEntry) -> str:
    who = f" by {e.actor}" if e.actor else ""
    review = f" [{e.review_id[:12]}]" if e.review_id else ""
    detail = {k: v for k, v in e.data.items() if v is not None and k not in ("actor",)}
    extra = f" {json.dumps(detail, default=str)}" if detail else ""
    return f"{e.at.strftime('%Y-%m-%d %H:%M:%S')}  {e.event}{review}{who}{extra}"


@app.command()
def workflows(as_json: JsonFlag = False) -> None:
    """The workflows this command knows (built-ins and those registered by --app)."""
    known = registered()
    if as_json:
        print_json([{"name": w.name, "description": w.description} for w in known.values()])
        return
    for wf in sorted(known.values(), key=lambda w: w.name):
        out.print(f"[bold]{wf.name}[/bold]  {wf.description}")


@app.command()
def adopt(
    workflow: Annotated[str, typer.Option("--workflow", help="The registered workflow whose graph ran them.")],
    threads: Annotated[list[str] | None, typer.Argument(help="Thread ids plain LangGraph ran on this database.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Every thread with checkpoints that the ledger does not know.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Bring threads that plain LangGraph ran on this file (its SqliteSaver) into the ledger, read
    where each paused, so `pending`, `show` and `approve` work on them. Nothing runs."""
    if bool(threads) == every:
        fail("name the threads to adopt, or pass --all (not both)")
    with open_runner() as runner:
        ids = runner.outside_threads() if every else list(threads or ())
        views = [runner.adopt(t, workflow) for t in ids]
    if as_json:
        print_json([view_json(v) for v in views])
        return
    if not views:
        out.print("no thread to adopt: the ledger knows every thread in this file")
    for view in views:
        print_view(view)

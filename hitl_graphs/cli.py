"""`hitl`: start, list, inspect and decide paused threads from a shell.

Every command opens the database (`--db`, else `$HITL_DB`, else `checkpoints/hitl.sqlite`),
does one thing and exits, so each call may be a different process, hours apart. `--json` gives
machine-readable output. A refused request exits 1 with one line on stderr and changes nothing.

    hitl run email --input '{"to": "ana@example.com", "topic": "lunch"}'
    hitl pending
    hitl modify THREAD --patch '{"subject": "Lunch on Friday?"}' --actor ana
    hitl history THREAD
"""

from __future__ import annotations

import getpass
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.json import JSON

from hitl_graphs.examples import register_examples
from hitl_graphs.decisions import Approve, Decision, Escalate, Modify, Reject, Respond
from hitl_graphs import _started
from hitl_graphs.errors import HitlError, StaleReviewError, ThreadBusyError
from hitl_graphs.registry import load_app, registered
from hitl_graphs.render import render_review
from hitl_graphs.reviews import HistoryEntry, ReviewRequest, ThreadView
from hitl_graphs.runner import Runner
from hitl_graphs.storage import default_db_path

app = typer.Typer(
    name="hitl",
    help="Human-in-the-loop review for LangGraph: list paused threads and approve, modify or reject them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False, soft_wrap=True)


class _Opts:
    db: Path | None = None
    started: float | None = None
    """When the `hitl` process started (set by `main`); None when the app is invoked in-process."""
    invoked_at: float = 0.0


_opts = _Opts()

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
ReviewOpt = Annotated[str | None, typer.Option("--review", help="Review id (or a unique prefix) when several are pending.")]
ActorOpt = Annotated[str | None, typer.Option("--actor", help="Who decides (default: $HITL_ACTOR, else your login).")]
RoleOpt = Annotated[
    list[str] | None, typer.Option("--role", help="A role you hold (repeatable; default: $HITL_ROLES, comma-separated).")
]
SeenOpt = Annotated[str | None, typer.Option("--seen", help="The payload hash you reviewed; refused if the review changed since.")]
VerifyOpt = Annotated[str | None, typer.Option("--verify", help="The verification phrase a verify-level review asks for.")]
CommentOpt = Annotated[str | None, typer.Option("--comment", help="A note kept in the history.")]


@app.callback()
def _main(
    db: Annotated[Path | None, typer.Option("--db", help="SQLite file (default: $HITL_DB or checkpoints/hitl.sqlite).")] = None,
    app_module: Annotated[
        str | None, typer.Option("--app", help="Import this module first, to register your own workflows (or $HITL_APP).")
    ] = None,
) -> None:
    _opts.db = db
    _opts.invoked_at = time.time()
    register_examples()  # the demo workflows: the CLI knows them, the library registers nothing
    module = app_module or os.environ.get("HITL_APP")
    if module:
        _guard(lambda: load_app(module))


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _guard(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except HitlError as exc:
        _fail(str(exc))


@contextmanager
def _runner() -> Iterator[Runner]:
    path = str(_opts.db) if _opts.db else str(default_db_path())
    try:
        with Runner.open(path) as runner:
            yield runner
    except HitlError as exc:
        _fail(str(exc))
    except typer.Exit:
        raise
    except Exception as exc:  # a node of the user's graph raised: say so in one line
        _fail(f"the graph raised {type(exc).__name__}: {exc}")


def _json_arg(text: str, option: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        _fail(f"{option} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
    except RecursionError:
        _fail(f"{option} is nested too deeply to read; send a flatter value")
    if not isinstance(value, dict):
        _fail(f"{option} must be a JSON object, got {type(value).__name__}")
    return value


def _pin(runner: Runner, thread: str) -> str | None:
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
    started = _opts.started if _opts.started is not None else _opts.invoked_at
    if review.created_at.timestamp() > started:
        raise StaleReviewError(
            f"thread {thread!r} moved on while this command started: review {review.review_id!r} "
            f"({review.title}) was raised after it, so you have not seen it; nothing was decided. "
            f"Look (`hitl show {thread}`), then decide with --review {review.review_id}"
        )
    return review.review_id


def _actor(actor: str | None) -> str:
    return actor or os.environ.get("HITL_ACTOR") or getpass.getuser()


def _roles(roles: list[str] | None) -> list[str]:
    if roles:
        return roles
    return [r.strip() for r in os.environ.get("HITL_ROLES", "").split(",") if r.strip()]


# -- output ---------------------------------------------------------------------------------


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _review_json(r: ReviewRequest) -> dict[str, Any]:
    return r.model_dump(mode="json")


def _view_json(view: ThreadView) -> dict[str, Any]:
    return view.model_dump(mode="json")


def _print_view(view: ThreadView) -> None:
    status = view.status + (f" ({view.outcome})" if view.outcome else "")
    out.print(f"thread [cyan]{view.thread_id}[/cyan] · workflow {view.workflow} · [bold]{status}[/bold]")
    if view.error:
        out.print(f"[red]{view.error}[/red]")
    if view.awaiting_recovery:
        out.print(f"[yellow]decided, awaiting recovery: {', '.join(view.awaiting_recovery)} (run `hitl recover`)[/yellow]")
    for review in view.reviews:
        render_review(review, out)
    if view.reviews:
        out.print(f"next: hitl approve {view.thread_id}   |   hitl modify {view.thread_id} --patch '{{...}}'   |   hitl reject {view.thread_id}")
    else:
        out.print("state:")
        out.print(JSON.from_data(view.state, default=str))


def _emit_view(view: ThreadView, as_json: bool) -> None:
    _print_json(_view_json(view)) if as_json else _print_view(view)


# -- commands -------------------------------------------------------------------------------


@app.command()
def run(
    workflow: Annotated[str, typer.Argument(help="A registered workflow (see `hitl workflows`).")],
    thread: Annotated[str | None, typer.Option("--thread", help="Thread id to use (default: a new random id).")] = None,
    input: Annotated[str | None, typer.Option("--input", help="The run's input, a JSON object.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Start a thread; it runs to its first review or its end."""
    data = _json_arg(input, "--input") if input is not None else None
    with _runner() as runner:
        _emit_view(runner.start(workflow, data, thread_id=thread), as_json)


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
    with _runner() as runner:
        reviews = runner.pending(workflow=workflow, roles=role, limit=limit, offset=offset)
        stranded = [] if as_json else runner.stranded()
    if as_json:
        _print_json([_review_json(r) for r in reviews])
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
        out.print(f"    {r.title}  [dim](review {r.key or r.review_id[:12]}: {', '.join(r.allowed)})[/dim]")
    out.print("decide with: hitl approve|modify|reject THREAD [--review REVIEW]", style="dim")


@app.command()
def show(thread: str, as_json: JsonFlag = False) -> None:
    """A thread's status, its pending reviews and its current state."""
    with _runner() as runner:
        _emit_view(runner.show(thread), as_json)


@app.command()
def history(thread: str, as_json: JsonFlag = False) -> None:
    """Everything that happened to a thread: reviews requested, who decided what, and the end."""
    with _runner() as runner:
        entries = runner.history(thread)
    if as_json:
        _print_json([e.model_dump(mode="json") for e in entries])
        return
    for e in entries:
        out.print(_history_line(e))


def _history_line(e: HistoryEntry) -> str:
    who = f" by {e.actor}" if e.actor else ""
    review = f" [{e.review_id[:12]}]" if e.review_id else ""
    detail = {k: v for k, v in e.data.items() if v is not None and k not in ("actor",)}
    extra = f" {json.dumps(detail, default=str)}" if detail else ""
    return f"{e.at.strftime('%Y-%m-%d %H:%M:%S')}  {e.event}{review}{who}{extra}"


def _decide(thread: str, decision: Decision, review: str | None, as_json: bool, roles: list[str] | None = None) -> None:
    with _runner() as runner:
        if review is None:
            review = _pin(runner, thread)
        _emit_view(runner.resume(thread, decision, review_id=review, roles=_roles(roles)), as_json)


@app.command()
def approve(
    thread: str,
    review: ReviewOpt = None,
    actor: ActorOpt = None,
    comment: CommentOpt = None,
    verify: VerifyOpt = None,
    role: RoleOpt = None,
    seen: SeenOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Approve the pending review; the thread runs to its next review or its end."""
    _decide(thread, Approve(actor=_actor(actor), comment=comment, verification=verify, seen=seen), review, as_json, role)


@app.command()
def modify(
    thread: str,
    patch: Annotated[str, typer.Option("--patch", help='New values, a JSON object: \'{"plan": ["a", "b"]}\'.')],
    review: ReviewOpt = None,
    actor: ActorOpt = None,
    comment: CommentOpt = None,
    verify: VerifyOpt = None,
    role: RoleOpt = None,
    seen: SeenOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Approve with edits: the patch is checked against the review and the state's types first."""
    values = _json_arg(patch, "--patch")
    if not values:
        _fail("--patch is empty; name at least one field to change")
    _decide(thread, Modify(patch=values, actor=_actor(actor), comment=comment, verification=verify, seen=seen), review, as_json, role)


@app.command()
def reject(
    thread: str,
    reason: Annotated[str | None, typer.Option("--reason", help="Why; the workflow may show it to the model.")] = None,
    review: ReviewOpt = None,
    actor: ActorOpt = None,
    comment: CommentOpt = None,
    role: RoleOpt = None,
    seen: SeenOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Reject the pending review; the workflow's rejection route runs, or the thread ends as rejected."""
    _decide(thread, Reject(reason=reason, actor=_actor(actor), comment=comment, seen=seen), review, as_json, role)


@app.command()
def respond(
    thread: str,
    text: Annotated[str, typer.Option("--text", help="Your reply, in free text.")],
    review: ReviewOpt = None,
    actor: ActorOpt = None,
    comment: CommentOpt = None,
    role: RoleOpt = None,
    seen: SeenOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Reply in free text (conversation turns, redirecting the agent) where the review allows it."""
    _decide(thread, Respond(text=text, actor=_actor(actor), comment=comment, seen=seen), review, as_json, role)


@app.command()
def escalate(
    thread: str,
    reason: Annotated[str | None, typer.Option("--reason", help="Why it goes up a level.")] = None,
    review: ReviewOpt = None,
    actor: ActorOpt = None,
    comment: CommentOpt = None,
    role: RoleOpt = None,
    seen: SeenOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Hand the case one level up, where the review allows it."""
    _decide(thread, Escalate(reason=reason, actor=_actor(actor), comment=comment, seen=seen), review, as_json, role)


@app.command()
def cancel(
    thread: str,
    reason: Annotated[str | None, typer.Option("--reason", help="Why, for the history.")] = None,
    actor: ActorOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """End a thread now; nothing more runs and its pending reviews are cancelled."""
    with _runner() as runner:
        _emit_view(runner.cancel(thread, actor=_actor(actor), reason=reason), as_json)


@app.command()
def recover(as_json: JsonFlag = False) -> None:
    """Finish what crashed processes left: apply recorded decisions and continue stalled runs."""
    with _runner() as runner:
        views = runner.recover()
    if as_json:
        _print_json([_view_json(v) for v in views])
        return
    if not views:
        out.print("nothing to recover")
    for view in views:
        _print_view(view)


@app.command()
def retry(
    thread: str,
    actor: ActorOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Run a failed thread's failed step again (also after `hitl recover` gave up on it)."""
    with _runner() as runner:
        _emit_view(runner.retry(thread, actor=_actor(actor)), as_json)


@app.command()
def sweep(
    every: Annotated[float | None, typer.Option("--every", help="Keep sweeping, every this many seconds.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Apply the default decision of every review whose deadline has passed (safe in many processes)."""
    while True:
        with _runner() as runner:
            views = runner.sweep()
        if as_json:
            _print_json([_view_json(v) for v in views])
        elif views or every is None:
            out.print(f"{len(views)} expired review(s) resolved with their default decision")
            for view in views:
                _print_view(view)
        if every is None:
            return
        time.sleep(every)


audit_app = typer.Typer(help="The tamper-evident audit log.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")


@audit_app.command("verify")
def audit_verify(
    expect_head: Annotated[
        list[str] | None,
        typer.Option("--expect-head", metavar="SEQ:HASH",
                     help="A head kept elsewhere (what `hitl audit head` printed, or its --json line) that must still be "
                          "in the log (repeatable)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Check the hash chain (keyed with $HITL_AUDIT_KEY if set), its head, the ledger's threads and
    decisions against it, and heads kept elsewhere; exit 1 naming the first problem."""
    with _runner() as runner:
        report = runner.audit_verify(expect_head=expect_head or ())
    if as_json:
        _print_json({"ok": report.ok, "checked": report.checked, "head": report.head, "head_seq": report.head_seq,
                     "keyed": report.keyed, "keyed_from": report.keyed_from, "kept_heads": report.kept_heads,
                     "first_bad_seq": report.first_bad_seq, "problem": report.problem})
    elif report.ok:
        keyed = ""
        if report.keyed_from is not None:
            keyed = f"; keyed with HITL_AUDIT_KEY from entry {report.keyed_from}"
            if report.keyed_from > 1:
                keyed += f"; entries 1..{report.keyed_from - 1} before it are hash-chained only"
        kept = f"; {report.kept_heads} kept head{'s' if report.kept_heads != 1 else ''} found in the chain" if expect_head else ""
        out.print(f"audit log intact: {report.checked} entries, head {report.head_seq}:{report.head}{keyed}{kept}")
    if not report.ok:
        _fail(f"audit log broken: {report.problem}")


@audit_app.command("head")
def audit_head(as_json: JsonFlag = False) -> None:
    """Print the log's head (SEQ:HASH) to keep where the database's writers cannot write; --json
    prints one line (with the time) to append to a file, e.g. from cron."""
    with _runner() as runner:
        head = runner.audit_head()
    if as_json:  # one line: `>> heads.jsonl` keeps JSON Lines, and a line is an --expect-head value
        typer.echo(json.dumps({"seq": head.seq, "hash": head.hash, "head": str(head),
                               "at": datetime.now(UTC).isoformat(timespec="seconds")}))
    else:
        typer.echo(str(head))


@audit_app.command("export")
def audit_export(
    output: Annotated[Path | None, typer.Option("--out", help="File to write (default: standard output).")] = None,
    thread: Annotated[str | None, typer.Option("--thread", help="Only this thread's entries.")] = None,
) -> None:
    """Write the audit log as JSON Lines."""
    with _runner() as runner:
        if output is None:
            runner.audit_export(sys.stdout, thread_id=thread)
            return
        with output.open("w") as f:
            count = runner.audit_export(f, thread_id=thread)
    typer.echo(f"{count} entries written to {output}", err=True)


@app.command()
def feedback(
    thread: Annotated[str | None, typer.Argument(help="The finished thread to rate (omit with --list).")] = None,
    score: Annotated[float | None, typer.Option("--score", min=0.0, max=1.0, help="0 (bad) to 1 (good).")] = None,
    comment: CommentOpt = None,
    actor: ActorOpt = None,
    key: Annotated[str, typer.Option("--key", help="What is rated.")] = "helpfulness",
    list_: Annotated[bool, typer.Option("--list", help="List ratings instead.")] = False,
    workflow: Annotated[str | None, typer.Option("--workflow", help="With --list: only this workflow.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Rate a finished thread's output, or list ratings per workflow."""
    with _runner() as runner:
        if list_:
            items = runner.feedback_list(workflow=workflow)
            if as_json:
                _print_json([fb.model_dump(mode="json") for fb in items])
            for fb in [] if as_json else items:
                out.print(f"{fb.at:%Y-%m-%d %H:%M}  {fb.workflow}  {fb.thread_id}  {fb.key}={fb.score:g}  {fb.comment or ''}")
            return
        if thread is None or score is None:
            _fail("give a THREAD and --score (or --list)")
        fb = runner.feedback(thread, score, comment=comment, actor=_actor(actor), key=key)
    if as_json:
        _print_json(fb.model_dump(mode="json"))
    else:
        out.print(f"recorded {fb.key}={fb.score:g} for thread {fb.thread_id}")


@app.command()
def workflows(as_json: JsonFlag = False) -> None:
    """The workflows this command knows (built-ins and those registered by --app)."""
    known = registered()
    if as_json:
        _print_json([{"name": w.name, "description": w.description} for w in known.values()])
        return
    for wf in sorted(known.values(), key=lambda w: w.name):
        out.print(f"[bold]{wf.name}[/bold]  {wf.description}")


@app.command()
def review(
    workflow: Annotated[str | None, typer.Option("--workflow", help="Only this workflow's reviews.")] = None,
    role: RoleOpt = None,
    actor: ActorOpt = None,
) -> None:
    """Decide everything pending at the terminal, one review after another."""
    from hitl_graphs.reviewer import ConsoleReviewer, review_pending

    if not sys.stdin.isatty():
        _fail("hitl review needs a terminal on standard input; use hitl approve/modify/reject in scripts")
    with _runner() as runner:
        count = review_pending(runner, ConsoleReviewer(out, actor=_actor(actor)), out, roles=tuple(_roles(role)),
                               workflow=workflow)
    out.print(f"{count} review(s) decided; nothing else is waiting" if count else "nothing is waiting for a decision")


@app.command()
def demo(
    scripted: Annotated[bool, typer.Option("--scripted", help="Take scripted decisions even at a terminal.")] = False,
) -> None:
    """A guided walk through the review patterns on the default database, offline."""
    from hitl_graphs.demo import run_demo

    interactive = sys.stdin.isatty() and not scripted
    with _runner() as runner:
        run_demo(runner, console=out, interactive=interactive)


token_app = typer.Typer(help="API tokens for `hitl serve`: who a request speaks for.", no_args_is_help=True)
app.add_typer(token_app, name="token")


@token_app.command("create")
def token_create(
    actor: Annotated[str, typer.Option("--actor", help="Who the token speaks for (the audit log records this name).")],
    role: Annotated[list[str] | None, typer.Option("--role", help="A role the token holds (repeatable).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a token and print it once: only its hash is stored, so keep it now."""
    with _runner() as runner:
        issued = runner.tokens.create(actor, roles=role or ())
    if as_json:
        sys.stdout.write(issued.model_dump_json() + "\n")
    else:
        out.print(f"token {issued.id} for {issued.actor} (roles: {', '.join(issued.roles) or 'none'}); "
                  "shown once, keep it now:", highlight=False)
        sys.stdout.write(issued.token + "\n")


@token_app.command("list")
def token_list(as_json: JsonFlag = False) -> None:
    """Every token (never its secret), revoked ones too."""
    with _runner() as runner:
        tokens = runner.tokens.list()
    if as_json:
        _print_json([t.model_dump(mode="json") for t in tokens])
        return
    for t in tokens:
        state = f"revoked {t.revoked_at:%Y-%m-%d %H:%M}" if t.revoked_at else "live"
        out.print(f"{t.id}  {t.actor}  roles: {', '.join(t.roles) or 'none'}  created {t.created_at:%Y-%m-%d %H:%M}  {state}",
                  highlight=False)
    if not tokens:
        out.print("no tokens; create one with `hitl token create --actor NAME [--role R]`")


@token_app.command("revoke")
def token_revoke(token_id: Annotated[str, typer.Argument(help="The token's id (`hitl token list`).")]) -> None:
    """Revoke a token: requests carrying it are refused (401) from now on."""
    with _runner() as runner:
        info = runner.tokens.revoke(token_id)
    out.print(f"token {info.id} of {info.actor} is revoked", highlight=False)


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
) -> None:
    """Serve the HTTP API (`/api`, OpenAPI at `/openapi.json`) and the web inbox (`/`) on this database. Needs `hitl-graphs[web]`."""
    try:
        import uvicorn

        from hitl_graphs.server import create_app
    except ImportError as exc:
        _fail(f"hitl serve needs the web extra ({exc.name} is missing): pip install 'hitl-graphs[web]'")
    path = str(_opts.db) if _opts.db else str(default_db_path())
    uvicorn.run(create_app(db=path), host=host, port=port, log_level="warning")


def main() -> None:
    """Entry point of the `hitl` script."""
    _opts.started = _started.process_started()
    try:
        app()
    except HitlError as exc:  # refused while building the request (a decision's own checks)
        typer.echo(f"error: {exc}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()

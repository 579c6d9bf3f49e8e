"""Keeping threads moving and honest: recover, retry, sweep, audit, feedback, demo."""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from hitl_graphs.commands._base import (
    ActorOpt,
    CommentOpt,
    JsonFlag,
    actor_of,
    app,
    emit_view,
    fail,
    open_runner,
    out,
    print_json,
    print_view,
    view_json,
)


@app.command()
def recover(as_json: JsonFlag = False) -> None:
    """Finish what crashed processes left: apply recorded decisions and continue stalled runs."""
    with open_runner() as runner:
        views = runner.recover()
    if as_json:
        print_json([view_json(v) for v in views])
        return
    if not views:
        out.print("nothing to recover")
    for view in views:
        print_view(view)


@app.command()
def retry(
    thread: str,
    actor: ActorOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Run a failed thread's failed step again (also after `hitl recover` gave up on it)."""
    with open_runner() as runner:
        emit_view(runner.retry(thread, actor=actor_of(actor)), as_json)


@app.command()
def sweep(
    every: Annotated[float | None, typer.Option("--every", help="Keep sweeping, every this many seconds.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Apply the default decision of every review whose deadline has passed (safe in many processes)."""
    while True:
        with open_runner() as runner:
            views = runner.sweep()
        if as_json:
            print_json([view_json(v) for v in views])
        elif views or every is None:
            out.print(f"{len(views)} expired review(s) resolved with their default decision")
            for view in views:
                print_view(view)
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
    with open_runner() as runner:
        report = runner.audit_verify(expect_head=expect_head or ())
    if as_json:
        print_json({"ok": report.ok, "checked": report.checked, "head": report.head, "head_seq": report.head_seq,
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
        fail(f"audit log broken: {report.problem}")


@audit_app.command("head")
def audit_head(as_json: JsonFlag = False) -> None:
    """Print the log's head (SEQ:HASH) to keep where the database's writers cannot write; --json
    prints one line (with the time) to append to a file, e.g. from cron."""
    with open_runner() as runner:
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
    with open_runner() as runner:
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
    with open_runner() as runner:
        if list_:
            items = runner.feedback_list(workflow=workflow)
            if as_json:
                print_json([fb.model_dump(mode="json") for fb in items])
            for fb in [] if as_json else items:
                out.print(f"{fb.at:%Y-%m-%d %H:%M}  {fb.workflow}  {fb.thread_id}  {fb.key}={fb.score:g}  {fb.comment or ''}")
            return
        if thread is None or score is None:
            fail("give a THREAD and --score (or --list)")
        fb = runner.feedback(thread, score, comment=comment, actor=actor_of(actor), key=key)
    if as_json:
        print_json(fb.model_dump(mode="json"))
    else:
        out.print(f"recorded {fb.key}={fb.score:g} for thread {fb.thread_id}")


@app.command()
def demo(
    scripted: Annotated[bool, typer.Option("--scripted", help="Take scripted decisions even at a terminal.")] = False,
) -> None:
    """A guided walk through the review patterns on the default database, offline."""
    from hitl_graphs.demo import run_demo

    interactive = sys.stdin.isatty() and not scripted
    with open_runner(create=True) as runner:
        run_demo(runner, console=out, interactive=interactive)

"""`hitl db migrate` and `hitl worker`: the commands that keep a deployment running, not a review.

    hitl --db postgresql://hitl@db:5432/hitl db migrate     # at every deploy; many at once is fine
    hitl --db postgresql://hitl@db:5432/hitl worker --concurrency 4

`hitl worker` applies what others decided with `--defer` (or `Runner.decide`), the decisions
crashed runs left, and the default decisions of expired reviews, in a loop (see
`hitl_graphs.runtime.working`). On PostgreSQL it sleeps until the database announces work; on SQLite
it polls. SIGTERM or Ctrl-C stops it after the thread it is running.

Registered on the main app by `register_ops(app)` (`hitl_graphs.commands`).
"""

from __future__ import annotations

import json
import multiprocessing
import signal
import sys
import threading
from types import FrameType
from typing import Annotated

import typer

from hitl_graphs.commands._base import guard, open_runner, opts
from hitl_graphs.locations import default_location
from hitl_graphs.reviews import ThreadView
from hitl_graphs.storage import migrate

db_app = typer.Typer(help="The database's schema.", no_args_is_help=True)


@db_app.command("migrate")
def db_migrate() -> None:
    """Create or upgrade the schema (ours and LangGraph's) on SQLite or PostgreSQL; a no-op when up
    to date. Safe from many processes at once: run it at every deploy, or at each worker's start."""

    location = opts.db or default_location()
    guard(lambda: migrate(location))
    typer.echo(f"schema up to date at {_shown(location)}")


def worker(
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Worker processes to run (each one thread at a time).")] = 1,
    once: Annotated[bool, typer.Option("--once", help="Apply what waits now, then exit.")] = False,
    lease: Annotated[float, typer.Option(
        "--lease", min=1.0, help="Seconds a run is trusted before another worker takes its thread over as crashed; "
                                 "longer than your longest run between two pauses.")] = 600.0,
    idle: Annotated[float, typer.Option("--idle", min=0.1, help="Seconds between passes of `recover` when idle.")] = 30.0,
    poll: Annotated[float, typer.Option("--poll", min=0.05, help="Seconds between looks on SQLite (PostgreSQL wakes on NOTIFY).")] = 1.0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per thread moved on.")] = False,
) -> None:
    """Apply deferred decisions (`hitl approve --defer`), decisions crashed runs left, and expired
    deadlines, in a loop: on PostgreSQL it takes work with SKIP LOCKED and wakes on NOTIFY."""
    if concurrency == 1 or once:
        _work(once=once, lease=lease, idle=idle, poll=poll, as_json=as_json)
        return
    fork = multiprocessing.get_context("fork")  # children keep --db, --app and the registry as parsed
    children = [fork.Process(target=_work, kwargs={"once": False, "lease": lease, "idle": idle, "poll": poll,
                                                   "as_json": as_json}, name=f"hitl worker {i}")
                for i in range(concurrency)]
    for child in children:
        child.start()

    def forward(signum: int, frame: FrameType | None) -> None:
        for child in children:
            if child.pid is not None and child.is_alive():
                child.terminate()  # SIGTERM: each stops after its current thread

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for child in children:
        child.join()
    if any(child.exitcode not in (0, -signal.SIGTERM) for child in children):
        raise typer.Exit(1)


def _work(*, once: bool, lease: float, idle: float, poll: float, as_json: bool) -> None:

    stop = threading.Event()

    def stopping(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)

    def done(view: ThreadView) -> None:
        if as_json:
            sys.stdout.write(json.dumps(view.model_dump(mode="json"), default=str) + "\n")
        else:
            ended = f" ({view.outcome})" if view.outcome else ""
            sys.stdout.write(f"thread {view.thread_id} · {view.workflow} · {view.status}{ended}\n")
        sys.stdout.flush()

    with open_runner() as runner:
        runner.lease = lease
        sys.stderr.write(f"hitl worker ready on {runner.store.location}\n")  # listening: work announced from now on wakes it
        sys.stderr.flush()
        runner.work(once=once, idle=idle, poll=poll, stop=stop, on_done=done)


def _shown(location: str) -> str:
    """A location fit to print: a URL without its password."""
    import re

    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", location)


def register_ops(app: typer.Typer) -> None:
    """Add `hitl db ...` and `hitl worker` to the main app."""
    app.add_typer(db_app, name="db")
    app.command("worker")(worker)

"""`hitl`: start, list, inspect and decide paused threads from a shell.

Every command opens the database (`--db`, else `$HITL_DB`, else `checkpoints/hitl.sqlite` in
the project root, see `hitl_graphs.locations`), does one thing and exits, so each call may be a
different process, hours apart. `--json` gives machine-readable output. A refused request exits 1
with one line on stderr and changes nothing. The commands live in `hitl_graphs.commands`.

    hitl run email --input '{"to": "ana@example.com", "topic": "lunch"}'
    hitl pending
    hitl modify THREAD --patch '{"subject": "Lunch on Friday?"}' --actor ana
    hitl history THREAD
"""

from __future__ import annotations

import sys

import typer

from hitl_graphs import _started
from hitl_graphs.commands import app
from hitl_graphs.commands._base import opts
from hitl_graphs.errors import HitlError

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the `hitl` script."""
    opts.started = _started.process_started()
    try:
        app()
    except HitlError as exc:  # refused while building the request (a decision's own checks)
        typer.echo(f"error: {exc}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()

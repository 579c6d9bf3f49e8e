"""`hitl webhook ...` and `hitl notify`: configure webhooks and deliver notifications from a shell.

Registered onto the main `hitl` app (`hitl_graphs.cli`) as a group without a name, so its
commands sit at the top level. The database is the one the main app's `--db` names.

    hitl webhook add https://hooks.slack.com/services/... --events review --slack
    hitl notify --every 5
"""

from __future__ import annotations

import signal
import sys
from typing import Annotated

import typer
from rich.console import Console

from hitl_graphs.commands._base import app, fail, open_runner, print_json
from hitl_graphs.errors import HitlError
from hitl_graphs.notify import BASE_URL_ENV, Notifier, PassReport

webhook_app = typer.Typer(help="Webhooks: where `hitl notify` and `hitl serve` send new reviews and decisions.",
                          no_args_is_help=True)
app.add_typer(webhook_app, name="webhook")
out = Console(highlight=False, soft_wrap=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


@webhook_app.command("add")
def webhook_add(
    url: Annotated[str, typer.Argument(help="Where to POST (http:// or https://).")],
    events: Annotated[str, typer.Option("--events", help="Which events, comma-separated: review, decided.")] = "review,decided",
    workflow: Annotated[str | None, typer.Option("--workflow", help="Only threads of this workflow.")] = None,
    slack: Annotated[bool, typer.Option("--slack", help="Send a Slack-compatible body ({\"text\": ...}).")] = False,
    secret: Annotated[str | None, typer.Option("--secret", help="The HMAC secret (16+ characters; default: generated).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Add a webhook; it is sent what happens from now on. Prints its secret once."""
    with open_runner(create=True) as runner:
        try:
            added = runner.webhooks.add(url, events=events, workflow=workflow,
                                        format="slack" if slack else "json", secret=secret)
        except HitlError as exc:
            fail(str(exc))
    if as_json:
        sys.stdout.write(added.model_dump_json() + "\n")
        return
    scope = f"workflow {added.workflow}" if added.workflow else "every workflow"
    out.print(f"webhook {added.id}: {', '.join(added.events)} of {scope} to {added.url} ({added.format}); "
              f"deliveries are signed (X-Hitl-Signature: sha256=HMAC of the body) with this secret, shown once:")
    sys.stdout.write(added.secret + "\n")


@webhook_app.command("list")
def webhook_list(
    all_: Annotated[bool, typer.Option("--all", help="Removed webhooks too.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """The webhooks (never their secrets), oldest first."""
    with open_runner() as runner:
        hooks = runner.webhooks.list(disabled=all_)
    if as_json:
        print_json([h.model_dump(mode="json") for h in hooks])
        return
    for h in hooks:
        state = f"removed {h.disabled_at:%Y-%m-%d %H:%M}" if h.disabled_at else f"at entry {h.cursor}"
        out.print(f"{h.id}  {h.url}  {','.join(h.events)}  {h.workflow or 'any workflow'}  {h.format}  {state}")
    if not hooks:
        out.print("no webhooks; add one with `hitl webhook add URL [--events review,decided] [--workflow W]`")


@webhook_app.command("remove")
def webhook_remove(webhook_id: Annotated[str, typer.Argument(help="The id (`hitl webhook list`).")]) -> None:
    """Stop delivering to a webhook (its delivery log stays)."""
    with open_runner() as runner:
        try:
            removed = runner.webhooks.remove(webhook_id)
        except HitlError as exc:
            fail(str(exc))
    out.print(f"webhook {removed.id} ({removed.url}) is removed")


@webhook_app.command("deliveries")
def webhook_deliveries(
    webhook_id: Annotated[str | None, typer.Argument(help="Only this webhook's.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many attempts, newest first.")] = 50,
    as_json: JsonFlag = False,
) -> None:
    """The delivery log, newest first: every attempt with its status code or error."""
    with open_runner() as runner:
        try:
            rows = runner.webhooks.deliveries(webhook_id, limit=limit)
        except HitlError as exc:
            fail(str(exc))
    if as_json:
        print_json([r.model_dump(mode="json") for r in rows])
        return
    for r in rows:
        result = f"{r.status_code}" if r.status_code is not None else ""
        result += f" {r.error}" if r.error and r.outcome != "delivered" else ""
        retry = f", next try {r.next_retry:%H:%M:%S}" if r.next_retry else ""
        out.print(f"{r.at:%Y-%m-%d %H:%M:%S}  {r.delivery_id}  attempt {r.attempt}  {r.outcome}  {result.strip()}{retry}")
    if not rows:
        out.print("no deliveries yet; `hitl notify` (or `hitl serve`) sends them")


def _report(report: PassReport) -> str:
    return (f"delivered {report.delivered}, failed {report.failed} (retried later), gave up {report.gave_up}"
            + (f", {report.busy} webhook(s) held by another deliverer" if report.busy else "")
            + (f", {report.waiting} waiting for their next attempt" if report.waiting else ""))


@app.command()
def notify(
    every: Annotated[float | None, typer.Option("--every", min=0.1, help="Keep delivering, a pass every SECONDS.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", envvar=BASE_URL_ENV,
                                                 help="Where people open `hitl serve`, for links.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Deliver new reviews and decisions to the webhooks: one pass, or a loop with --every.

    Several deliverers at once (`hitl serve` does it too) share the webhooks without sending twice."""
    with open_runner() as runner:
        notifier = Notifier(runner, base_url=base_url)
        if every is None:
            report = notifier.deliver()
            if as_json:
                sys.stdout.write(report.model_dump_json() + "\n")
            else:
                out.print(_report(report))
            return
        signal.signal(signal.SIGTERM, lambda *_: notifier.stopping.set())  # finish the send under way, then stop
        try:
            notifier.run(every=every)
        except KeyboardInterrupt:
            notifier.stopping.set()

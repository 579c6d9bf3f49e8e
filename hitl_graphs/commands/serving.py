"""The HTTP side: API tokens (`hitl token ...`) and `hitl serve`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from hitl_graphs.commands._base import (
    JsonFlag,
    app,
    fail,
    open_runner,
    opts,
    out,
    print_json,
)
from hitl_graphs.locations import default_location

token_app = typer.Typer(help="API tokens for `hitl serve`: who a request speaks for.", no_args_is_help=True)
app.add_typer(token_app, name="token")


@token_app.command("create")
def token_create(
    actor: Annotated[str, typer.Option("--actor", help="Who the token speaks for (the audit log records this name).")],
    role: Annotated[list[str] | None, typer.Option("--role", help="A role the token holds (repeatable).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a token and print it once: only its hash is stored, so keep it now."""
    with open_runner(create=True) as runner:
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
    with open_runner() as runner:
        tokens = runner.tokens.list()
    if as_json:
        print_json([t.model_dump(mode="json") for t in tokens])
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
    with open_runner() as runner:
        info = runner.tokens.revoke(token_id)
    out.print(f"token {info.id} of {info.actor} is revoked", highlight=False)


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
    cors_origin: Annotated[list[str] | None, typer.Option(
        "--cors-origin", help="A browser origin (Agent Inbox's) that may call the LangGraph API at /langgraph "
                              "(repeatable; default $HITL_CORS_ORIGINS, comma-separated).")] = None,
) -> None:
    """Serve the HTTP API (`/api`, OpenAPI at `/openapi.json`), the web inbox (`/`) and the LangGraph Server API subset
    for langgraph-sdk and Agent Inbox (`/langgraph`) on this database. Needs `hitl-graphs[web]`."""
    try:
        import uvicorn

        from hitl_graphs.server import create_app
    except ImportError as exc:
        fail(f"hitl serve needs the web extra ({exc.name} is missing): pip install 'hitl-graphs[web]'")
    path = opts.db or default_location()
    # ws="none": nothing here speaks WebSocket, and uvicorn would otherwise import a websockets library;
    # loop and http stay "auto": uvloop and httptools (the web extra) when installed
    uvicorn.run(create_app(db=path, cors_origins=cors_origin or None), host=host, port=port, log_level="warning",
                ws="none")

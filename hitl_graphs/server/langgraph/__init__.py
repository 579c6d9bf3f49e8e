"""A LangGraph-Server-compatible API under `/langgraph`, so LangGraph's own clients drive our
threads: the official `langgraph-sdk` (`get_client(url=".../langgraph", api_key=TOKEN)`) and
Agent Inbox in a browser (CORS, for the origins configured).

It is the subset those clients use for human-in-the-loop, not LangGraph Server (whose
`langgraph-api` is not open source and no dependency of ours): assistants (our workflows),
threads (create, get, search for `interrupted`), state (get; update only to end a thread), and
runs (`runs`, `runs/wait`, `runs/stream`) that start a thread or answer its interrupts with
`command.resume`. The routes are in `routes`, the shapes in `shapes`, the reading of a resume
value in `resume`, Agent Inbox's formats in `hitl_graphs.interop.agent_inbox`.

It is mounted as an app of its own so that its refusals have LangGraph Server's shape, `{"detail":
message}` with the HTTP status of our `/api` (409 for a review already decided, ...), which the
SDK raises as `ConflictError` and friends; and so that CORS covers only this API, never the web
inbox's cookie session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from starlette.datastructures import State
from starlette.exceptions import HTTPException

from hitl_graphs.errors import HitlError
from hitl_graphs.server.langgraph import routes

PREFIX = "/langgraph"
CORS_ENV = "HITL_CORS_ORIGINS"
"""Comma-separated origins a browser client (Agent Inbox) may call `/langgraph` from."""


def create_langgraph_app(state: State, *, status_of: Callable[[HitlError], int], origins: Sequence[str] = ()) -> FastAPI:
    """The LangGraph API as an app to mount at `PREFIX`, sharing `state` (the runner) with the
    app that mounts it. `status_of` maps our refusals to HTTP statuses (the same as `/api`);
    `origins` are the browser origins allowed (CORS), none by default.

    Example:
        >>> from hitl_graphs.server import create_app
        >>> app = create_app(db=":memory:", workflows=[], cors_origins=["https://dev.agentinbox.ai"])
        >>> [getattr(r, "path", None) for r in app.routes if getattr(r, "path", None) == "/langgraph"]
        ['/langgraph']
    """
    app = FastAPI(title="hitl_graphs: the LangGraph Server API subset", version="1",
                  description="What langgraph-sdk and Agent Inbox call for human-in-the-loop, on our threads.")
    app.state = state
    app.state.langgraph_created = {}
    app.include_router(routes.router)
    if origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(origins), allow_methods=["GET", "POST", "OPTIONS"],
                           allow_headers=["x-api-key", "authorization", "content-type", "last-event-id"],
                           expose_headers=["content-location", "location"], max_age=600)

    def detail(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse({"detail": message}, status_code=status, headers=headers)

    @app.exception_handler(HitlError)
    async def refused(request: Request, exc: HitlError) -> JSONResponse:
        return detail(status_of(exc), str(exc))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return detail(exc.status_code, str(exc.detail), dict(exc.headers) if exc.headers else None)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        where = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body') or 'body'}: {e.get('msg')}"
                          for e in exc.errors()[:5])
        return detail(422, where)

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        return detail(500, f"the graph raised {type(exc).__name__}: {exc}")

    return app


def origins_from_env(value: str | None) -> list[str]:
    """`$HITL_CORS_ORIGINS` as a list ("a, b" -> ["a", "b"])."""
    return [o.strip().rstrip("/") for o in (value or "").split(",") if o.strip()]

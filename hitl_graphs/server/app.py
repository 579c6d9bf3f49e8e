"""The FastAPI application `hitl serve` runs: the JSON API, the web inbox, the error mapping, the
runner's life.

Every refusal the library raises (`hitl_graphs.errors`) becomes one HTTP status and a `Problem`
body (`{"error": code, "detail": message}`); a refused request changed nothing, as in the CLI.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from hitl_graphs.errors import (
    AlreadyDecidedError,
    DatabaseBusyError,
    DecisionError,
    HitlError,
    InvalidDecisionError,
    NoPendingReviewError,
    PermissionDeniedError,
    ReviewExpiredError,
    ReviewNotPendingError,
    StaleReviewError,
    ThreadError,
    UnknownReviewError,
    UnknownThreadError,
    UnknownWorkflowError,
)
from hitl_graphs.notify import BASE_URL_ENV, Notifier
from hitl_graphs.registry import Workflow
from hitl_graphs.runtime.runner import Runner
from hitl_graphs.server import api, web
from hitl_graphs.server.langgraph import CORS_ENV, PREFIX, create_langgraph_app, origins_from_env

STATUS: tuple[tuple[type[HitlError], int], ...] = (
    (UnknownThreadError, 404),
    (UnknownReviewError, 404),
    (UnknownWorkflowError, 404),
    (PermissionDeniedError, 403),
    (AlreadyDecidedError, 409),
    (ReviewExpiredError, 409),
    (StaleReviewError, 409),
    (ReviewNotPendingError, 409),
    (NoPendingReviewError, 409),
    (ThreadError, 409),
    (InvalidDecisionError, 422),
    (DecisionError, 422),
    (DatabaseBusyError, 503),
)
"""The first entry the error is an instance of decides (subclasses first)."""


def status_of(exc: HitlError) -> int:
    return next((code for kind, code in STATUS if isinstance(exc, kind)), 422)


def _code(exc: BaseException) -> str:
    name = type(exc).__name__.removesuffix("Error")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def problem(status: int, error: str, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error, "detail": detail}, status_code=status, headers=headers)


def create_app(
    runner: Runner | None = None,
    *,
    db: str | None = None,
    workflows: Iterable[Workflow] | None = None,
    poll: float = 0.5,
    notify_every: float | None = 2.0,
    base_url: str | None = None,
    cors_origins: Iterable[str] | None = None,
) -> FastAPI:
    """The server's app, on `runner` (kept open by the caller) or on a runner it opens on `db`
    (default `$HITL_DB`, else `checkpoints/hitl.sqlite`) for its lifetime.

    `poll`: seconds between reads of the history for `/api/events` when nothing is new.
    `notify_every`: seconds between passes of the webhook deliverer that runs while the app
    does (`hitl_graphs.notify`); None runs none. `base_url`: where people open this server,
    for the links in notifications (default `$HITL_BASE_URL`). `cors_origins`: the browser
    origins (Agent Inbox's) that may call the LangGraph API at `/langgraph` (default
    `$HITL_CORS_ORIGINS`, comma-separated; none).

    Example:
        >>> app = create_app(db=":memory:", workflows=[])
        >>> sorted(app.openapi()["paths"])[:2]
        ['/api/events', '/api/reviews']
    """

    @asynccontextmanager
    async def notifying(on: Runner) -> AsyncIterator[None]:
        if notify_every is None:
            yield
            return
        notifier = Notifier(on, base_url=base_url or os.environ.get(BASE_URL_ENV) or None)
        task = asyncio.create_task(asyncio.to_thread(notifier.run, every=notify_every))
        try:
            yield
        finally:
            notifier.stopping.set()  # the pass under way ends after the entry it is sending
            await task

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if runner is not None:
            app.state.runner = runner
            async with notifying(runner):
                yield
            return
        with Runner.open(db, workflows) as opened:
            app.state.runner = opened
            async with notifying(opened):
                yield

    app = FastAPI(title="hitl_graphs", version="1", lifespan=lifespan,
                  description="Human-in-the-loop reviews of LangGraph threads: list, inspect, decide.")
    app.state.poll = poll
    if runner is not None:
        app.state.runner = runner
    app.include_router(api.router)
    web.install(app)  # the web inbox at `/`
    origins = list(cors_origins) if cors_origins is not None else origins_from_env(os.environ.get(CORS_ENV))
    app.mount(PREFIX, create_langgraph_app(app.state, status_of=status_of, origins=origins))  # langgraph-sdk, Agent Inbox

    @app.exception_handler(HitlError)
    async def refused(request: Request, exc: HitlError) -> JSONResponse:
        return problem(status_of(exc), _code(exc), str(exc))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        codes = {400: "bad_request", 401: "not_authenticated", 403: "permission_denied", 404: "not_found",
                 405: "method_not_allowed"}
        return problem(exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail),
                       headers=dict(exc.headers) if exc.headers else None)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return problem(400, "malformed_json", "the body is not valid JSON")
        where = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body') or 'body'}: {e.get('msg')}"
                          for e in errors[:5])
        return problem(422, "invalid_request", where)

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        # a node of the user's graph raised: the thread is marked failed (see `hitl show`), say so
        return problem(500, "graph_error", f"the graph raised {type(exc).__name__}: {exc}")

    return app

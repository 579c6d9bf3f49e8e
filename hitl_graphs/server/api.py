"""The JSON API under `/api`: the same operations and checks as the CLI, with the actor and
roles taken from the caller's token."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import StreamingResponse

from hitl_graphs.identity import Principal
from hitl_graphs.reviews import HistoryEntry, ReviewRequest, ThreadView
from hitl_graphs.runtime.runner import Runner
from hitl_graphs.server.auth import authenticate, current_runner
from hitl_graphs.server.bodies import DecisionBody, Problem, StartThread
from hitl_graphs.server.feed import start_cursor, stream

Caller = Annotated[Principal, Depends(authenticate)]
Run = Annotated[Runner, Depends(current_runner)]

REFUSALS: dict[int | str, dict[str, Any]] = {
    400: {"model": Problem, "description": "The body is not valid JSON."},
    401: {"model": Problem, "description": "No token, or one the server does not know (or revoked)."},
    403: {"model": Problem, "description": "The token's roles do not allow this (a role, or separation of duties)."},
    404: {"model": Problem, "description": "No such thread, review or workflow."},
    409: {"model": Problem, "description": "Already decided, not pending, expired, stale, or the thread is busy."},
    422: {"model": Problem, "description": "A body, patch or decision that does not fit."},
    503: {"model": Problem, "description": "The database is busy; nothing was kept, retrying is safe."},
}

router = APIRouter(prefix="/api", responses=REFUSALS)


@router.get("/reviews", response_model=list[ReviewRequest], summary="Pending reviews this token may decide")
async def reviews(
    caller: Caller,
    runner: Run,
    workflow: str | None = None,
    role: Annotated[str | None, Query(description="Only what this role (one the token holds) may decide.")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=2**62)] = 0,
) -> list[ReviewRequest]:
    """Oldest first: the reviews that need no role or one of the token's roles (the same fields as
    `hitl pending --json`)."""
    if role is not None and role not in caller.roles:
        raise HTTPException(403, f"this token does not hold role {role!r} (it holds: {', '.join(caller.roles) or 'none'})")
    roles = [role] if role is not None else list(caller.roles)
    return await runner.apending(workflow=workflow, roles=roles, limit=limit, offset=offset)


@router.get("/threads/{thread_id}", response_model=ThreadView, summary="A thread (as `hitl show --json`)")
async def thread(thread_id: str, caller: Caller, runner: Run) -> ThreadView:
    return await runner.ashow(thread_id)


@router.get("/threads/{thread_id}/history", response_model=list[HistoryEntry], summary="A thread's history")
async def history(thread_id: str, caller: Caller, runner: Run) -> list[HistoryEntry]:
    return await runner.ahistory(thread_id)


@router.post("/threads", response_model=ThreadView, status_code=201, summary="Start a thread")
async def start(body: StartThread, caller: Caller, runner: Run) -> ThreadView:
    """Runs the workflow to its first review or its end; the token's actor started it (reviews
    with separation of duties refuse that actor's decision)."""
    return await runner.astart(body.workflow, body.input, thread_id=body.thread_id, actor=caller.actor)


@router.post("/threads/{thread_id}/decision", response_model=ThreadView, summary="Decide a pending review")
async def decide(thread_id: str, body: DecisionBody, caller: Caller, runner: Run) -> ThreadView:
    """The same checks as the CLI: the review must be pending, the kind allowed, the patch fit, the
    token's roles sufficient, the deadline not passed, and (with `seen`) the payload unchanged.
    Exactly one of several racing decisions wins; the others get 409 naming who won."""
    return await runner.aresume(thread_id, body.decision(caller.actor), review_id=body.review_id, roles=caller.roles)


@router.get("/events", summary="Server-Sent Events: new reviews and decisions",
            response_class=StreamingResponse, responses={200: {"content": {"text/event-stream": {}}}})
async def events(
    request: Request,
    caller: Caller,
    runner: Run,
    after: Annotated[int | None, Query(ge=0, le=2**62, description="Start after this event id (default: from now on).")] = None,
) -> StreamingResponse:
    """A `review` event for each new pending review the token may decide and a `decided` event for
    each decision, each with an `id` (resume with `Last-Event-ID` or `?after=`). Read from the
    history, which is written with the change itself: nothing is missed across restarts."""
    cursor = start_cursor(request, runner, after)
    return stream(runner, caller.roles, cursor, request.app.state.poll, request.is_disconnected)

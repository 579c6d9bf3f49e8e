"""The LangGraph Server routes `langgraph-sdk` and Agent Inbox call for human-in-the-loop.

Every route names its caller (`authenticate`: the token in `x-api-key`, as the SDK sends it, or
`Authorization: Bearer`), and every resume is the runner's (`aresume`, `astream_resume`): the
claim (one winner), the roles, the deadline and the audit entry are those of the CLI, the JSON
API and the web inbox. There is no run queue: a run happens in the request that asks for it
(`runs`, `runs/wait` and `runs/stream` alike), so `client.runs.create` returns a run that has
already paused again or ended.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import StreamingResponse
from langgraph.types import StreamMode

from hitl_graphs.decisions import Decision
from hitl_graphs.errors import PermissionDeniedError, UnknownThreadError
from hitl_graphs.identity import Principal
from hitl_graphs.reviews import ReviewRequest, ThreadView
from hitl_graphs.runtime.runner import Runner
from hitl_graphs.server.auth import authenticate, current_runner
from hitl_graphs.server.langgraph import resume, shapes
from hitl_graphs.server.langgraph.shapes import AssistantSearch, RunCreate, StateUpdate, ThreadCreate, ThreadSearch

Caller = Annotated[Principal, Depends(authenticate)]
Run = Annotated[Runner, Depends(current_runner)]

router = APIRouter()

PAGE = 500


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _created(request: Request) -> dict[str, dict[str, Any]]:
    """Threads made by `POST /threads` that have not run yet: LangGraph creates a thread before
    its first run, our ledger records one when it starts. Kept in memory until the first run."""
    created: dict[str, dict[str, Any]] = request.app.state.langgraph_created
    return created


@router.get("/info", summary="What this server is")
async def info() -> dict[str, Any]:
    return {"version": "hitl_graphs", "flags": {"assistants": True, "crons": False, "langsmith": False}}


@router.post("/assistants/search", summary="The workflows this server runs, as assistants")
async def assistants(body: AssistantSearch, caller: Caller, runner: Run) -> list[dict[str, Any]]:
    names = [n for n in runner.workflow_names() if body.graph_id in (None, n)]
    at = _now()
    return [shapes.assistant(n, runner.workflow(n).description, at) for n in names[body.offset:body.offset + body.limit]]


@router.get("/assistants/{assistant_id}", summary="One workflow, as an assistant")
async def assistant(assistant_id: str, caller: Caller, runner: Run) -> dict[str, Any]:
    return shapes.assistant(assistant_id, runner.workflow(assistant_id).description, _now())


@router.post("/threads", summary="Create a thread (it starts on its first run)")
async def create_thread(body: ThreadCreate, request: Request, caller: Caller, runner: Run) -> dict[str, Any]:
    thread_id = body.thread_id or str(uuid.uuid4())
    created = _created(request)
    if runner.workflow_of(thread_id) is not None or thread_id in created:
        if body.if_exists == "do_nothing":
            return await _thread(request, runner, thread_id)
        raise HTTPException(409, f"thread {thread_id!r} already exists; pick another id or pass if_exists='do_nothing'")
    created[thread_id] = shapes.created_thread(thread_id, dict(body.metadata), _now())
    return created[thread_id]


@router.get("/threads/{thread_id}", summary="A thread, with its interrupts")
async def get_thread(thread_id: str, request: Request, caller: Caller, runner: Run) -> dict[str, Any]:
    return await _thread(request, runner, thread_id)


@router.post("/threads/search", summary="Threads waiting for a person (status 'interrupted'), or by id")
async def search_threads(body: ThreadSearch, request: Request, caller: Caller, runner: Run) -> list[dict[str, Any]]:
    """`status="interrupted"` (or no status): the threads holding a review this token may decide,
    oldest first. With `ids`, those threads, of any status or the one asked."""
    if body.ids is not None:
        found = [await _thread(request, runner, t) for t in body.ids if await _known(request, runner, t)]
        found = [t for t in found if body.status in (None, t["status"])]
        return found[body.offset:body.offset + body.limit]
    if body.status not in (None, "interrupted"):
        raise HTTPException(422, f"this server lists threads waiting for a person: search with status='interrupted', "
                                 f"or pass ids=[...] to read threads of status {body.status!r}")
    waiting = await _waiting(runner, caller.roles, body.offset + body.limit)
    return [shapes.thread(await runner.ashow(t)) for t in waiting[body.offset:body.offset + body.limit]]


@router.get("/threads/{thread_id}/state", summary="A thread's values and pending interrupts")
async def get_state(thread_id: str, request: Request, caller: Caller, runner: Run) -> dict[str, Any]:
    if thread_id in _created(request):
        return shapes.unstarted_state(thread_id)
    return shapes.state(await runner.ashow(thread_id))


@router.post("/threads/{thread_id}/state", summary="End a thread (as_node '__end__'), as Agent Inbox's 'resolve'")
async def update_state(thread_id: str, body: StateUpdate, caller: Caller, runner: Run) -> dict[str, Any]:
    """Only what Agent Inbox sends to mark a thread resolved: `as_node="__end__"` with no values
    cancels it (nothing more runs; its reviews are cancelled, who did it is in the history). The
    caller must hold the role of each of its pending reviews. Writing arbitrary values is not
    served: they would skip every check a decision gets."""
    if body.as_node != "__end__" or body.values not in (None, {}, []):
        raise HTTPException(422, "update_state only ends a thread here (as_node='__end__', no values); to change "
                                 "what a review proposes, resume it with a modify decision (its patch is checked)")
    view = await runner.ashow(thread_id)
    barred = [r for r in view.reviews if r.required_role is not None and r.required_role not in caller.roles]
    if barred:
        raise PermissionDeniedError(f"review {barred[0].review_id!r} needs role {barred[0].required_role!r}, which this "
                                    "token does not hold; only who may decide every pending review may end the thread")
    await runner.acancel(thread_id, actor=caller.actor, reason="resolved through the LangGraph API")
    return {"checkpoint": shapes.checkpoint(thread_id)}


@router.post("/threads/{thread_id}/runs", summary="Run: resume with command.resume, or start with input")
async def create_run(thread_id: str, body: RunCreate, request: Request, caller: Caller, runner: Run) -> dict[str, Any]:
    view = await _run(request, runner, caller, thread_id, body)
    return shapes.run(str(uuid.uuid4()), view, body.assistant_id, _now())


@router.post("/threads/{thread_id}/runs/wait", summary="Run and return the values (with __interrupt__ if paused)")
async def wait_run(thread_id: str, body: RunCreate, request: Request, caller: Caller, runner: Run) -> dict[str, Any]:
    return shapes.wait_result(await _run(request, runner, caller, thread_id, body))


@router.post("/threads/{thread_id}/runs/stream", summary="Run, streaming its chunks as Server-Sent Events",
             response_class=StreamingResponse, responses={200: {"content": {"text/event-stream": {}}}})
async def stream_run(thread_id: str, body: RunCreate, request: Request, caller: Caller, runner: Run) -> StreamingResponse:
    """Events `metadata` (the run id), then one per chunk named by its mode (`values`, `updates`,
    `custom`, `messages`), then, if the run paused, its interrupts as `{"__interrupt__": [...]}`
    in `values` / `updates`; `error` if the graph raised. A refused resume is an HTTP error
    before any event, and nothing ran."""
    modes = _modes(body.stream_mode)
    run_id = str(uuid.uuid4())
    how = _check(body)
    if how == "start":
        workflow = _startable(request, runner, thread_id, body)
        chunks = runner.astream(workflow, body.input, thread_id=thread_id, actor=caller.actor, stream_mode=modes)
    else:
        answers = await _answers(runner, caller, thread_id, body)
        for ref, decision in answers[:-1]:
            await runner.aresume(thread_id, decision, review_id=ref, roles=caller.roles)
        ref, decision = answers[-1]
        chunks = runner.astream_resume(thread_id, decision, review_id=ref, roles=caller.roles, stream_mode=modes)
    iterator = aiter(chunks)
    try:  # a refusal raises here, before anything is written: an HTTP error, not an event
        first: Any = await anext(iterator)
    except StopAsyncIteration:
        first = None
    if how == "start":
        _created(request).pop(thread_id, None)

    async def events() -> AsyncIterator[str]:
        yield _sse("metadata", {"run_id": run_id, "attempt": 1})
        try:
            if first is not None:
                async for event in _chunk_events(first, modes):
                    yield event
                async for chunk in iterator:
                    async for event in _chunk_events(chunk, modes):
                        yield event
        except Exception as exc:  # the graph raised (the thread is marked failed) or a late refusal
            yield _sse("error", {"error": type(exc).__name__, "message": str(exc)})
            return
        finally:
            await chunks.aclose()   # a reader who left stops the run where it was; `hitl recover` goes on
        view: ThreadView = chunks.view
        if view.status == "paused":
            for mode in ("values", "updates"):
                if mode in modes:
                    yield _sse(mode, {"__interrupt__": [shapes.interrupt(r) for r in view.reviews]})

    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "Content-Location": f"/threads/{thread_id}/runs/{run_id}"})


async def _chunk_events(chunk: Any, modes: list[StreamMode]) -> AsyncIterator[str]:
    mode, payload = chunk
    if isinstance(payload, dict) and "__interrupt__" in payload:
        # LangGraph's interrupt names its own interrupt; the closing event names our reviews
        payload = {k: v for k, v in payload.items() if k != "__interrupt__"}
        if not payload:
            return
    yield _sse(mode, shapes.jsonable(payload))   # LangGraph's mode names are the SDK's event names


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, default=str)}\n\n"


def _modes(asked: str | Sequence[str]) -> list[StreamMode]:
    """The LangGraph stream modes for the SDK's (`messages-tuple` is LangGraph's `messages`)."""
    names = [asked] if isinstance(asked, str) else list(asked)
    unknown = [n for n in names if n not in shapes.STREAM_MODES]
    if unknown:
        raise HTTPException(422, f"stream_mode {unknown[0]!r} is not served; use {', '.join(shapes.STREAM_MODES)}")
    return list(dict.fromkeys(shapes.STREAM_MODES[n] for n in names))


def _check(body: RunCreate) -> str:
    """`resume` or `start`; what is not served is refused before anything runs."""
    for name in ("interrupt_before", "interrupt_after"):
        if getattr(body, name) is not None:
            raise HTTPException(422, f"{name} is not served: a workflow's pauses are its own (its gates or its compile options)")
    if body.command is not None:
        if body.command.update is not None or body.command.goto is not None:
            raise HTTPException(422, "command.update and command.goto are not served: they would change a thread past "
                                     "every check; answer the review with command.resume (a modify decision's patch is checked)")
        if body.command.resume is None:
            raise HTTPException(422, "command.resume is missing: send the decision, e.g. {\"kind\": \"approve\"}")
        if body.input is not None:
            raise HTTPException(422, "send either input (to start the thread) or command.resume (to answer it), not both")
        return "resume"
    if body.input is None:
        raise HTTPException(422, "a run needs input (to start the thread) or command.resume (to answer its interrupt)")
    return "start"


async def _answers(runner: Runner, caller: Principal, thread_id: str, body: RunCreate) -> list[tuple[str | None, Decision]]:
    assert body.command is not None
    view = await runner.ashow(thread_id)
    return resume.decisions(body.command.resume, view.reviews, actor=caller.actor)


def _startable(request: Request, runner: Runner, thread_id: str, body: RunCreate) -> str:
    """The workflow a first run starts: the thread must not have run yet."""
    if runner.workflow_of(thread_id) is not None:
        raise HTTPException(409, f"thread {thread_id!r} has already run; answer its interrupt with command.resume "
                                 "(a thread takes input once, when it starts)")
    if thread_id not in _created(request) and body.if_not_exists != "create":
        raise HTTPException(404, f"thread {thread_id!r} not found; create it first (POST /threads) or pass "
                                 "if_not_exists='create'")
    runner.workflow(body.assistant_id)  # an unknown workflow is refused before anything is written
    return body.assistant_id


async def _run(request: Request, runner: Runner, caller: Principal, thread_id: str, body: RunCreate) -> ThreadView:
    if _check(body) == "start":
        workflow = _startable(request, runner, thread_id, body)
        view = await runner.astart(workflow, body.input, thread_id=thread_id, actor=caller.actor)
        _created(request).pop(thread_id, None)
        return view
    views = [await runner.aresume(thread_id, decision, review_id=ref, roles=caller.roles)
             for ref, decision in await _answers(runner, caller, thread_id, body)]
    return views[-1]


async def _known(request: Request, runner: Runner, thread_id: str) -> bool:
    return thread_id in _created(request) or runner.workflow_of(thread_id) is not None


async def _thread(request: Request, runner: Runner, thread_id: str) -> dict[str, Any]:
    created = _created(request).get(thread_id)
    if created is not None:
        return created
    if runner.workflow_of(thread_id) is None:
        raise UnknownThreadError(f"thread {thread_id!r} not found")
    return shapes.thread(await runner.ashow(thread_id))


async def _waiting(runner: Runner, roles: Sequence[str], enough: int) -> list[str]:
    """Ids of the threads with a review these roles may decide, by their oldest such review: the
    first `enough` of them (the ledger's index is read page by page, never all of it for one page)."""
    threads: dict[str, None] = {}
    offset = 0
    while len(threads) < enough:
        page: list[ReviewRequest] = await runner.apending(roles=list(roles), limit=PAGE, offset=offset)
        threads.update(dict.fromkeys(r.thread_id for r in page))
        if len(page) < PAGE:
            break
        offset += PAGE
    return list(threads)

"""The web inbox at `/`: server-rendered pages (Jinja2) with one vendored script (htmx), served
by the same app as the JSON API and deciding through the same `Runner.aresume` checks.

Pages: `/login` (paste a token once), `/` (what waits for me, live), a review page (the payload
as a person reads it; approve, modify, reject...), a thread page (state and history), `/audit`
(verify the audit chain). The actor and roles of every decision come from the token behind the
session (`sessions.py`), never from a form field; every form that changes something carries the
session's CSRF value, checked before anything is read or written.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from fastapi.templating import Jinja2Templates
from pydantic import ValidationError
from starlette.datastructures import FormData

from hitl_graphs.errors import AuditError, HitlError, PatchError, UnknownThreadError
from hitl_graphs.identity import Principal, digest
from hitl_graphs.reviews import HistoryEntry, ReviewRequest, ThreadView
from hitl_graphs.runtime.runner import Runner
from hitl_graphs.server.auth import current_runner, runner_of
from hitl_graphs.server.bodies import DECISION_BODY
from hitl_graphs.server.feed import start_cursor, stream
from hitl_graphs.server.forms import GENERAL, Field, build_fields, field_for, read_patch
from hitl_graphs.server.present import ago, payload_view, pretty, requested, standing
from hitl_graphs.server.sessions import LIFETIME, LOGIN_COOKIE, SESSION_COOKIE, Session, Sessions, same

HERE = Path(__file__).parent
STATIC = HERE / "static"
templates = Jinja2Templates(directory=HERE / "templates")
templates.env.globals.update(ago=ago, pretty=pretty)

HEADERS = {
    # nothing is loaded from elsewhere, nothing runs inline, no page may be framed
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
KIND_FIELDS = {"approve": ("comment", "verify"), "modify": ("comment", "verify"), "reject": ("reason", "comment"),
               "respond": ("text", "comment"), "escalate": ("reason", "comment")}

router = APIRouter(include_in_schema=False)


class LoginRequired(Exception):
    """No live session (or its token was revoked): the handler sends the browser to `/login`."""


class CsrfRefused(Exception):
    """A form without the session's CSRF value: refused before anything is read or written."""


@dataclass(frozen=True, slots=True)
class Viewer:
    session: Session
    principal: Principal


def sessions_of(request: Request) -> Sessions:
    sessions: Sessions = request.app.state.sessions
    return sessions


async def viewer(request: Request) -> Viewer:
    """The logged-in person: the session from the cookie, its token checked again now."""
    sessions = sessions_of(request)
    session = sessions.get(request.cookies.get(SESSION_COOKIE))
    if session is None:
        raise LoginRequired("log in with your token")
    principal = await runner_of(request).tokens.aauthenticate_digest(session.token_digest)
    if principal is None:
        sessions.close(session.id)
        raise LoginRequired("your token was revoked; log in with a new one")
    return Viewer(session, principal)


Me = Annotated[Viewer, Depends(viewer)]
Run = Annotated[Runner, Depends(current_runner)]


async def csrf_form(request: Request, me: Viewer) -> FormData:
    """The submitted form, once its CSRF value matches the session's."""
    form = await request.form()
    token = form.get("csrf")
    if not same(token if isinstance(token, str) else request.headers.get("x-csrf-token"), me.session.csrf):
        raise CsrfRefused()
    return form


def page(request: Request, name: str, context: dict[str, Any], status: int = 200, me: Viewer | None = None) -> Response:
    ctx = {"me": me.principal if me else None, "csrf": me.session.csrf if me else None, **context}
    response = templates.TemplateResponse(request, name, ctx, status_code=status)
    response.headers.update(HEADERS)
    return response


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers=HEADERS)


def status_of(exc: HitlError) -> int:
    from hitl_graphs.server.app import STATUS  # app includes this router: imported when first needed

    return next((code for kind, code in STATUS if isinstance(exc, kind)), 422)


# -- login, logout ---------------------------------------------------------------------------------


@router.get("/login")
async def login_form(request: Request, why: str | None = None) -> Response:
    nonce = secrets.token_urlsafe(24)
    response = page(request, "login.html", {"nonce": nonce, "error": None, "why": why})
    response.set_cookie(LOGIN_COOKIE, nonce, max_age=900, path="/login", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


@router.post("/login")
async def login(request: Request, runner: Run) -> Response:
    form = await request.form()
    nonce, token = form.get("nonce"), str(form.get("token", "")).strip()
    cookie = request.cookies.get(LOGIN_COOKIE)
    if cookie is None or not same(nonce if isinstance(nonce, str) else None, cookie):
        return page(request, "login.html", {"nonce": cookie, "why": None, "error":
                    "this login form is out of date or did not come from this site; reload the page and paste the token again"},
                    status=403)
    if await runner.tokens.aauthenticate(token) is None:
        return page(request, "login.html", {"nonce": cookie, "why": None, "error":
                    "this token is not valid (unknown or revoked); create one with `hitl token create --actor NAME`"},
                    status=401)
    session = sessions_of(request).open(digest(token))
    response = redirect("/")
    response.set_cookie(SESSION_COOKIE, session.id, max_age=LIFETIME, path="/", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    response.delete_cookie(LOGIN_COOKIE, path="/login")
    return response


@router.post("/logout")
async def logout(request: Request, me: Me) -> Response:
    await csrf_form(request, me)
    sessions_of(request).close(me.session.id)
    response = redirect("/login?why=" + quote("you are logged out"))
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


# -- the inbox ---------------------------------------------------------------------------------------


async def _live(runner: Runner, me: Principal, workflow: str | None) -> dict[str, Any]:
    reviews = await runner.apending(workflow=workflow or None, roles=list(me.roles), limit=200)
    head = (await asyncio.to_thread(runner.audit_head)).seq
    recent = await asyncio.to_thread(runner.events_after, max(0, head - 60), limit=60)
    activity = [e for e in recent if e.event == "decided" or (
        e.event == "review_requested" and e.data.get("required_role") in (None, *me.roles))]
    return {"reviews": reviews, "activity": list(reversed(activity))[:12], "workflow": workflow or ""}


@router.get("/")
async def inbox(request: Request, me: Me, runner: Run, workflow: str | None = None) -> Response:
    everything = await runner.apending(roles=list(me.principal.roles), limit=500)
    names = sorted({r.workflow for r in everything} | ({workflow} if workflow else set()))
    return page(request, "inbox.html", {"workflows": names, **await _live(runner, me.principal, workflow)}, me=me)


@router.get("/inbox/live")
async def inbox_live(request: Request, me: Me, runner: Run, workflow: str | None = None) -> Response:
    """The part of the inbox htmx refreshes when `/inbox/events` says something changed."""
    return page(request, "_live.html", await _live(runner, me.principal, workflow), me=me)


@router.get("/inbox/events")
async def inbox_events(request: Request, me: Me, runner: Run) -> StreamingResponse:
    """The same feed as `/api/events`, for the session's roles: a browser's EventSource sends the
    session cookie but cannot send a bearer token, so the inbox follows this one (static/live.js)."""
    cursor = start_cursor(request, runner, None)
    return stream(runner, me.principal.roles, cursor, request.app.state.poll, request.is_disconnected)


# -- a thread, a review --------------------------------------------------------------------------------


async def _thread(runner: Runner, thread_id: str) -> tuple[ThreadView, list[HistoryEntry]] | None:
    try:
        return await runner.ashow(thread_id), await runner.ahistory(thread_id)
    except UnknownThreadError:
        return None


def _missing(request: Request, me: Viewer, what: str) -> Response:
    return page(request, "error.html", {"title": "Not found", "message": what}, status=404, me=me)


@router.get("/threads/{thread_id}")
async def thread_page(request: Request, thread_id: str, me: Me, runner: Run, done: str | None = None) -> Response:
    found = await _thread(runner, thread_id)
    if found is None:
        return _missing(request, me, f"no thread {thread_id!r} in this database")
    view, history = found
    return page(request, "thread.html", {"view": view, "history": history, "done": done}, me=me)


async def _review_page(request: Request, me: Viewer, runner: Runner, thread_id: str, review_id: str, *,
                       errors: dict[str, str] | None = None, form: FormData | None = None, status: int = 200) -> Response:
    found = await _thread(runner, thread_id)
    if found is None:
        return _missing(request, me, f"no thread {thread_id!r} in this database")
    view, history = found
    pending = next((r for r in view.reviews if r.review_id == review_id), None)
    asked = requested(review_id, history)
    if pending is None and asked is None:
        return _missing(request, me, f"thread {thread_id!r} has no review {review_id!r}")
    kind = pending.kind if pending else str(asked.data.get("kind", "")) if asked else ""
    payload = pending.payload if pending else asked.data.get("payload") if asked else None
    node = pending.node if pending else str(asked.data.get("node", "")) if asked else ""
    where = standing(review_id, pending, history, me.principal)
    fields: list[Field] = build_fields(pending, view.state) if pending is not None and where.may_decide else []
    submitted = {f.name: (form.getlist(f.name) if f.widget == "steps" else form.get(f.name)) for f in fields
                 if form is not None and f.name in form}
    return page(request, "review.html", {
        "view": view, "review": pending, "review_id": review_id, "title": pending.title if pending else asked.data.get("title") if asked else "",
        "kind": kind, "shown": payload_view(kind, payload, node), "where": where, "fields": fields,
        "errors": errors or {}, "submitted": submitted, "values": dict(form) if form is not None else {},
        "history": [e for e in history if e.review_id in (None, review_id)],
    }, status=status, me=me)


@router.get("/threads/{thread_id}/reviews/{review_id}")
async def review_page(request: Request, thread_id: str, review_id: str, me: Me, runner: Run) -> Response:
    return await _review_page(request, me, runner, thread_id, review_id)


def _pending(view: ThreadView, review_id: str) -> ReviewRequest | None:
    return next((r for r in view.reviews if r.review_id == review_id), None)


@router.post("/threads/{thread_id}/reviews/{review_id}/decide")
async def decide(request: Request, thread_id: str, review_id: str, me: Me, runner: Run) -> Response:
    """One decision from the review page, by the session's actor with the token's roles."""
    form = await csrf_form(request, me)
    kind = str(form.get("kind", ""))
    found = await _thread(runner, thread_id)
    review = _pending(found[0], review_id) if found else None
    if found is None or review is None:  # decided, expired or cancelled meanwhile: the page says which
        return await _review_page(request, me, runner, thread_id, review_id, status=409 if found else 404)
    fields: list[Field] = []
    patch: dict[str, Any] | None = None
    if kind == "modify":
        fields = build_fields(review, found[0].state)
        patch, errors = read_patch(review, fields, form)
        if errors:
            return await _review_page(request, me, runner, thread_id, review_id, errors=errors, form=form, status=422)
    given = {k: str(form.get(k, "")).replace("\r\n", "\n") for k in KIND_FIELDS.get(kind, ())}
    try:
        fields_given = {"review_id": review_id, "kind": kind, "patch": patch, "seen": str(form.get("seen", "")) or None,
                        **{k: v for k, v in given.items() if v.strip()}}
        body = DECISION_BODY.validate_python({k: v for k, v in fields_given.items() if v is not None})
        await runner.aresume(thread_id, body.decision(me.principal.actor), review_id=review_id, roles=me.principal.roles)
    except ValidationError:
        return await _review_page(request, me, runner, thread_id, review_id, form=form, status=422,
                                  errors={GENERAL: f"{kind!r} is not a decision this page knows (approve, modify, reject, respond, escalate)"})
    except HitlError as exc:
        where = field_for(str(exc), fields) if isinstance(exc, PatchError) else GENERAL
        return await _review_page(request, me, runner, thread_id, review_id, errors={where: str(exc)}, form=form,
                                  status=status_of(exc))
    return redirect(f"/threads/{quote(thread_id, safe='')}?done={quote(kind)}")


@router.post("/threads/{thread_id}/reviews/{review_id}/check")
async def check(request: Request, thread_id: str, review_id: str, me: Me, runner: Run) -> Response:
    """htmx asks this as a person edits the modify form: each field's error (or none), shown next
    to it before the form is sent. Reads only."""
    form = await csrf_form(request, me)
    found = await _thread(runner, thread_id)
    review = _pending(found[0], review_id) if found else None
    fields = build_fields(review, found[0].state) if found and review else []
    _, errors = read_patch(review, fields, form) if review else ({}, {})
    return page(request, "_errors.html", {"fields": fields, "errors": errors}, me=me)


@router.get("/audit")
async def audit(request: Request, me: Me, runner: Run, expect: str | None = None) -> Response:
    """Verify the audit log's hash chain (and a head kept elsewhere, `SEQ:HASH`)."""
    try:
        report = await asyncio.to_thread(runner.audit_verify, expect_head=[expect.strip()] if expect and expect.strip() else [])
        head, error = str(await asyncio.to_thread(runner.audit_head)), None
    except (AuditError, HitlError) as exc:
        report, head, error = None, None, str(exc)
    return page(request, "audit.html", {"report": report, "head": head, "error": error, "expect": expect or ""},
                status=200 if error is None else 422, me=me)


def install(app: FastAPI) -> None:
    """Add the inbox to `app`: its routes, its static files, its two refusals as pages."""
    from fastapi.staticfiles import StaticFiles

    app.state.sessions = Sessions()
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(LoginRequired)
    async def to_login(request: Request, exc: LoginRequired) -> Response:
        url = "/login?why=" + quote(str(exc))
        if request.headers.get("hx-request"):
            return Response(status_code=204, headers={"HX-Redirect": url})
        response = redirect(url)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return response

    @app.exception_handler(CsrfRefused)
    async def csrf_refused(request: Request, exc: CsrfRefused) -> HTMLResponse:
        response = templates.TemplateResponse(request, "error.html", {"me": None, "csrf": None, "title": "Refused",
            "message": "this form is out of date or did not come from this site (its CSRF token does not match "
                       "your session); nothing was changed: reload the page and try again"}, status_code=403)
        response.headers.update(HEADERS)
        return response

"""The web inbox as a browser without JavaScript sees it: a real uvicorn server, an HTTP client
that keeps cookies (httpx), real LangGraph and SQLite. Login, the session cookie, CSRF, every
page, decisions and their refusals (each refusal leaves the thread exactly as it was)."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import httpx
import pytest
from langgraph.graph import END, START, StateGraph

from hitl_graphs import Approve, Reject, Workflow, request_review
from hitl_graphs.examples import examples
from tests.conftest import fingerprint
from tests.live_server import Server, token
from tests.workflows import WORKFLOWS, effect, effects

# -- a tool call whose arguments a JSON Schema bounds (a payload patch) ----------------------------

TRANSFER_SCHEMA = {
    "type": "object",
    "required": ["args"],
    "properties": {"args": {
        "type": "object", "additionalProperties": False, "required": ["account", "amount"],
        "properties": {"account": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{6,}$", "description": "IBAN-like"},
                       "amount": {"type": "integer", "minimum": 1, "maximum": 1000},
                       "urgent": {"type": "boolean"}}}},
}


class TransferState(TypedDict, total=False):
    account: str
    amount: int
    sent: str


def _transfer(state: TransferState) -> TransferState:
    args = {"account": state["account"], "amount": state["amount"], "urgent": False}
    decision = request_review("tool_calls", {"tool": "transfer", "args": args}, title="Run transfer?",
                              editable=("args",), patch_target="payload", patch_schema=TRANSFER_SCHEMA)
    if isinstance(decision, Reject):
        return {"sent": "no"}
    if decision.kind == "modify":
        args = dict(decision.patch["args"])
    effect(f"transfer:{args['account']}:{args['amount']}:{args['urgent']}")
    return {"sent": "yes"}


def transfer_graph() -> StateGraph[TransferState]:
    g = StateGraph(TransferState)
    g.add_node("transfer", _transfer)
    g.add_edge(START, "transfer")
    g.add_edge("transfer", END)
    return g


WEB_WORKFLOWS = [*WORKFLOWS, Workflow("transfer", transfer_graph), *(w for w in examples() if w.name not in
                                                                     {w.name for w in WORKFLOWS})]


@pytest.fixture
def server(db: str, effects_file: Path) -> Iterator[Server]:
    s = Server(db, WEB_WORKFLOWS)
    yield s
    s.close()


# -- a browser: cookies kept, forms posted ---------------------------------------------------------


def _hidden(page: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert m is not None, f"no {name} field in the page"
    return html.unescape(m.group(1))


def login(server: Server, actor: str, *roles: str) -> tuple[httpx.Client, str]:
    """A browser logged in as `actor`, and the CSRF value of its session."""
    b = server.browser()
    form = b.get("/login")
    r = b.post("/login", data={"token": token(server, actor, *roles), "nonce": _hidden(form.text, "nonce")})
    assert r.status_code == 303 and r.headers["location"] == "/", r.text
    inbox = b.get("/")
    assert inbox.status_code == 200
    return b, _hidden(inbox.text, "csrf")


def paused(server: Server, workflow: str, data: dict[str, Any] | None = None, actor: str | None = None) -> tuple[str, str]:
    view = server.runner.start(workflow, data, actor=actor)
    return view.thread_id, view.reviews[0].review_id


def review_url(thread_id: str, review_id: str) -> str:
    return f"/threads/{thread_id}/reviews/{review_id}"


def inner(page: str, element_id: str) -> str:
    """The HTML inside the element with this id."""
    m = re.search(rf'<(\w+)[^>]*\bid="{re.escape(element_id)}"[^>]*>(.*?)</\1>', page, re.S)
    assert m is not None, f"no element #{element_id}"
    return m.group(2)


def text_of(page: str, element_id: str) -> str:
    """The text a person reads in the element with this id."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", inner(page, element_id))).split())


# -- login, the session cookie, logout -------------------------------------------------------------


def test_login_sets_an_httponly_strict_session_cookie_that_is_not_the_token(server: Server) -> None:
    b = server.browser()
    assert b.get("/").headers["location"].startswith("/login")  # no session: to the login page
    form = b.get("/login")
    secret = token(server, "ana", "finance")
    r = b.post("/login", data={"token": secret, "nonce": _hidden(form.text, "nonce")})
    assert r.status_code == 303
    cookie = next(c for c in r.headers.get_list("set-cookie") if c.startswith("hitl_session="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert secret not in cookie and secret.split("_", 2)[2] not in cookie
    inbox = b.get("/")
    assert inbox.status_code == 200 and "ana · finance" in text_of(inbox.text, "who")
    assert "'self'" in inbox.headers["content-security-policy"] and inbox.headers["x-frame-options"] == "DENY"


def test_a_wrong_token_or_a_forged_login_form_opens_no_session(server: Server) -> None:
    b = server.browser()
    nonce = _hidden(b.get("/login").text, "nonce")
    wrong = b.post("/login", data={"token": "hitl_deadbeef_nope", "nonce": nonce})
    assert wrong.status_code == 401 and "not valid" in text_of(wrong.text, "login-error")
    assert "hitl_session" not in wrong.headers.get("set-cookie", "")
    other_site = server.browser()  # a form posted from elsewhere: no login cookie, no matching nonce
    forged = other_site.post("/login", data={"token": token(server, "eve"), "nonce": "guess"})
    assert forged.status_code == 403 and "hitl_session" not in forged.headers.get("set-cookie", "")
    assert other_site.get("/").status_code == 303


def test_logout_ends_the_session_for_good(server: Server) -> None:
    b, csrf = login(server, "ana")
    session = b.cookies["hitl_session"]
    r = b.post("/logout", data={"csrf": csrf})
    assert r.status_code == 303 and r.headers["location"].startswith("/login")
    replay = server.browser()  # the old cookie, replayed, is worth nothing
    replay.cookies.set("hitl_session", session)
    assert replay.get("/").headers["location"].startswith("/login")


def test_revoking_the_token_ends_its_sessions_at_once(server: Server) -> None:
    b = server.browser()
    issued = server.runner.tokens.create("ana")
    b.post("/login", data={"token": issued.token, "nonce": _hidden(b.get("/login").text, "nonce")})
    assert b.get("/").status_code == 200
    server.runner.tokens.revoke(issued.id)
    r = b.get("/")
    assert r.status_code == 303 and "revoked" in r.headers["location"]


# -- CSRF: a form without the session's value changes nothing ---------------------------------------


@pytest.mark.parametrize("csrf", [None, "wrong", "another-session"], ids=["missing", "wrong", "another-sessions"])
def test_a_post_without_the_sessions_csrf_token_changes_nothing(server: Server, db: str, csrf: str | None) -> None:
    thread_id, review_id = paused(server, "pay", {"to": "acme", "amount": 120})
    before = fingerprint(db, thread_id)
    b, _ = login(server, "ana")
    if csrf == "another-session":
        csrf = login(server, "bob")[1]
    form = {"kind": "approve", **({"csrf": csrf} if csrf else {})}
    r = b.post(review_url(thread_id, review_id) + "/decide", data=form)
    assert r.status_code == 403 and "CSRF" in text_of(r.text, "problem") and "nothing was changed" in r.text
    assert fingerprint(db, thread_id) == before and effects() == ["prepare"]
    assert b.post("/logout", data=form).status_code == 403 and b.get("/").status_code == 200  # still logged in


# -- the pages -----------------------------------------------------------------------------------------


def test_the_inbox_lists_what_my_roles_may_decide_filtered_by_workflow(server: Server) -> None:
    pay, _ = paused(server, "pay", {"to": "acme", "amount": 120})
    finance, _ = paused(server, "finance", {"amount": 500}, actor="sam")
    email, _ = paused(server, "email", {"to": "bo@example.com", "topic": "lunch"})
    ana, _ = login(server, "ana")
    page = ana.get("/").text
    assert pay in page and email in page and finance not in page  # the finance review needs a role ana lacks
    fin, _ = login(server, "fin", "finance")
    assert finance in fin.get("/").text
    only = fin.get("/", params={"workflow": "finance"}).text
    assert finance in inner(only, "reviews") and pay not in inner(only, "reviews") and 'value="finance" selected' in only
    live = ana.get("/inbox/live", params={"workflow": "pay"})  # what htmx swaps in on each live event
    assert pay in inner(live.text, "reviews") and email not in inner(live.text, "reviews") and "<html" not in live.text
    assert "new review: Pay?" in text_of(ana.get("/").text, "live")



def test_the_inbox_follows_a_live_feed_of_what_the_sessions_roles_may_see(server: Server) -> None:
    from tests.test_api import _events

    assert server.browser().get("/inbox/events").headers["location"].startswith("/login")  # no session, no feed
    ana, _ = login(server, "ana")
    inbox = ana.get("/").text
    assert '<script src="/static/live.js" defer></script>' in inbox and 'hx-trigger="refresh' in inbox
    assert "EventSource(\"/inbox/events\")" in ana.get("/static/live.js").text
    with ana.stream("GET", "/inbox/events") as feed:  # what the page's EventSource reads, with the cookie
        assert feed.status_code == 200 and feed.headers["content-type"].startswith("text/event-stream")
        paused(server, "finance", {"amount": 500}, actor="sam")  # needs a role ana lacks: not news for her
        pay, review_id = paused(server, "pay", {"to": "acme", "amount": 120})
        server.runner.resume(pay, Approve(actor="bob"), review_id=review_id)
        review, decided = _events(feed, 2)
    assert (review["event"], review["data"]["thread_id"]) == ("review", pay)
    assert (decided["event"], decided["data"]["actor"]) == ("decided", "bob")

def _page_of(server: Server, workflow: str, data: dict[str, Any] | None = None, *roles: str) -> tuple[str, str]:
    thread_id, review_id = paused(server, workflow, data)
    b, _ = login(server, "ana", *roles)
    r = b.get(review_url(thread_id, review_id))
    assert r.status_code == 200, r.text
    return r.text, thread_id


def test_a_plan_reads_as_numbered_steps_each_one_editable(server: Server) -> None:
    page, _ = _page_of(server, "plan-review", {"task": "fix the build"})
    steps = re.findall(r"<li>(.*?)</li>", page.split('class="steps"')[1].split("</ol>")[0])
    assert steps == ["Research: fix the build", "Pick the most important findings", "Write the summary"]
    assert page.count('name="plan"') == 4  # three steps and one to add
    assert "Task: fix the build" in page


def test_tool_arguments_read_as_a_form_built_from_the_tools_schema(server: Server) -> None:
    page, _ = _page_of(server, "transfer", {"account": "DE123456", "amount": 120})
    assert 'name="args.account" value="DE123456"' in page and 'name="args.amount" value="120"' in page
    assert re.search(r'<select id="f-args-urgent" name="args.urgent">.*?<option value="false" selected>', page, re.S)
    assert "IBAN-like" in page and "min 1, max 1000" in page
    assert '<b>transfer</b>' in page and 'name="to"' not in page  # only the editable fields


def test_a_phase_output_reads_as_text_and_an_escalation_as_its_chain(server: Server) -> None:
    phase, _ = _page_of(server, "multi-step", {"task": "add two numbers"})
    assert "<b>analyse</b>" in phase and "Analyse the requirements for add two numbers: done." in phase
    chain, _ = _page_of(server, "escalation", None, "reviewer")
    rows = re.findall(r"<tr><td>(\w+)</td><td>(\w+)</td>", chain)
    assert rows == [("agent", "senior_agent"), ("senior_agent", "human")]
    assert 'id="escalate"' in chain  # the decisions this review allows, and only those
    other, _ = _page_of(server, "raw", {"question": "ship it?"})
    assert "<pre>&#34;ship it?&#34;</pre>" in other or "<pre>\"ship it?\"</pre>" in other  # anything else: JSON


def test_the_thread_page_shows_state_and_history_and_audit_verifies(server: Server) -> None:
    thread_id, _ = paused(server, "pay", {"to": "acme", "amount": 120})
    b, _ = login(server, "ana")
    page = b.get(f"/threads/{thread_id}").text
    assert "pay · paused" in text_of(page, "status") and '"amount": 120' in text_of(page, "state")
    assert [e.event for e in server.runner.history(thread_id)] == ["started", "review_requested"]
    assert "review_requested" in text_of(page, "history")
    assert b.get("/threads/nope").status_code == 404
    audit = b.get("/audit")
    assert audit.status_code == 200 and text_of(audit.text, "verdict").startswith("The chain holds")
    head = text_of(audit.text, "head")
    assert b.get("/audit", params={"expect": head}).status_code == 200
    bad = b.get("/audit", params={"expect": "not-a-head"})
    assert bad.status_code == 422 and "SEQ:HASH" in text_of(bad.text, "verdict")


# -- decisions -----------------------------------------------------------------------------------------


def test_approve_from_the_page_runs_the_thread_on_as_the_sessions_actor(server: Server) -> None:
    thread_id, review_id = paused(server, "pay", {"to": "acme", "amount": 120})
    b, csrf = login(server, "ana")
    seen = _hidden(b.get(review_url(thread_id, review_id)).text, "seen")
    r = b.post(review_url(thread_id, review_id) + "/decide",
               data={"csrf": csrf, "kind": "approve", "seen": seen, "actor": "the-ceo"})  # a form cannot name the actor
    assert r.status_code == 303 and r.headers["location"] == f"/threads/{thread_id}?done=approve"
    assert "done · completed" in text_of(b.get(r.headers["location"]).text, "status")
    assert effects() == ["prepare", "pay:acme:120"]
    assert [e.actor for e in server.runner.history(thread_id) if e.event == "decided"] == ["ana"]
    assert "decided by you" in text_of(b.get(review_url(thread_id, review_id)).text, "standing")


def test_a_modify_sends_only_what_changed_and_a_plan_edit_runs_as_edited(server: Server) -> None:
    pay, pay_review = paused(server, "pay", {"to": "acme", "amount": 120})
    plan, plan_review = paused(server, "plan-review", {"task": "fix the build"})
    b, csrf = login(server, "ana")
    r = b.post(review_url(pay, pay_review) + "/decide", data={"csrf": csrf, "kind": "modify", "amount": "90", "memo": ""})
    assert r.status_code == 303, r.text
    assert effects() == ["prepare", "pay:acme:90"]
    steps = ["Research the failing test", "Pick the most important findings", "", "Fix it"]  # one blanked: removed
    r = b.post(review_url(plan, plan_review) + "/decide", data={"csrf": csrf, "kind": "modify", "plan": steps})
    assert r.status_code == 303, r.text
    view = server.runner.show(plan)  # ran the edited steps, up to the re-planning review after two
    assert [s["step"] for s in view.state["results"]] == ["Research the failing test", "Pick the most important findings"]
    assert view.status == "paused" and view.reviews[0].payload["plan"] == ["Fix it"]


@pytest.mark.parametrize(
    ("form", "field", "says"),
    [
        ({"args.account": "DE123456", "args.amount": "5000", "args.urgent": "false"}, "f-args-amount", "1000"),
        ({"args.account": "nope", "args.amount": "10", "args.urgent": "false"}, "f-args-account", "does not match"),
        ({"args.account": "DE123456", "args.amount": "ten", "args.urgent": "false"}, "f-args-amount", "whole number"),
        ({"args.account": "DE123456", "args.amount": "120", "args.urgent": "false"}, "form", "nothing changed"),
    ],
    ids=["above-maximum", "pattern", "not-a-number", "unchanged"],
)
def test_a_modify_that_does_not_fit_shows_the_error_next_to_the_field_and_changes_nothing(
    server: Server, db: str, form: dict[str, str], field: str, says: str
) -> None:
    thread_id, review_id = paused(server, "transfer", {"account": "DE123456", "amount": 120})
    before = fingerprint(db, thread_id)
    b, csrf = login(server, "ana")
    r = b.post(review_url(thread_id, review_id) + "/decide", data={"csrf": csrf, "kind": "modify", **form})
    assert r.status_code == 422
    where = "problem" if field == "form" else f"err-{field}"
    assert says in text_of(r.text, where)
    if field != "form":
        assert f'value="{html.escape(form[field[2:].replace("-", ".")])}"' in r.text  # what was typed stays
    checked = b.post(review_url(thread_id, review_id) + "/check", data={"csrf": csrf, **form})  # htmx, on change
    assert says in text_of(checked.text, "err-form" if field == "form" else f"err-{field}")
    assert fingerprint(db, thread_id) == before and effects() == []


def test_a_review_for_a_role_i_lack_says_so_and_refuses_my_decision(server: Server, db: str) -> None:
    thread_id, review_id = paused(server, "finance", {"amount": 500}, actor="sam")
    before = fingerprint(db, thread_id)
    ana, csrf = login(server, "ana")
    page = ana.get(review_url(thread_id, review_id)).text
    assert text_of(page, "standing").startswith("you lack the role finance") and 'id="approve"' not in page
    r = ana.post(review_url(thread_id, review_id) + "/decide", data={"csrf": csrf, "kind": "approve"})
    assert r.status_code == 403 and "requires role 'finance'" in text_of(r.text, "problem")
    sam, _ = login(server, "sam", "finance")  # holds the role, but started the thread
    assert "you started this thread" in text_of(sam.get(review_url(thread_id, review_id)).text, "standing")
    assert fingerprint(db, thread_id) == before


def test_someone_else_got_there_first_decided_by_whom_and_when(server: Server, db: str) -> None:
    thread_id, review_id = paused(server, "pay", {"to": "acme", "amount": 120})
    ana, csrf = login(server, "ana")
    seen = _hidden(ana.get(review_url(thread_id, review_id)).text, "seen")  # ana opens the page ...
    with server.client(token(server, "bob")) as bob:  # ... bob decides through the API meanwhile
        assert bob.post(f"/api/threads/{thread_id}/decision", json={"review_id": review_id, "kind": "reject"}).status_code == 200
    after = fingerprint(db, thread_id)
    r = ana.post(review_url(thread_id, review_id) + "/decide", data={"csrf": csrf, "kind": "approve", "seen": seen})
    assert r.status_code == 409 and text_of(r.text, "standing") == "decided by bob just now: reject"
    assert fingerprint(db, thread_id) == after and effects() == ["prepare"]


def test_an_expired_review_says_so_before_and_after_the_sweep(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HITL_TEST_TIMEOUT", "0.2")
    thread_id, review_id = paused(server, "timed", {"amount": 5})
    time.sleep(0.3)
    ana, csrf = login(server, "ana")
    assert text_of(ana.get(review_url(thread_id, review_id)).text, "standing").startswith("expired")
    r = ana.post(review_url(thread_id, review_id) + "/decide", data={"csrf": csrf, "kind": "approve"})
    assert r.status_code == 409 and "expired at" in text_of(r.text, "problem")
    server.runner.sweep()
    swept = text_of(ana.get(review_url(thread_id, review_id)).text, "standing")
    assert swept.startswith("expired") and "default (reject) applied" in swept


def test_the_inbox_is_self_contained_and_out_of_the_api_schema(server: Server) -> None:
    b, _ = login(server, "ana")
    page = b.get("/").text
    assert re.findall(r'(?:src|href)="(https?:)?//', page) == []  # nothing loaded from outside the server
    script = b.get("/static/htmx.min.js")
    assert script.status_code == 200 and script.text.startswith("var htmx=function()")
    assert not [p for p in b.get("/openapi.json").json()["paths"] if not p.startswith("/api/")]

"""The HTTP API as a client sees it: a real uvicorn server on loopback, a real HTTP client (httpx),
real LangGraph and SQLite underneath. Identity comes from tokens the server issued."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import fingerprint
from tests.live_server import Server, token
from tests.workflows import effects


@pytest.fixture
def server(db: str, effects_file: Path) -> Iterator[Server]:
    s = Server(db)
    yield s
    s.close()


def paused_pay(server: Server, amount: int = 120) -> tuple[str, str]:
    view = server.runner.start("pay", {"to": "acme", "amount": amount})
    return view.thread_id, view.reviews[0].review_id


# -- identity --------------------------------------------------------------------------------------


def test_every_route_needs_a_token_the_server_issued(server: Server) -> None:
    thread_id, review_id = paused_pay(server)
    with server.client() as anon:
        r = anon.get("/api/reviews")
        assert r.status_code == 401 and r.json()["error"] == "not_authenticated"
        assert "hitl token create" in r.json()["detail"] and r.headers["www-authenticate"] == "Bearer"
        forged = anon.post(f"/api/threads/{thread_id}/decision", json={"review_id": review_id, "kind": "approve"},
                           headers={"Authorization": "Bearer hitl_deadbeef_not-a-real-token"})
        assert forged.status_code == 401 and "not valid" in forged.json()["detail"]
    ana = token(server, "ana")
    with server.client(**{"X-Api-Key": ana}) as sdk_style:  # what LangGraph's SDK clients send
        assert sdk_style.get("/api/reviews").status_code == 200
    assert server.runner.show(thread_id).status == "paused"


def test_the_actor_comes_from_the_token_not_the_body(server: Server) -> None:
    thread_id, review_id = paused_pay(server)
    with server.client(token(server, "ana")) as ana:
        refused = ana.post(f"/api/threads/{thread_id}/decision",
                           json={"review_id": review_id, "kind": "approve", "actor": "the-ceo"})
        assert refused.status_code == 422 and "actor" in refused.json()["detail"]
        ok = ana.post(f"/api/threads/{thread_id}/decision", json={"review_id": review_id, "kind": "approve"})
    assert ok.status_code == 200, ok.text
    assert ok.json()["status"] == "done" and ok.json()["state"]["status"] == "paid"
    decided = [e for e in server.runner.history(thread_id) if e.event == "decided"]
    assert [e.actor for e in decided] == ["ana"]
    assert effects() == ["prepare", "pay:acme:120"]


def test_a_revoked_token_is_refused_at_once(server: Server) -> None:
    issued = server.runner.tokens.create("ana")
    with server.client(issued.token) as ana:
        assert ana.get("/api/reviews").status_code == 200
        server.runner.tokens.revoke(issued.id)
        assert ana.get("/api/reviews").status_code == 401


def test_roles_come_from_the_token(server: Server) -> None:
    view = server.runner.start("finance", {"amount": 500}, actor="sam")
    thread_id, review_id = view.thread_id, view.reviews[0].review_id
    with server.client(token(server, "bob")) as bob:
        assert bob.get("/api/reviews").json() == []  # not his to decide
        assert bob.get("/api/reviews", params={"role": "finance"}).status_code == 403
        r = bob.post(f"/api/threads/{thread_id}/decision", json={"review_id": review_id, "kind": "approve"})
        assert r.status_code == 403 and r.json()["error"] == "permission_denied" and "finance" in r.json()["detail"]
    with server.client(token(server, "sam", "finance")) as sam:  # holds the role, but started the thread
        r = sam.post(f"/api/threads/{thread_id}/decision", json={"review_id": review_id, "kind": "approve"})
        assert r.status_code == 403 and "sam" in r.json()["detail"]
    with server.client(token(server, "fin", "finance")) as fin:
        assert [x["review_id"] for x in fin.get("/api/reviews", params={"role": "finance"}).json()] == [review_id]
        r = fin.post(f"/api/threads/{thread_id}/decision", json={"review_id": review_id, "kind": "approve"})
    assert r.status_code == 200 and r.json()["status"] == "done"


# -- listing and reading ---------------------------------------------------------------------------


def test_reviews_threads_and_history_read_as_the_cli_prints_them(server: Server) -> None:
    first, _ = paused_pay(server, 1)
    second, _ = paused_pay(server, 2)
    with server.client(token(server, "ana")) as ana:
        listed = ana.get("/api/reviews", params={"workflow": "pay"}).json()
        assert [r["thread_id"] for r in listed] == [first, second]  # oldest first
        assert listed[0] == server.runner.pending(workflow="pay")[0].model_dump(mode="json")
        assert [r["thread_id"] for r in ana.get("/api/reviews", params={"limit": 1, "offset": 1}).json()] == [second]
        assert ana.get("/api/reviews", params={"limit": 0}).status_code == 422
        shown = ana.get(f"/api/threads/{first}").json()
        assert shown == server.runner.show(first).model_dump(mode="json")
        assert [e["event"] for e in ana.get(f"/api/threads/{first}/history").json()] == ["started", "review_requested"]
        missing = ana.get("/api/threads/nope")
        assert missing.status_code == 404 and missing.json()["error"] == "unknown_thread"


def test_start_a_thread_as_the_token_actor(server: Server) -> None:
    with server.client(token(server, "ana")) as ana:
        r = ana.post("/api/threads", json={"workflow": "pay", "input": {"to": "acme", "amount": 5}, "thread_id": "t-1"})
        assert r.status_code == 201 and r.json()["status"] == "paused" and r.json()["thread_id"] == "t-1"
        again = ana.post("/api/threads", json={"workflow": "pay", "input": {"to": "acme", "amount": 5}, "thread_id": "t-1"})
        assert again.status_code == 409 and again.json()["error"] == "thread_exists"
        unknown = ana.post("/api/threads", json={"workflow": "nope", "input": {}})
        assert unknown.status_code == 404 and "nope" in unknown.json()["detail"]
    assert [e.actor for e in server.runner.history("t-1") if e.event == "started"] == ["ana"]


# -- decisions: every refusal changes nothing ------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "error", "says"),
    [
        ({"kind": "approve"}, 422, "invalid_request", "review_id"),
        ({"review_id": "nope-nope", "kind": "approve"}, 404, "unknown_review", "not pending"),
        ({"review_id": "@", "kind": "sign"}, 422, "invalid_request", "kind"),
        ({"review_id": "@", "kind": "modify", "patch": {"amount": "lots"}}, 422, "patch", "amount"),
        ({"review_id": "@", "kind": "modify", "patch": {"to": "eve"}}, 422, "patch", "to"),
        ({"review_id": "@", "kind": "modify"}, 422, "invalid_request", "patch"),
        ({"review_id": "@", "kind": "modify", "patch": {}}, 422, "invalid_request", "patch"),
        ({"review_id": "@", "kind": "approve", "reason": "why"}, 422, "invalid_request", "reason"),
        ({"review_id": "@", "kind": "respond", "text": "hi"}, 422, "invalid_decision", "respond"),
        ({"review_id": "@", "kind": "approve", "seen": "0" * 64}, 409, "stale_review", "changed"),
    ],
    ids=["no-review-id", "unknown-review", "unknown-kind", "patch-type", "patch-field", "modify-no-patch", "modify-empty-patch",
         "field-of-another-kind", "kind-not-allowed", "stale-seen"],
)
def test_a_refused_decision_names_the_problem_and_changes_nothing(
    server: Server, db: str, body: dict[str, Any], status: int, error: str, says: str
) -> None:
    thread_id, review_id = paused_pay(server)
    before = fingerprint(db, thread_id)
    body = {k: (review_id if v == "@" else v) for k, v in body.items()}
    with server.client(token(server, "ana")) as ana:
        r = ana.post(f"/api/threads/{thread_id}/decision", json=body)
    assert (r.status_code, r.json()["error"]) == (status, error), r.text
    assert says in r.json()["detail"]
    assert fingerprint(db, thread_id) == before
    assert effects() == ["prepare"]


def test_malformed_json_is_a_400(server: Server, db: str) -> None:
    thread_id, _ = paused_pay(server)
    before = fingerprint(db, thread_id)
    with server.client(token(server, "ana")) as ana:
        r = ana.post(f"/api/threads/{thread_id}/decision", content=b'{"kind": "approve",',
                     headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["error"]) == (400, "malformed_json")
    assert fingerprint(db, thread_id) == before


def test_a_modify_through_the_api_is_applied(server: Server) -> None:
    thread_id, review_id = paused_pay(server, 120)
    with server.client(token(server, "ana")) as ana:
        r = ana.post(f"/api/threads/{thread_id}/decision",
                     json={"review_id": review_id, "kind": "modify", "patch": {"amount": 90}, "comment": "cap"})
    assert r.status_code == 200 and r.json()["state"]["amount"] == 90
    assert effects() == ["prepare", "pay:acme:90"]


def test_of_racing_decisions_exactly_one_wins(server: Server) -> None:
    thread_id, review_id = paused_pay(server)
    tokens = [token(server, f"p{i}") for i in range(4)]
    results: list[httpx.Response] = []
    gate = threading.Barrier(len(tokens))

    def decide(t: str) -> None:
        with server.client(t) as c:
            gate.wait()
            results.append(c.post(f"/api/threads/{thread_id}/decision", json={"review_id": review_id, "kind": "approve"}))

    workers = [threading.Thread(target=decide, args=(t,)) for t in tokens]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    codes = sorted(r.status_code for r in results)
    assert codes == [200, 409, 409, 409], [r.text for r in results]
    assert all(r.json()["error"] in ("already_decided", "thread_busy") for r in results if r.status_code == 409)
    assert effects() == ["prepare", "pay:acme:120"]
    with server.client(tokens[0]) as late:
        again = late.post(f"/api/threads/{thread_id}/decision", json={"review_id": review_id, "kind": "approve"})
    assert again.status_code == 409 and "already decided" in again.json()["detail"]


# -- live events -----------------------------------------------------------------------------------


def _events(response: httpx.Response, count: int) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    event: dict[str, Any] = {}
    for line in response.iter_lines():
        if line.startswith("id: "):
            event["id"] = int(line[4:])
        elif line.startswith("event: "):
            event["event"] = line[7:]
        elif line.startswith("data: "):
            event["data"] = json.loads(line[6:])
        elif not line and "event" in event:
            got.append(event)
            event = {}
            if len(got) == count:
                return got
    return got


def test_events_stream_new_reviews_and_decisions_the_token_may_see(server: Server) -> None:
    with server.client(token(server, "ana")) as ana, ana.stream("GET", "/api/events") as feed:
        assert feed.status_code == 200 and feed.headers["content-type"].startswith("text/event-stream")
        server.runner.start("finance", {"amount": 500}, actor="sam")  # needs a role ana lacks: not shown
        thread_id, review_id = paused_pay(server)
        ana.post(f"/api/threads/{thread_id}/decision", json={"review_id": review_id, "kind": "approve"})
        review, decided = _events(feed, 2)
    assert (review["event"], review["data"]["thread_id"], review["data"]["review_id"]) == ("review", thread_id, review_id)
    assert (decided["event"], decided["data"]["actor"], decided["data"]["decision"]) == ("decided", "ana", "approve")
    # a follower that reconnects with the last id it saw misses nothing and sees nothing twice
    with server.client(token(server, "ana")) as ana, ana.stream(
            "GET", "/api/events", headers={"Last-Event-ID": str(review["id"])}) as feed:
        (again,) = _events(feed, 1)
    assert again["id"] == decided["id"]


def test_the_openapi_schema_documents_every_refusal(server: Server) -> None:
    schema = httpx.get(f"{server.url}/openapi.json").json()
    decide = schema["paths"]["/api/threads/{thread_id}/decision"]["post"]
    assert {"200", "400", "401", "403", "404", "409", "422"} <= set(decide["responses"])
    kinds = {"ApproveBody", "ModifyBody", "RejectBody", "RespondBody", "EscalateBody"}
    assert all("review_id" in schema["components"]["schemas"][k]["required"] for k in kinds)
    assert schema["components"]["schemas"]["ModifyBody"]["properties"]["patch"]["minProperties"] == 1

"""LangGraph's own client drives our threads: the official `langgraph-sdk` (sync and async) against
`hitl serve`'s `/langgraph` on a real uvicorn server, real LangGraph and SQLite underneath. Who
decides comes from the token (`api_key`, sent as `x-api-key`); every resume is the runner's."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import APIStatusError

from tests.conftest import ROOT, fingerprint, subprocess_env
from tests.live_server import Server, _free_port, token
from tests.workflows import effects

ORIGIN = "https://inbox.example.com"


@pytest.fixture
def server(db: str, effects_file: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    monkeypatch.setenv("HITL_CORS_ORIGINS", ORIGIN)
    s = Server(db)
    yield s
    for client in OPEN:
        client.close()
    OPEN.clear()
    s.close()


OPEN: list[SyncLangGraphClient] = []


def sdk(server: Server, actor: str = "ana", *roles: str) -> SyncLangGraphClient:
    """The SDK's sync client speaking for `actor` (closed with the server)."""
    OPEN.append(get_sync_client(url=server.url + "/langgraph", api_key=token(server, actor, *roles)))
    return OPEN[-1]


def paused_pay(client: SyncLangGraphClient, amount: int = 120) -> str:
    """A `pay` thread started through the SDK, as LangGraph's clients start one: create, then run."""
    thread_id = client.threads.create()["thread_id"]
    result = client.runs.wait(thread_id, "pay", input={"to": "acme", "amount": amount})
    assert [i["value"]["action_request"]["action"] for i in result["__interrupt__"]] == ["review"]
    return thread_id


def interrupt_id(client: SyncLangGraphClient, thread_id: str) -> str:
    [only] = client.threads.get_state(thread_id)["interrupts"]
    return str(only["id"])


def test_interrupted_threads_are_listed_with_their_state_and_interrupts(server: Server) -> None:
    client = sdk(server)
    first, second = paused_pay(client, 120), paused_pay(client, 80)
    done = server.runner.start("pay", {"to": "acme", "amount": 5}).thread_id
    server.runner.resume(done, {"kind": "approve", "actor": "bo"})

    listed = client.threads.search(status="interrupted")
    assert [t["thread_id"] for t in listed] == [first, second]   # oldest review first; the ended one is not waiting
    thread = client.threads.get(first)
    assert thread["status"] == "interrupted" and thread["values"]["amount"] == 120
    assert thread["metadata"]["graph_id"] == "pay"
    [(task_key, [shown])] = thread["interrupts"].items()
    review = server.runner.show(first).reviews[0]
    assert task_key == shown["id"] == review.review_id   # resume keyed by this id reaches exactly this review
    assert shown["value"]["action_request"] == {"action": "review", "args": {"to": "acme", "amount": 120}}
    assert shown["value"]["config"] == {"allow_ignore": True, "allow_respond": False, "allow_edit": True,
                                        "allow_accept": True}
    assert shown["value"]["description"] == "Pay?" and shown["value"]["review"]["editable"] == ["amount", "memo"]

    state = client.threads.get_state(first)
    assert state["next"] == ["review"] and state["values"]["status"] == "prepared"
    assert [t["interrupts"] for t in state["tasks"]] == [[shown]] and state["interrupts"] == [shown]
    assert client.threads.get(done)["status"] == "idle"
    assert [t["thread_id"] for t in client.threads.search(ids=[done, first], status="idle")] == [done]
    assert [a["graph_id"] for a in client.assistants.search(graph_id="pay")] == ["pay"]


@dataclass(frozen=True)
class Case:
    id: str
    answer: dict[str, Any]
    status: str | None
    ran: list[str]


CASES = [
    Case("approve", {"kind": "approve"}, "paid", ["prepare", "pay:acme:120"]),
    Case("edit", {"kind": "modify", "patch": {"amount": 90, "memo": "less"}}, "paid", ["prepare", "pay:acme:90"]),
    Case("reject", {"kind": "reject", "reason": "not this month"}, "prepared", ["prepare"]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_resume_keyed_by_interrupt_id_runs_as_decided_and_is_recorded_as_the_tokens_actor(server: Server, case: Case) -> None:
    client = sdk(server, "ana")
    thread_id = paused_pay(client)
    result = client.runs.wait(thread_id, "pay", command={"resume": {interrupt_id(client, thread_id): case.answer}})
    assert "__interrupt__" not in result and result["status"] == case.status
    assert effects() == case.ran   # each side effect exactly as decided, once
    assert client.threads.get(thread_id)["status"] == "idle"
    decided = [e for e in server.runner.history(thread_id) if e.event == "decided"]
    assert [(e.actor, e.data["kind"]) for e in decided] == [("ana", case.answer["kind"])]


def test_a_resumed_run_streams_its_chunks_as_server_sent_events(server: Server) -> None:
    client = sdk(server)
    thread_id = paused_pay(client)
    parts = list(client.runs.stream(thread_id, "pay", command={"resume": {"kind": "modify", "patch": {"amount": 60}}},
                                    stream_mode=["values", "updates"]))
    assert parts[0].event == "metadata" and parts[0].data["run_id"]
    assert {"review", "pay"} <= {node for p in parts if p.event == "updates" for node in p.data}
    assert [p.data for p in parts if p.event == "values"][-1] == {"to": "acme", "amount": 60, "status": "paid"}
    assert effects() == ["prepare", "pay:acme:60"]
    started = list(client.runs.stream("t-streamed", "pay", input={"to": "acme", "amount": 7}, if_not_exists="create"))
    assert [p.event for p in started][0] == "metadata" and started[-1].event == "values"
    [asked] = started[-1].data["__interrupt__"]   # it paused: our review, as an interrupt to resume by its id
    assert asked["id"] == server.runner.show("t-streamed").reviews[0].review_id
    refused = httpx.post(f"{server.url}/langgraph/threads/{thread_id}/runs/stream", headers={"x-api-key": token(server, "bo")},
                         json={"assistant_id": "pay", "command": {"resume": {"kind": "approve"}}})
    assert refused.status_code == 409 and "has no pending review" in refused.json()["detail"]   # no event stream, no run


async def test_two_clients_resuming_one_interrupt_at_once_one_wins_the_other_gets_the_error(server: Server) -> None:
    thread_id = paused_pay(sdk(server))
    review = interrupt_id(sdk(server), thread_id)
    ana = get_client(url=server.url + "/langgraph", api_key=token(server, "ana"))
    bo = get_client(url=server.url + "/langgraph", api_key=token(server, "bo"))
    async with ana, bo:
        results = await asyncio.gather(
            ana.runs.wait(thread_id, "pay", command={"resume": {review: {"kind": "approve"}}}),
            bo.runs.wait(thread_id, "pay", command={"resume": {review: {"kind": "modify", "patch": {"amount": 1}}}}),
            return_exceptions=True)
    won = [r for r in results if isinstance(r, dict)]
    lost = [r for r in results if isinstance(r, httpx.HTTPStatusError)]
    assert len(won) == 1 and len(lost) == 1, results
    assert lost[0].response.status_code == 409   # LangGraph Server's shape: {"detail": message}
    body = lost[0].response.json()
    # the loser came after the claim ("already decided") or while the winner's run held the thread
    # ("being run by another process"), as in tests/test_api.py's race: both 409s, nothing done twice
    assert list(body) == ["detail"] and ("already decided" in body["detail"] or "being run" in body["detail"])
    assert [e for e in effects() if e.startswith("pay:")] in (["pay:acme:120"], ["pay:acme:1"])   # paid once
    assert len([e for e in server.runner.history(thread_id) if e.event == "decided"]) == 1


def test_a_refused_resume_leaves_the_thread_exactly_as_it_was(server: Server, db: str) -> None:
    client = sdk(server)
    thread_id = paused_pay(client)
    review = interrupt_id(client, thread_id)
    before = fingerprint(db, thread_id)
    refusals = [
        ({review: {"kind": "modify", "patch": {"to": "mallory"}}}, 422, "field 'to' may not be changed"),
        ({review: {"kind": "approve", "actor": "the-ceo"}}, 422, "actor comes from the token"),
        ({review: [{"type": "response", "args": "pay later"}]}, 422, "does not allow 'respond'"),
        ({review: [{"type": "accept"}, {"type": "ignore"}]}, 422, "one-element list"),
        ({review: {"kind": "yes"}}, 422, "kind must be one of approve, modify, reject"),
        ("approve", 422, "command.resume must be our decision"),
    ]
    for value, status, message in refusals:
        with pytest.raises(APIStatusError) as refused:
            client.runs.create(thread_id, "pay", command={"resume": value})
        assert refused.value.status_code == status and message in refused.value.message, refused.value.body
    with pytest.raises(APIStatusError, match="command.update and command.goto are not served"):
        client.runs.create(thread_id, "pay", command={"resume": {"kind": "approve"}, "update": {"amount": 1}})
    assert fingerprint(db, thread_id) == before
    assert effects() == ["prepare"]


def test_roles_come_from_the_token(server: Server, db: str) -> None:
    thread_id = server.runner.start("finance", {"amount": 500}, actor="carl").thread_id
    clerk, treasurer = sdk(server, "ana"), sdk(server, "bo", "finance")
    assert clerk.threads.search(status="interrupted") == []   # not what this token may decide
    before = fingerprint(db, thread_id)
    with pytest.raises(APIStatusError) as refused:
        clerk.runs.create(thread_id, "finance", command={"resume": {"kind": "approve"}})
    assert refused.value.status_code == 403 and "finance" in refused.value.message
    with pytest.raises(APIStatusError) as ended:
        clerk.threads.update_state(thread_id, None, as_node="__end__")
    assert ended.value.status_code == 403
    assert fingerprint(db, thread_id) == before
    assert [t["thread_id"] for t in treasurer.threads.search(status="interrupted")] == [thread_id]
    run = treasurer.runs.create(thread_id, "finance", command={"resume": {"kind": "approve"}})
    assert run["status"] == "success" and effects() == ["finance:500"]


def test_agent_inbox_resolve_ends_the_thread_and_other_state_updates_are_refused(server: Server) -> None:
    client = sdk(server)
    thread_id = paused_pay(client)
    with pytest.raises(APIStatusError, match="update_state only ends a thread here"):
        client.threads.update_state(thread_id, {"amount": 1})
    client.threads.update_state(thread_id, None, as_node="__end__")
    assert server.runner.show(thread_id).outcome == "cancelled" and effects() == ["prepare"]
    assert [e.actor for e in server.runner.history(thread_id) if e.event == "cancel_requested"] == ["ana"]


def test_a_browser_client_may_call_from_the_allowed_origins_only(server: Server) -> None:
    ask = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-api-key,content-type"}
    with server.client() as browser:
        allowed = browser.options("/langgraph/threads/search", headers={"Origin": ORIGIN, **ask})
        assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == ORIGIN
        other = browser.options("/langgraph/threads/search", headers={"Origin": "https://evil.example", **ask})
        assert "access-control-allow-origin" not in other.headers
        inbox = browser.options("/api/reviews", headers={"Origin": ORIGIN, **ask})   # only the LangGraph API
        assert "access-control-allow-origin" not in inbox.headers
        unauthenticated = browser.post("/langgraph/threads/search", json={}, headers={"Origin": ORIGIN})
        assert unauthenticated.status_code == 401 and "hitl token create" in unauthenticated.json()["detail"]


def test_hitl_serve_takes_the_allowed_origins_on_its_command_line(db: str) -> None:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "hitl_graphs.cli", "serve", "--port", str(port), "--cors-origin", ORIGIN],
                            env=subprocess_env(db, HITL_CORS_ORIGINS=""), cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/langgraph/info"
        for _ in range(300):   # until it listens (at most a minute on a busy machine)
            try:
                httpx.get(url)
                break
            except httpx.TransportError:
                assert proc.poll() is None, "hitl serve exited"
                time.sleep(0.2)
        preflight = httpx.options(url, headers={"Origin": ORIGIN, "Access-Control-Request-Method": "GET"})
        assert preflight.headers.get("access-control-allow-origin") == ORIGIN
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_review_past_its_deadline_is_refused_as_on_every_path(server: Server, db: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HITL_TEST_TIMEOUT", "0.001")   # the review is past its deadline by the time anyone answers
    thread_id = server.runner.start("timed", {"amount": 3}).thread_id
    before = fingerprint(db, thread_id)
    with pytest.raises(APIStatusError) as refused:
        sdk(server).runs.create(thread_id, "timed", command={"resume": {"kind": "approve"}})
    assert refused.value.status_code == 409 and "expired at" in refused.value.message, refused.value.body
    assert fingerprint(db, thread_id) == before and effects() == []


def test_agent_inbox_edits_a_state_review_field_by_field(server: Server, db: str) -> None:
    client = sdk(server)
    thread_id = paused_pay(client)
    review = interrupt_id(client, thread_id)
    before = fingerprint(db, thread_id)
    with pytest.raises(APIStatusError, match="field 'to' may not be changed in this review; editable fields: amount, memo"):
        client.runs.create(thread_id, "pay", command={"resume": {review: [
            {"type": "edit", "args": {"action": "review", "args": {"to": "mallory", "amount": 120}}}]}})
    assert fingerprint(db, thread_id) == before
    done = client.runs.wait(thread_id, "pay", command={"resume": {review: [
        {"type": "edit", "args": {"action": "review", "args": {"to": "acme", "amount": 45}}}]}})   # only what changed
    assert done["status"] == "paid" and effects() == ["prepare", "pay:acme:45"]
    [decided] = [e for e in server.runner.history(thread_id) if e.event == "decided"]
    assert decided.data["kind"] == "modify" and decided.actor == "ana"

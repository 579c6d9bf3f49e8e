"""A LangChain agent (`create_agent` + `HumanInTheLoopMiddleware`, parallel tool calls from the
scripted model) decided through the official `langgraph-sdk` with Agent Inbox's formats: each
pending call shown as a `HumanInterrupt`, each answer sent as `[HumanResponse]`, which the
middleware itself cannot read; each tool runs exactly as decided. Real server, LangGraph, SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import APIStatusError

from tests.conftest import fingerprint
from tests.langchain_agents import BATCHED, INPUT, PER_CALL, WORKFLOWS
from tests.live_server import Server, token
from tests.workflows import effects

SEND, DELETE = "call_send", "call_delete"


@pytest.fixture
def client(db: str, effects_file: Path) -> Iterator[SyncLangGraphClient]:
    server = Server(db, WORKFLOWS)
    with get_sync_client(url=server.url + "/langgraph", api_key=token(server, "ana")) as sdk:
        yield sdk
    server.close()


def start(client: SyncLangGraphClient, workflow: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """Start the agent through the SDK; its pending calls as Agent Inbox reads them, by tool call id."""
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, workflow, input=INPUT)
    [thread] = [t for t in client.threads.search(status="interrupted") if t["thread_id"] == thread_id]
    shown = [i for interrupts in thread["interrupts"].values() for i in interrupts]
    return thread_id, {i["value"]["review"]["key"]: i for i in shown}


def told(values: dict[str, Any]) -> dict[str, str]:
    """What the model was told per tool call."""
    return {m["tool_call_id"]: m["content"] for m in values["messages"] if m.get("type") == "tool"}


def test_each_tool_call_is_shown_as_agent_inboxs_human_interrupt(client: SyncLangGraphClient) -> None:
    _, shown = start(client, BATCHED.name)
    assert sorted(shown) == [DELETE, SEND]   # one interrupt per gated call; `lookup` is not gated
    send, delete = shown[SEND]["value"], shown[DELETE]["value"]
    assert send["action_request"] == {"action": "send_email", "args": {"to": "ana@example.com", "body": "hi"}}
    assert send["config"] == {"allow_ignore": True, "allow_respond": True, "allow_edit": True, "allow_accept": True}
    assert delete["action_request"] == {"action": "delete_file", "args": {"path": "/srv/report.pdf"}}
    assert delete["config"] == {"allow_ignore": True, "allow_respond": False, "allow_edit": False, "allow_accept": True}
    assert send["description"].startswith('Run send_email(to="ana@example.com", body="hi")?')
    assert effects() == []


@dataclass(frozen=True)
class Case:
    id: str
    workflow: str
    send: list[dict[str, Any]]
    delete: list[dict[str, Any]]
    ran: list[str]
    told: dict[str, str]   # call id -> a part of what the model was told


CASES = [
    Case("batched: edit one call, ignore the other", BATCHED.name,
         [{"type": "edit", "args": {"action": "send_email", "args": {"to": "bo@example.com", "body": "hi"}}}],
         [{"type": "ignore", "args": None}],
         ["lookup:weather", "send_email:bo@example.com:hi"],
         {SEND: "sent to bo@example.com", DELETE: "The tool was not executed"}),
    Case("batched: accept both", BATCHED.name, [{"type": "accept", "args": None}], [{"type": "accept", "args": None}],
         ["delete_file:/srv/report.pdf", "lookup:weather", "send_email:ana@example.com:hi"],
         {SEND: "sent to ana@example.com", DELETE: "deleted /srv/report.pdf"}),
    Case("per call: respond instead of running, accept the other", PER_CALL.name,
         [{"type": "response", "args": "Ana is on holiday; mail nobody"}], [{"type": "accept", "args": None}],
         ["delete_file:/srv/report.pdf", "lookup:weather"],
         {SEND: "Ana is on holiday; mail nobody", DELETE: "deleted /srv/report.pdf"}),
    Case("per call: edit the body, ignore the delete", PER_CALL.name,
         [{"type": "edit", "args": {"action": "send_email", "args": {"to": "ana@example.com", "body": "see you"}}}],
         [{"type": "ignore", "args": None}],
         ["lookup:weather", "send_email:ana@example.com:see you"],
         {SEND: "sent to ana@example.com"}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_agent_inbox_answers_are_translated_for_the_middleware(client: SyncLangGraphClient, case: Case) -> None:
    thread_id, shown = start(client, case.workflow)
    # the second call first, keyed by interrupt id: never matched by position
    half = client.runs.wait(thread_id, case.workflow, command={"resume": {shown[DELETE]["id"]: case.delete}})
    if case.workflow == BATCHED.name:
        assert [i["id"] for i in half["__interrupt__"]] == [shown[SEND]["id"]]
        assert effects() == []   # the middleware gets its batch once every call has a decision
    done = client.runs.wait(thread_id, case.workflow, command={"resume": {shown[SEND]["id"]: case.send}})
    assert "__interrupt__" not in done and done["messages"][-1]["content"] == "All done."
    assert sorted(effects()) == case.ran   # each tool exactly as decided, once
    for call_id, text in case.told.items():
        assert text in told(done)[call_id]
    assert client.threads.get(thread_id)["status"] == "idle"


def test_both_answers_of_a_batch_in_one_resume(client: SyncLangGraphClient) -> None:
    thread_id, shown = start(client, BATCHED.name)
    done = client.runs.wait(thread_id, BATCHED.name, command={"resume": {
        shown[SEND]["id"]: [{"type": "ignore", "args": None}],
        shown[DELETE]["id"]: {"kind": "approve"},   # our decision's JSON and Agent Inbox's list mix
    }})
    assert "__interrupt__" not in done
    assert sorted(effects()) == ["delete_file:/srv/report.pdf", "lookup:weather"]


def test_an_answer_the_call_does_not_allow_changes_nothing(client: SyncLangGraphClient, db: str) -> None:
    thread_id, shown = start(client, BATCHED.name)
    before = fingerprint(db, thread_id)
    for answer, message in [
        ([{"type": "edit", "args": {"action": "delete_file", "args": {"path": "/tmp/x"}}}], "does not allow 'modify'"),
        ([{"type": "response", "args": "done by hand"}], "does not allow 'respond'"),
        ([{"type": "approve"}], "not an Agent Inbox response"),
    ]:
        with pytest.raises(APIStatusError) as refused:
            client.runs.create(thread_id, BATCHED.name, command={"resume": {shown[DELETE]["id"]: answer}})
        assert refused.value.status_code == 422 and message in refused.value.message, refused.value.body
    swapped = [{"type": "edit", "args": {"action": "delete_file", "args": {"path": "/etc/passwd"}}}]
    with pytest.raises(APIStatusError, match="an edit changes the arguments of 'send_email', not which action runs"):
        client.runs.create(thread_id, BATCHED.name, command={"resume": {shown[SEND]["id"]: swapped}})
    with pytest.raises(APIStatusError, match=r"the middleware's own \{\"decisions\": \[...\]\} matches answers to calls by position"):
        client.runs.create(thread_id, BATCHED.name, command={"resume": {"decisions": [{"type": "approve"}] * 2}})
    with pytest.raises(APIStatusError, match="this thread has 2 pending reviews; key the resume by interrupt id"):
        client.runs.create(thread_id, BATCHED.name, command={"resume": [{"type": "accept", "args": None}]})
    assert fingerprint(db, thread_id) == before and effects() == []


def test_a_resumed_agent_streams_its_messages_as_tuples(client: SyncLangGraphClient) -> None:
    thread_id, shown = start(client, PER_CALL.name)
    client.runs.wait(thread_id, PER_CALL.name, command={"resume": {shown[DELETE]["id"]: [{"type": "ignore", "args": None}]}})
    parts = list(client.runs.stream(thread_id, PER_CALL.name, stream_mode="messages-tuple",
                                    command={"resume": {shown[SEND]["id"]: [{"type": "accept", "args": None}]}}))
    messages = [p.data for p in parts if p.event == "messages"]
    assert all(isinstance(m, list) and len(m) == 2 for m in messages)   # (message, metadata), as LangGraph's SDK reads them
    assert "All done." in [m[0]["content"] for m in messages]
    assert sorted(effects()) == ["lookup:weather", "send_email:ana@example.com:hi"]

"""PostgreSQL groundwork (issue 16): LangGraph's PostgresSaver on our connections, and `migrate`.

Against a real throwaway server (tests/pg_server.py), never mocked: a pause written by one
connection is resumed by another, as a second process would, and `migrate` survives many processes
calling it at once on an empty database, which LangGraph's own `setup()` does not.
"""

from __future__ import annotations

import operator
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, TypedDict

import psycopg
import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from hitl_graphs.errors import DatabaseBusyError, StorageError
from hitl_graphs.storage.postgres import connect, migrate
from hitl_graphs.storage.postgres.migrate import MIGRATION_LOCK_KEY
from tests.conftest import ROOT, subprocess_env
from tests.pg_server import _free_port


class MailState(TypedDict):
    to: str
    answer: str
    ran: Annotated[list[str], operator.add]


def mail_graph() -> StateGraph[MailState]:
    """draft -> review (pauses for a person) -> send; each node notes that it ran."""

    def draft(state: MailState) -> dict[str, list[str]]:
        return {"ran": ["draft"]}

    def review(state: MailState) -> dict[str, object]:
        answer = interrupt({"question": f"send to {state['to']}?"})
        return {"answer": answer, "ran": ["review"]}

    def send(state: MailState) -> dict[str, list[str]]:
        return {"ran": ["send"]}

    graph = StateGraph(MailState)
    graph.add_node("draft", draft)
    graph.add_node("review", review)
    graph.add_node("send", send)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    graph.add_edge("review", "send")
    graph.add_edge("send", END)
    return graph


def test_a_pause_saved_on_one_connection_resumes_from_another(pg_db_url: str) -> None:
    migrate(pg_db_url)
    config = {"configurable": {"thread_id": "mail-1"}}

    with connect(pg_db_url) as first:
        paused = mail_graph().compile(checkpointer=PostgresSaver(first)).invoke({"to": "ana", "ran": []}, config)
    assert [i.value for i in paused["__interrupt__"]] == [{"question": "send to ana?"}]
    assert paused["ran"] == ["draft"]

    # A second connection, as another process opening the same database hours later.
    with connect(pg_db_url) as second:
        graph = mail_graph().compile(checkpointer=PostgresSaver(second))
        waiting = graph.get_state(config)
        assert waiting.next == ("review",)
        (pending,) = waiting.interrupts
        assert pending.value == {"question": "send to ana?"}

        done = graph.invoke(Command(resume={pending.id: "yes"}), config)
        assert done == {"to": "ana", "answer": "yes", "ran": ["draft", "review", "send"]}
        assert graph.get_state(config).next == ()


_MIGRATE_WHEN_TOLD = """
import sys, time
from pathlib import Path
from hitl_graphs.storage.postgres import migrate
url, ready, go = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
ready.touch()
while not go.exists():
    time.sleep(0.001)
migrate(url)
print("migrated")
"""


def test_four_processes_migrating_an_empty_database_at_once_all_succeed(pg_db_url: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _MIGRATE_WHEN_TOLD, pg_db_url, str(tmp_path / f"ready-{n}"), str(go)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env(pg_db_url), cwd=ROOT,
        )
        for n in range(4)
    ]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready-{n}").exists() for n in range(4)) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()  # all four imported and connected-to-be: start them together
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]

    assert [(code, out.strip(), err) for code, out, err in results] == [(0, "migrated", "")] * 4
    with connect(pg_db_url) as conn:
        versions = [row["v"] for row in conn.execute("SELECT v FROM checkpoint_migrations ORDER BY v")]
    assert versions == list(range(len(PostgresSaver.MIGRATIONS)))


def test_migrate_twice_changes_nothing_the_second_time(pg_db_url: str) -> None:
    migrate(pg_db_url)
    migrate(pg_db_url)
    with connect(pg_db_url) as conn:
        count = conn.execute("SELECT count(*) AS n FROM checkpoint_migrations").fetchone()
    assert count == {"n": len(PostgresSaver.MIGRATIONS)}


def test_migrate_waits_for_the_lock_then_says_who_holds_it(pg_db_url: str) -> None:
    with psycopg.connect(pg_db_url, autocommit=True) as holder:
        pid = holder.execute("SELECT pg_backend_pid(), pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,)).fetchone()[0]
        with pytest.raises(DatabaseBusyError, match=rf"being migrated by server process {pid} for over 0.3 s; wait"):
            migrate(pg_db_url, lock_timeout=0.3)
        tables = holder.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'checkpoint%'").fetchone()
    assert tables == (0,)  # nothing was created while another process held the lock


def test_a_server_that_is_down_is_one_line_naming_the_url_without_its_password() -> None:
    url = f"postgresql://ana:s3cret@127.0.0.1:{_free_port()}/hitl"
    with pytest.raises(StorageError, match=r"^cannot connect to PostgreSQL at postgresql://ana:\*\*\*@127.0.0.1:") as info:
        migrate(url)
    message = str(info.value)
    assert "s3cret" not in message and "\n" not in message
    assert message.endswith("check the URL (postgresql://user@host:port/db) and that the server is running")


def test_a_malformed_url_is_one_line_naming_the_fix() -> None:
    with pytest.raises(StorageError, match=r"^cannot connect to PostgreSQL at postgresql://nohost:notaport/x: .*check the URL"):
        migrate("postgresql://nohost:notaport/x")


def test_a_database_from_a_newer_release_is_refused_and_left_unchanged(pg_db_url: str) -> None:
    from hitl_graphs.errors import SchemaVersionError
    from hitl_graphs.storage import open_store

    migrate(pg_db_url)
    with connect(pg_db_url) as conn:
        conn.execute("UPDATE hitl_meta SET value = '99' WHERE key = 'schema_version'")
    from hitl_graphs.storage.postgres.schema import SCHEMA_VERSION

    newer = rf"has schema version 99, newer than this hitl_graphs reads \({SCHEMA_VERSION}\); upgrade hitl-graphs"
    with pytest.raises(SchemaVersionError, match=newer):
        open_store(pg_db_url)
    with pytest.raises(SchemaVersionError, match=newer):
        migrate(pg_db_url)
    with connect(pg_db_url) as conn:
        assert conn.execute("SELECT value FROM hitl_meta").fetchall() == [{"value": "99"}]


def test_the_runner_pauses_and_resumes_a_workflow_on_postgres(pg_db_url: str, effects_file: Path) -> None:
    """The switch is the location: `Runner.open("postgresql://...")` runs the same review cycle,
    and a second runner (another process, as far as the server can tell) answers it once."""
    from hitl_graphs import Approve, Runner
    from hitl_graphs.errors import AlreadyDecidedError
    from tests.workflows import WORKFLOWS, effects

    with Runner.open(pg_db_url, workflows=WORKFLOWS) as first:
        paused = first.start("charge", {"amount": 7})
    assert paused.status == "paused" and effects() == []

    with Runner.open(pg_db_url, workflows=WORKFLOWS) as second, Runner.open(pg_db_url, workflows=WORKFLOWS) as third:
        (review,) = second.pending()
        assert (review.thread_id, review.title, review.payload) == (paused.thread_id, "Charge the card?", {"amount": 7})
        done = second.resume(paused.thread_id, Approve(actor="ana"))
        assert (done.status, done.state["receipt"]) == ("done", {"id": "rcpt-1", "amount": 7})
        with pytest.raises(AlreadyDecidedError, match="already decided .approve by ana."):
            third.resume(paused.thread_id, Approve(actor="bob"), review_id=review.review_id)
        assert [e.event for e in third.history(paused.thread_id)] == [
            "started", "review_requested", "decided", "applied", "completed", "refused"]  # refusals are audited too
    assert effects() == ["charge:7"]

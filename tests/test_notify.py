"""Notifications as a receiver sees them: a real HTTP server on loopback, real LangGraph and SQLite
underneath, deliveries read from the history. Each test runs a thread to its pause (and maybe a
decision), delivers, and checks what reached the receiver and what the delivery log says."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hitl_graphs import Approve, Runner
from hitl_graphs.cli import app as hitl_app
from hitl_graphs.notify import Notifier, Retry, verify_signature
from tests.conftest import ROOT, subprocess_env
from tests.workflows import WORKFLOWS


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def body(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.raw)
        return data

    @property
    def delivery(self) -> str:
        return self.headers["x-hitl-delivery"]


@dataclass
class Receiver:
    """A webhook receiver: records every POST; answers `status(n)` for the n-th (from 0)."""

    status: Callable[[int], int] = lambda n: 200
    delay: float = 0.0
    hold: threading.Event | None = None
    """When set, the first request waits for this event before answering (a deliverer stuck mid-send)."""
    got: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> str:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    n = len(receiver.got)
                    receiver.got.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, raw))
                if receiver.hold is not None and n == 0:
                    receiver.hold.wait(30)
                time.sleep(receiver.delay)
                self.send_response(receiver.status(n))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def on(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.got if r.path == path]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


def pay(runner: Runner, amount: int = 120) -> tuple[str, str]:
    view = runner.start("pay", {"to": "acme", "amount": amount})
    return view.thread_id, view.reviews[0].review_id


def test_a_pause_and_its_decision_reach_the_webhook_signed_and_once(runner: Runner, receiver: Receiver) -> None:
    url = receiver.start()
    pay(runner, 1)  # before the webhook: not announced
    hook = runner.webhooks.add(f"{url}/hook")
    thread_id, review_id = pay(runner)
    runner.resume(thread_id, Approve(actor="ana", comment="fine"), review_id=review_id)
    report = Notifier(runner, base_url="https://inbox.example/").deliver()
    assert (report.delivered, report.failed) == (2, 0)
    review, decided = receiver.on("/hook")
    for got in (review, decided):
        assert verify_signature(hook.secret, got.raw, got.headers["x-hitl-signature"])
        assert not verify_signature(hook.secret, got.raw.replace(b"acme", b"evil") + b" ", got.headers["x-hitl-signature"])
        assert got.delivery == f"{hook.id}-{got.body['seq']}" and got.headers["content-type"] == "application/json"
    assert {k: review.body[k] for k in ("event", "thread_id", "review_id", "workflow", "title", "kind", "link")} == {
        "event": "review", "thread_id": thread_id, "review_id": review_id, "workflow": "pay", "title": "Pay?",
        "kind": "gate", "link": f"https://inbox.example/threads/{thread_id}"}
    assert {k: decided.body[k] for k in ("event", "review_id", "actor", "decision", "by", "comment")} == {
        "event": "decided", "review_id": review_id, "actor": "ana", "decision": "approve", "by": "person",
        "comment": "fine"}
    assert Notifier(runner).deliver().delivered == 0 and len(receiver.got) == 2  # nothing is sent twice
    log = runner.webhooks.deliveries(hook.id)
    assert [(d.outcome, d.status_code, d.attempt) for d in log] == [("delivered", 200, 1)] * 2
    assert runner.webhooks.list()[0].cursor == runner.audit_head().seq  # past the entries it does not ask for too


def test_webhooks_get_only_the_events_and_workflow_they_ask_for(runner: Runner, receiver: Receiver) -> None:
    url = receiver.start()
    runner.webhooks.add(f"{url}/reviews", events=["review"])
    runner.webhooks.add(f"{url}/pay-decisions", events=["decided"], workflow="pay")
    runner.webhooks.add(f"{url}/charges", workflow="charge")
    thread_id, review_id = pay(runner)
    runner.resume(thread_id, Approve(actor="ana"), review_id=review_id)
    charge = runner.start("charge", {"amount": 30})
    Notifier(runner).deliver()
    assert [(r.body["event"], r.body["thread_id"]) for r in receiver.on("/reviews")] == [
        ("review", thread_id), ("review", charge.thread_id)]
    assert [(r.body["event"], r.body["thread_id"]) for r in receiver.on("/pay-decisions")] == [("decided", thread_id)]
    assert [(r.body["event"], r.body["workflow"]) for r in receiver.on("/charges")] == [("review", "charge")]


def test_a_failing_receiver_is_retried_with_back_off_and_later_entries_wait_in_order(
        runner: Runner, receiver: Receiver) -> None:
    receiver.status = lambda n: 503 if n < 2 else 200
    hook = runner.webhooks.add(receiver.start() + "/hook")
    thread_id, review_id = pay(runner)
    notifier = Notifier(runner, retry=Retry(first=0.5, cap=1.0))

    def until_due() -> None:
        due = runner.webhooks.deliveries(hook.id, limit=1)[0].next_retry
        assert due is not None
        time.sleep(max(0.0, due.timestamp() - time.time()) + 0.02)

    assert notifier.deliver().failed == 1
    runner.resume(thread_id, Approve(actor="ana"), review_id=review_id)  # queued behind the failing entry
    assert notifier.deliver().waiting == 1 and len(receiver.got) == 1  # the back-off is not over: nothing sent
    assert runner.webhooks.list()[0].cursor < receiver.got[0].body["seq"]  # not past an entry not delivered
    until_due()
    assert notifier.deliver().failed == 1
    until_due()
    assert notifier.deliver().delivered == 2
    assert [r.body["event"] for r in receiver.got] == ["review", "review", "review", "decided"]
    assert len({r.delivery for r in receiver.got[:3]}) == 1  # one id on every attempt: receivers can drop repeats
    log = runner.webhooks.deliveries(hook.id)
    assert [(d.attempt, d.outcome, d.status_code) for d in reversed(log)] == [
        (1, "failed", 503), (2, "failed", 503), (3, "delivered", 200), (1, "delivered", 200)]
    first, second = log[-1], log[-2]
    assert first.next_retry is not None and second.next_retry is not None
    assert (first.next_retry - first.at).total_seconds() == pytest.approx(0.5, abs=0.01)
    assert (second.next_retry - second.at).total_seconds() == pytest.approx(1.0, abs=0.01)  # doubled
    assert "answered 503" in (first.error or "")


def test_an_entry_is_given_up_after_n_attempts_logged_and_the_rest_goes_on(runner: Runner, receiver: Receiver) -> None:
    receiver.status = lambda n: 500 if n < 2 else 200
    hook = runner.webhooks.add(receiver.start() + "/hook")
    thread_id, review_id = pay(runner)
    runner.resume(thread_id, Approve(actor="ana"), review_id=review_id)
    notifier = Notifier(runner, retry=Retry(attempts=2, first=0.05))
    notifier.deliver()
    time.sleep(0.1)
    report = notifier.deliver()
    assert (report.gave_up, report.delivered) == (1, 1)
    assert [r.body["event"] for r in receiver.got] == ["review", "review", "decided"]
    assert [(d.attempt, d.outcome) for d in runner.webhooks.deliveries(hook.id)] == [
        (1, "delivered"), (2, "gave_up"), (1, "failed")]


def test_an_unreachable_url_is_logged_with_its_error(runner: Runner) -> None:
    hook = runner.webhooks.add("http://127.0.0.1:9/nobody-listens")
    pay(runner)
    assert Notifier(runner, timeout=2).deliver().failed == 1
    (attempt,) = runner.webhooks.deliveries(hook.id)
    assert attempt.status_code is None and "refused" in (attempt.error or "").lower()


def test_a_slack_webhook_gets_a_text_with_a_link_to_the_review(runner: Runner, receiver: Receiver) -> None:
    runner.webhooks.add(receiver.start() + "/slack", format="slack")
    thread_id, review_id = pay(runner)
    runner.resume(thread_id, Approve(actor="ana"), review_id=review_id)
    Notifier(runner, base_url="https://inbox.example").deliver()
    review, decided = (r.body for r in receiver.got)
    assert review == {"text": f"Review needed: Pay? (pay thread {thread_id}) "
                              f"<https://inbox.example/threads/{thread_id}|Open the review>", "unfurl_links": False}
    assert decided["text"].startswith(f"ana decided approve on review {review_id} (pay thread {thread_id})")


def test_a_crash_between_the_pause_and_the_send_loses_no_notification(db: str, effects_file: Path,
                                                                       receiver: Receiver) -> None:
    url = receiver.start()
    with Runner.open(db, workflows=WORKFLOWS) as first:
        first.webhooks.add(f"{url}/hook")
        thread_id, _ = pay(first)
    assert receiver.got == []  # the process ended before any deliverer ran
    with Runner.open(db, workflows=WORKFLOWS) as second:
        assert Notifier(second).deliver().delivered == 1
    assert [(r.body["event"], r.body["thread_id"]) for r in receiver.got] == [("review", thread_id)]


def test_two_deliverers_at_once_do_not_send_twice(db: str, effects_file: Path, receiver: Receiver) -> None:
    receiver.delay = 0.01
    url = receiver.start()
    with Runner.open(db, workflows=WORKFLOWS) as a, Runner.open(db, workflows=WORKFLOWS) as b:
        for path in ("/one", "/two", "/three"):
            a.webhooks.add(url + path)
        for n in range(6):
            pay(a, n)
        start = threading.Barrier(2)

        def deliver(runner: Runner) -> None:
            notifier = Notifier(runner)
            start.wait()
            for _ in range(5):
                notifier.deliver()

        workers = [threading.Thread(target=deliver, args=(r,)) for r in (a, b)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    ids = [r.delivery for r in receiver.got]
    assert len(ids) == 3 * 6 and len(set(ids)) == len(ids), sorted(ids)


def test_hitl_serve_delivers_in_the_background(db: str, effects_file: Path, receiver: Receiver) -> None:
    from tests.test_api import Server

    server = Server(db)  # create_app runs a deliverer in its lifespan
    try:
        server.runner.webhooks.add(receiver.start() + "/hook")
        thread_id, _ = pay(server.runner)
        deadline = time.monotonic() + 10
        while not receiver.got and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        server.close()
    assert [(r.body["event"], r.body["thread_id"]) for r in receiver.got] == [("review", thread_id)]


# -- the command line --------------------------------------------------------------------------


def cli(db: str, *args: str) -> Any:
    return CliRunner().invoke(hitl_app, ["--db", db, *args])


def test_webhook_commands_add_list_remove_and_show_deliveries(db: str, effects_file: Path, receiver: Receiver) -> None:
    url = receiver.start()
    added = cli(db, "webhook", "add", f"{url}/hook", "--events", "review", "--workflow", "pay", "--json")
    assert added.exit_code == 0, added.output
    hook = json.loads(added.output)
    assert (hook["events"], hook["workflow"], hook["format"]) == (["review"], "pay", "json") and len(hook["secret"]) > 20
    shown = cli(db, "webhook", "add", f"{url}/slack", "--slack", "--secret", "s" * 20)
    assert shown.exit_code == 0 and shown.output.splitlines()[-1] == "s" * 20  # the secret, printed once
    listing = cli(db, "webhook", "list")
    assert hook["id"] in listing.output and "s" * 20 not in listing.output and hook["secret"] not in listing.output
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        pay(runner)
    done = cli(db, "notify")
    assert done.exit_code == 0 and "delivered 2" in done.output, done.output
    log = json.loads(cli(db, "webhook", "deliveries", hook["id"], "--json").output)
    assert [(d["delivery_id"].split("-")[0], d["outcome"], d["status_code"]) for d in log] == [
        (hook["id"], "delivered", 200)]
    removed = cli(db, "webhook", "remove", hook["id"])
    assert removed.exit_code == 0 and "removed" in removed.output
    assert hook["id"] not in cli(db, "webhook", "list").output and hook["id"] in cli(db, "webhook", "list", "--all").output


@pytest.mark.parametrize(("args", "message"), [
    (["webhook", "add", "ftp://example.com/x"], "must start with https:// (or http://)"),
    (["webhook", "add", "https://example.com/x", "--events", "review,paid"], "events are review and decided"),
    (["webhook", "add", "https://example.com/x", "--secret", "short"], "at least 16 characters"),
    (["webhook", "remove", "nope"], "no webhook with id 'nope'; `hitl webhook list` shows them"),
    (["webhook", "deliveries", "nope"], "no webhook with id 'nope'"),
], ids=["scheme", "event", "secret", "remove", "deliveries"])
def test_bad_webhook_input_is_refused_with_the_fix_and_nothing_is_added(db: str, args: list[str], message: str) -> None:
    assert cli(db, "init").exit_code == 0  # the commands that only read or change a webhook refuse a missing database
    result = cli(db, *args)
    assert result.exit_code == 1 and message in result.output
    assert json.loads(cli(db, "webhook", "list", "--all", "--json").output) == []


@pytest.mark.slow
def test_a_deliverer_killed_mid_send_is_taken_over_and_the_entry_sent_again(db: str, effects_file: Path,
                                                                            receiver: Receiver) -> None:
    receiver.hold = threading.Event()  # the first POST hangs: the deliverer is killed while sending it
    url = receiver.start()
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        hook = runner.webhooks.add(f"{url}/hook")
        thread_id, _ = pay(runner)
    proc = subprocess.Popen([sys.executable, "-m", "hitl_graphs.cli", "--db", db, "notify", "--every", "0.1"],
                            env=subprocess_env(db), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not receiver.got and time.monotonic() < deadline:
            time.sleep(0.05)
        assert receiver.got, "the deliverer did not send"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        receiver.hold.set()
        if proc.poll() is None:
            proc.kill()
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        assert Notifier(runner).deliver().delivered == 1  # its claim died with it: taken over at once
        assert [d.outcome for d in runner.webhooks.deliveries(hook.id)] == ["delivered"]
    assert [(r.delivery, r.body["thread_id"]) for r in receiver.got] == [(receiver.got[0].delivery, thread_id)] * 2

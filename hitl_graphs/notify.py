"""Notifications: each new review and each decision POSTed to the webhooks that ask for it.

Why no outbox table: the history (`hitl_events`, the audit chain) is written in the same
transaction as the pause or decision it records, and its `seq` grows in commit order (each
append follows the chain's head row, under the write lock). So the history already is a
transactional outbox: a webhook only keeps a cursor (the last `seq` it is done with). A crash
between the pause and the send loses nothing; the next deliverer reads on from the cursor.

How a webhook is served, by `Notifier.deliver` (one pass; `hitl notify`, and `hitl serve` in
the background):

- A deliverer claims the webhook first (`WebhookStore.claim`): one deliverer holds a webhook at
  a time, so several deliverers (two `hitl serve`, a `hitl notify --every`) do not send twice.
  A deliverer that dies is taken over: at once on its host, after its lease elsewhere.
- Entries are sent in order, each as one POST with `X-Hitl-Signature: sha256=<HMAC-SHA256 of
  the body with the webhook's secret>` and `X-Hitl-Delivery: <webhook>-<seq>` (the same id on
  every attempt, so a receiver can drop repeats: delivery is at least once).
- A 2xx answer is delivered; anything else (an error status, a refused connection, a timeout, a
  redirect) is retried after a back-off that doubles up to a cap (`Retry`); after
  `Retry.attempts` attempts the entry is given up. Every attempt goes to the delivery log; the
  cursor moves past an entry only once it was delivered or given up. Later entries wait behind a
  failing one, so a receiver sees them in order.

What it is not: a queue per receiver with its own order guarantees beyond one webhook, or a
replay of the history before a webhook was added.

Example:
    >>> from hitl_graphs import Runner
    >>> with Runner.open(":memory:", workflows=[]) as runner:
    ...     Notifier(runner).deliver()
    PassReport(delivered=0, failed=0, gave_up=0, busy=0, waiting=0)
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from hitl_graphs.reviews import HistoryEntry
from hitl_graphs.runtime.runner import Runner
from hitl_graphs.storage.base import DeliveryOutcome, DeliveryRow, WebhookEvent, WebhookRow
from hitl_graphs.webhooks import delivery_id

BASE_URL_ENV = "HITL_BASE_URL"
"""Where people open the server (`https://hitl.example.com`): links in notifications point there."""

FEED: dict[str, WebhookEvent] = {"review_requested": "review", "decided": "decided"}
"""History events a webhook may ask for, by the name it asks with."""

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Hitl-Signature"
DELIVERY_HEADER = "X-Hitl-Delivery"


class Retry(BaseModel):
    """How often, and how patiently, a failing delivery is tried again.

    Example:
        >>> [Retry(first=5, cap=30).wait(n) for n in (1, 2, 3, 4, 5)]
        [5.0, 10.0, 20.0, 30.0, 30.0]
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    attempts: int = Field(default=8, ge=1, description="Attempts per entry before it is given up (and logged so).")
    first: float = Field(default=5.0, gt=0, description="Seconds before the second attempt; each wait doubles.")
    cap: float = Field(default=900.0, gt=0, description="The longest wait between two attempts, in seconds.")

    def wait(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (1 for the first)."""
        return float(min(self.cap, self.first * 2 ** (attempt - 1)))


class PassReport(BaseModel):
    """What one pass over the webhooks did (counted in entries; `busy` and `waiting` in webhooks)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    delivered: int = 0
    failed: int = 0
    gave_up: int = 0
    busy: int = 0
    """Webhooks another live deliverer holds."""
    waiting: int = 0
    """Webhooks whose next attempt is not due yet (back-off)."""


def sign(secret: str, body: bytes) -> str:
    """The `X-Hitl-Signature` value of `body`: `sha256=` and the hex HMAC-SHA256 with the secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify_signature(secret: str, body: bytes, header: str | None) -> bool:
    """Whether a received body carries a valid signature (for receivers; constant time).

    Example:
        >>> verify_signature("k" * 16, b"{}", sign("k" * 16, b"{}")), verify_signature("k" * 16, b"{ }", sign("k" * 16, b"{}"))
        (True, False)
    """
    return header is not None and hmac.compare_digest(sign(secret, body), header)


def link(base_url: str | None, thread_id: str) -> str | None:
    """Where a person opens the thread: `<base_url>/threads/<thread_id>`, None without a base URL."""
    return f"{base_url.rstrip('/')}/threads/{quote(thread_id, safe='')}" if base_url else None


def message(entry: HistoryEntry, *, webhook_id: str, workflow: str | None, base_url: str | None) -> dict[str, Any]:
    """The JSON body announcing one history entry (a `review_requested` or `decided` event)."""
    name = FEED[entry.event]
    d = entry.data
    body: dict[str, Any] = {
        "id": delivery_id(webhook_id, entry.seq), "event": name, "seq": entry.seq, "thread_id": entry.thread_id,
        "review_id": entry.review_id, "workflow": workflow, "at": entry.at.isoformat(),
        "link": link(base_url, entry.thread_id),
    }
    if name == "review":
        body.update({k: d.get(k) for k in ("kind", "title", "node", "required_role", "deadline")})
    else:
        body.update({"actor": entry.actor, "decision": d.get("kind"), "by": d.get("by"), "reason": d.get("reason"),
                     "comment": d.get("comment")})
    return body


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_message(body: Mapping[str, Any]) -> dict[str, Any]:
    """A Slack-compatible body (`{"text": ...}`, for an incoming webhook) for one `message`."""
    where = f"{body['workflow']} thread {body['thread_id']}" if body.get("workflow") else f"thread {body['thread_id']}"
    if body["event"] == "review":
        role = f" (needs role {body['required_role']})" if body.get("required_role") else ""
        text = f"Review needed{role}: {body.get('title') or body.get('kind')} ({where})"
    else:
        who = body.get("actor") or ("the deadline" if body.get("by") == "deadline" else "someone")
        why = f": {body['reason']}" if body.get("reason") else ""
        text = f"{who} decided {body.get('decision')} on review {body['review_id']} ({where}){why}"
    text = _slack_escape(text)
    text += f" <{body['link']}|Open the review>" if body.get("link") else f" (`hitl show {_slack_escape(body['thread_id'])}`)"
    return {"text": text, "unfurl_links": False}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is a failed delivery: a POST is not silently turned into a GET elsewhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> int:
    """POST `body` and return the status code (an error status too). Raises `OSError` (refused,
    timed out) or `http.client.HTTPException` (a broken answer) when there is no status."""
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with _opener.open(request, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)


class Notifier:
    """Delivers the history's new reviews and decisions to every live webhook (see the module).

    Args:
        runner: The runner on the database whose history is announced.
        base_url: Where people open the server; each notification links to the thread there.
        retry: Attempts and back-off for a failing webhook.
        timeout: Seconds one POST may take.
        lease: Seconds a claim is trusted on another host without news from its deliverer.
        batch: History entries read at a time.
    """

    def __init__(
        self,
        runner: Runner,
        *,
        base_url: str | None = None,
        retry: Retry = Retry(),
        timeout: float = 10.0,
        lease: float = 60.0,
        batch: int = 100,
    ) -> None:
        self.runner = runner
        self.base_url = base_url
        self.retry = retry
        self.timeout = timeout
        self.lease = lease
        self.batch = batch
        self.stopping = threading.Event()
        """Set it to end `run`, and the current pass after the entry it is sending."""
        self._workflows: dict[str, str | None] = {}

    def deliver(self) -> PassReport:
        """One pass: every live webhook is sent what it has not been sent yet (unless another
        deliverer holds it, or its back-off is not over)."""
        counts = {"delivered": 0, "failed": 0, "gave_up": 0, "busy": 0, "waiting": 0}
        for hook in self.runner.webhooks.store.listing():
            if self.stopping.is_set():
                break
            self._serve(hook, counts)
        return PassReport(**counts)

    def run(self, *, every: float) -> None:
        """Deliver every `every` seconds until `stopping` is set. A pass that fails (the database
        busy past its timeout) is logged and the next one tries again: nothing was lost, the
        cursors only move past what was sent."""
        while not self.stopping.is_set():
            try:
                self.deliver()
            except Exception:
                log.exception("a notification pass failed; the next one, in %g s, goes on from the same cursors", every)
            self.stopping.wait(every)

    def _serve(self, hook: WebhookRow, counts: dict[str, int]) -> None:
        if not self.runner.events_after(hook.cursor, limit=1):
            return  # nothing new: no claim, no write
        if self._waiting(hook, hook.cursor):
            counts["waiting"] += 1
            return
        store = self.runner.webhooks.store
        with self.runner.webhooks.hold() as owner:
            row = store.claim(hook.id, owner=owner, lease_until=time.time() + self.lease)
            if row is None:
                counts["busy"] += 1
                return
            try:
                self._drain(row, owner, counts)
            finally:
                store.release(row.id, owner=owner)

    def _waiting(self, hook: WebhookRow, cursor: int) -> bool:
        """Whether the entry after `cursor` failed last time and its next attempt is not due."""
        last = self.runner.webhooks.store.deliveries(hook.id, limit=1)
        return bool(last) and last[0].outcome == "failed" and last[0].seq > cursor \
            and (last[0].next_retry or 0.0) > time.time()

    def _drain(self, row: WebhookRow, owner: str, counts: dict[str, int]) -> None:
        store, cursor = self.runner.webhooks.store, row.cursor
        if self._waiting(row, cursor):  # read again under the claim: another deliverer may just have failed
            counts["waiting"] += 1
            return
        while not self.stopping.is_set():
            entries = self.runner.events_after(cursor, limit=self.batch)
            if not entries:
                return
            skipped: int | None = None  # the last entry passed over since the cursor last moved
            for entry in entries:
                if not self._wanted(row, entry):
                    skipped = entry.seq
                    continue
                done = self._send(row, entry, owner, counts)
                if done is not True:  # failed (try later), or the claim was lost (None)
                    if done is False and skipped is not None:
                        store.advance(row.id, skipped, owner=owner, lease_until=time.time() + self.lease)
                    return
                skipped = None
                if self.stopping.is_set():
                    return
            if skipped is not None and not store.advance(row.id, skipped, owner=owner,
                                                         lease_until=time.time() + self.lease):
                return
            cursor = entries[-1].seq

    def _wanted(self, row: WebhookRow, entry: HistoryEntry) -> bool:
        name = FEED.get(entry.event)
        if name is None or name not in row.events:
            return False
        return row.workflow is None or self._workflow(entry.thread_id) == row.workflow

    def _workflow(self, thread_id: str) -> str | None:
        if thread_id not in self._workflows:
            if len(self._workflows) > 10_000:
                self._workflows.clear()
            self._workflows[thread_id] = self.runner.workflow_of(thread_id)
        return self._workflows[thread_id]

    def _send(self, row: WebhookRow, entry: HistoryEntry, owner: str, counts: dict[str, int]) -> bool | None:
        """Attempt one entry: True if done with it (delivered or given up), False if it failed
        (try later), None if the claim was lost (another deliverer took over)."""
        store = self.runner.webhooks.store
        last = store.deliveries(row.id, limit=1)
        attempt = last[0].attempt + 1 if last and last[0].seq == entry.seq and last[0].outcome == "failed" else 1
        body = message(entry, webhook_id=row.id, workflow=self._workflow(entry.thread_id), base_url=self.base_url)
        data = json.dumps(slack_message(body) if row.format == "slack" else body, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json", "User-Agent": "hitl-graphs", "X-Hitl-Event": body["event"],
                   DELIVERY_HEADER: body["id"], SIGNATURE_HEADER: sign(row.secret, data)}
        code: int | None = None
        error: str | None = None
        try:
            code = post(row.url, data, headers, self.timeout)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
        ok = code is not None and 200 <= code < 300
        if code is not None and not ok:
            error = f"the receiver answered {code}"
        outcome: DeliveryOutcome = "delivered" if ok else "gave_up" if attempt >= self.retry.attempts else "failed"
        now = time.time()
        counts[outcome] += 1
        held = store.record(
            DeliveryRow(webhook_id=row.id, seq=entry.seq, attempt=attempt, outcome=outcome, status_code=code,
                        error=error, at=now, next_retry=now + self.retry.wait(attempt) if outcome == "failed" else None),
            owner=owner, lease_until=now + self.lease)
        if not held:
            return None
        return outcome != "failed"

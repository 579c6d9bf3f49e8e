"""Where notifications go: webhooks, configured once, with a log of every delivery attempt.

A webhook names a URL, which events it wants (`review`: a new pending review; `decided`: a
decision), optionally one workflow, a secret its deliveries are signed with (HMAC-SHA256, see
`hitl_graphs.notify`) and a body format (`json`, or `slack` for a Slack-compatible `{"text": ...}`).
The secret is kept in the database because every delivery is signed with it; it is shown once,
when the webhook is added, and never listed. A new webhook announces what happens from then on,
not the history before it.

Example:
    >>> from hitl_graphs import Runner
    >>> with Runner.open(":memory:", workflows=[]) as runner:
    ...     added = runner.webhooks.add("https://example.com/hook", events=["review"])
    ...     [w.url for w in runner.webhooks.list()], len(added.secret) > 20
    (['https://example.com/hook'], True)
"""

from __future__ import annotations

import builtins
import secrets
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from hitl_graphs.errors import ConfigError
from hitl_graphs.storage.base import (
    DeliveryOutcome,
    DeliveryRow,
    Liveness,
    WebhookEvent,
    WebhookFormat,
    WebhookRow,
    WebhookStore,
)

EVENTS: tuple[WebhookEvent, ...] = ("review", "decided")
FORMATS: tuple[WebhookFormat, ...] = ("json", "slack")


class WebhookInfo(BaseModel):
    """A webhook as `hitl webhook list` shows it (never the secret)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    url: str
    events: tuple[WebhookEvent, ...]
    workflow: str | None
    format: WebhookFormat
    created_at: datetime
    disabled_at: datetime | None = None
    cursor: int
    """The last history entry (`seq`) this webhook is done with."""


class AddedWebhook(WebhookInfo):
    """A webhook just added: `secret` (what receivers check signatures with) is shown this once."""

    secret: str


class DeliveryInfo(BaseModel):
    """One attempt to deliver one history entry to one webhook."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    webhook_id: str
    seq: int
    delivery_id: str
    """The `X-Hitl-Delivery` header: the same on every attempt of one entry, so a receiver can drop repeats."""
    attempt: int
    outcome: DeliveryOutcome
    status_code: int | None = None
    error: str | None = None
    at: datetime
    next_retry: datetime | None = None


def delivery_id(webhook_id: str, seq: int) -> str:
    """The id every attempt to deliver history entry `seq` to a webhook carries."""
    return f"{webhook_id}-{seq}"


def _at(t: float | None) -> datetime | None:
    return datetime.fromtimestamp(t, UTC) if t is not None else None


def info(row: WebhookRow) -> WebhookInfo:
    return WebhookInfo(id=row.id, url=row.url, events=row.events, workflow=row.workflow, format=row.format,
                       created_at=datetime.fromtimestamp(row.created_at, UTC), disabled_at=_at(row.disabled_at),
                       cursor=row.cursor)


def delivery_info(row: DeliveryRow) -> DeliveryInfo:
    return DeliveryInfo(webhook_id=row.webhook_id, seq=row.seq, delivery_id=delivery_id(row.webhook_id, row.seq),
                        attempt=row.attempt, outcome=row.outcome, status_code=row.status_code, error=row.error,
                        at=datetime.fromtimestamp(row.at, UTC), next_retry=_at(row.next_retry))


def check_url(url: str) -> str:
    """The URL, if a webhook can be POSTed to it.

    Raises:
        ConfigError: not an http(s) URL with a host.
    """
    parts = urlsplit(url.strip()) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"a webhook URL must start with https:// (or http://) and name a host, got {url!r}")
    return url.strip()


class Webhooks:
    """Add, list and remove webhooks, and read their delivery log (`runner.webhooks`)."""

    def __init__(self, store: WebhookStore, marks: Liveness) -> None:
        self.store = store
        """The storage behind it (the deliverer in `hitl_graphs.notify` claims and records through it)."""
        self._marks = marks

    def add(
        self,
        url: str,
        *,
        events: Sequence[str] | str = EVENTS,
        workflow: str | None = None,
        format: WebhookFormat = "json",
        secret: str | None = None,
    ) -> AddedWebhook:
        """Add a webhook; it is sent what happens from now on. Without `secret`, one is generated.

        Raises:
            ConfigError: a URL that is not http(s), an event other than review or decided, an
                unknown format, or a secret shorter than 16 characters.
        """
        url = check_url(url)
        if isinstance(events, str):
            events = events.split(",")
        wanted = tuple(dict.fromkeys(e.strip() for e in events if e.strip()))
        bad = [e for e in wanted if e not in EVENTS]
        if bad or not wanted:
            raise ConfigError(f"webhook events are review and decided (comma-separated), got {', '.join(events) or 'none'!r}")
        if format not in FORMATS:
            raise ConfigError(f"a webhook's format is json or slack, got {format!r}")
        if secret is not None and len(secret) < 16:
            raise ConfigError("a webhook secret needs at least 16 characters; leave it out and one is generated")
        if workflow is not None and not workflow.strip():
            raise ConfigError("--workflow needs a workflow name; leave it out for every workflow")
        key = secret if secret is not None else secrets.token_urlsafe(32)
        row = self.store.add(secrets.token_hex(4), url, events=[e for e in EVENTS if e in wanted], workflow=workflow,
                             secret=key, format=format)
        return AddedWebhook(**info(row).model_dump(), secret=key)

    def list(self, *, disabled: bool = False) -> list[WebhookInfo]:
        """Live webhooks, oldest first (with `disabled`, removed ones too)."""
        return [info(r) for r in self.store.listing(disabled=disabled)]

    def get(self, webhook_id: str) -> WebhookRow:
        """A webhook, secret included (for the deliverer and for tests that verify signatures).

        Raises:
            ConfigError: no webhook with that id.
        """
        row = self.store.get(webhook_id)
        if row is None:
            raise ConfigError(f"no webhook with id {webhook_id!r}; `hitl webhook list` shows them")
        return row

    def remove(self, webhook_id: str) -> WebhookInfo:
        """Stop delivering to a webhook; its delivery log stays.

        Raises:
            ConfigError: no webhook with that id.
        """
        row = self.store.disable(webhook_id)
        if row is None:
            raise ConfigError(f"no webhook with id {webhook_id!r}; `hitl webhook list` shows them")
        return info(row)

    def deliveries(self, webhook_id: str | None = None, *, limit: int = 50) -> builtins.list[DeliveryInfo]:
        """The delivery log, newest first: every attempt with its status code or error.

        Raises:
            ConfigError: no webhook with that id.
        """
        if webhook_id is not None:
            self.get(webhook_id)
        return [delivery_info(r) for r in self.store.deliveries(webhook_id, limit=limit)]

    def hold(self) -> AbstractContextManager[str]:
        """Mark a deliverer as alive for as long as the block runs; yields the owner its claims name."""
        return self._marks.hold()

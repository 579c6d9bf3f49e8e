"""The storage boundary: what the runtime needs of a database, whatever the database.

A `Store` owns its connection(s), its schema and the schema's migrations, and hands out four
small interfaces: the `ledger` (threads, reviews, claims, history), `effects` (results of
`run_once`, remembered approvals), `audit` (reads of the hash chain; appends ride on the
ledger's transactions), `feedback` (ratings), `tokens` (API tokens) and `webhooks` (where
notifications go, and how far each got). Plus LangGraph's saver, for checkpoints.

SQLite (`hitl_graphs.storage.sqlite`) is the first implementation. A backend is done when
`tests/test_store_contract.py`, one parametrised suite of these promises, passes on it: claim
once, sweep, the audit chain, effects, recover's bookkeeping.

The row types below are what every backend returns; they are plain frozen dataclasses, not
pydantic models, because they never leave the process (the CLI and the API show `ThreadView`
and `ReviewRequest`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TextIO

from langgraph.checkpoint.base import BaseCheckpointSaver

from hitl_graphs.audit import AuditHead, AuditReport, Event
from hitl_graphs.feedback import Feedback
from hitl_graphs.reviews import HistoryEntry, Outcome, ReviewRequest, ThreadStatus

DEFER_KEY = "__hitl_defer"
"""In a run's `configurable`: a store whose saver can may keep the run's checkpoints for its next
commit (the ledger's record of where the run stopped), so both commit together. Others ignore it;
a saver says which it is with `commits_with_ledger` (absent: False)."""

WRITTEN_KEY = "__hitl_written"
"""In a run's `configurable`: a list to which our savers append the id of every top-level
checkpoint they write for the run (`note_written`), so the runner knows where the run stopped
without reading it back (a round trip on a server). A saver that does not is read back."""


def note_written(config: Any, checkpoint_id: str) -> None:
    """Tell the run (`WRITTEN_KEY`) that its top-level checkpoint `checkpoint_id` was written."""
    configurable = config.get("configurable", {})
    written = configurable.get(WRITTEN_KEY)
    if written is not None and not configurable.get("checkpoint_ns"):
        written.append(checkpoint_id)


@dataclass(frozen=True, slots=True)
class ThreadRow:
    thread_id: str
    workflow: str
    status: ThreadStatus
    outcome: Outcome | None
    error: str | None
    owner: str | None
    lease_until: float | None
    created_at: float
    updated_at: float
    started_by: str | None


@dataclass(frozen=True, slots=True)
class NewThread:
    """A thread's start, as the ledger records it."""

    workflow: str
    started_by: str | None
    data: dict[str, Any]
    """The `started` entry's data: what the audit log keeps (the input's field names, never the input)."""
    input: Any = None
    """The run's input (JSON), kept outside the log only until the thread's first checkpoint
    holds it: what `recover` runs again when a run died before writing one."""


@dataclass(frozen=True, slots=True)
class Synced:
    """What `Ledger.sync` changed and where the thread stands after it."""

    added: list[ReviewRequest]
    """Reviews recorded for the first time (for notifications)."""
    thread: ThreadRow
    pending: list[ReviewRequest]
    """The thread's pending reviews, oldest first."""
    decided: list[str]
    """Reviews decided but not applied yet (a run that stopped mid-way: `recover` applies them)."""


@dataclass(frozen=True, slots=True)
class ReviewRow:
    request: ReviewRequest
    status: str
    checkpoint_id: str | None
    decision: dict[str, Any] | None
    decided_at: float | None

    @property
    def review_id(self) -> str:
        return self.request.review_id


@dataclass(frozen=True, slots=True)
class AtDecision:
    """What a decision is checked against, read together (`Store.at_decision`): the thread's row,
    its pending reviews (oldest first) and the id of its latest top-level checkpoint."""

    thread: ThreadRow | None
    pending: list[ReviewRow]
    latest_checkpoint_id: str | None


@dataclass(frozen=True, slots=True)
class TokenRow:
    """An API token as stored: never the secret, only who it speaks for."""

    id: str
    actor: str
    roles: tuple[str, ...]
    created_at: float
    revoked_at: float | None = None


WebhookEvent = Literal["review", "decided"]
"""What a webhook may ask for: a new pending review, or a decision."""
WebhookFormat = Literal["json", "slack"]
"""How a webhook's body is written: our JSON, or a Slack-compatible `{"text": ...}`."""
DeliveryOutcome = Literal["delivered", "failed", "gave_up"]


@dataclass(frozen=True, slots=True)
class WebhookRow:
    """A configured webhook and its delivery cursor: the last history `seq` it is done with."""

    id: str
    url: str
    events: tuple[WebhookEvent, ...]
    workflow: str | None
    secret: str
    format: WebhookFormat
    created_at: float
    disabled_at: float | None
    cursor: int


@dataclass(frozen=True, slots=True)
class DeliveryRow:
    """One attempt to deliver one history entry (`seq`) to one webhook, as the delivery log keeps it."""

    webhook_id: str
    seq: int
    attempt: int
    outcome: DeliveryOutcome
    status_code: int | None
    error: str | None
    at: float
    next_retry: float | None
    """When a `failed` attempt is tried again; None once delivered or given up."""


class Liveness(Protocol):
    """Which runs hold a thread right now: a crashed run's thread can be taken over at once."""

    def hold(self) -> AbstractContextManager[str]:
        """Mark a run as alive for as long as the block runs; yields its owner string."""
        ...

    def alive(self, owner: str | None, lease_until: float | None, now: float) -> bool:
        """Whether the run `owner` (with its lease) still runs."""
        ...


class LedgerStore(Protocol):
    """Threads, reviews and the history. Every method is one transaction; every write that
    changes what a person sees appends its audit entries in that same transaction."""

    def alive(self, row: ThreadRow) -> bool:
        """Whether a live run holds the thread."""
        ...

    def create_thread(self, thread_id: str, workflow: str, *, owner: str, lease_until: float, data: dict[str, Any],
                      actor: str | None = None, input: Any = None) -> None:
        """Record a thread about to start (`data`: its `started` entry; `input`: kept until its
        first checkpoint, see `NewThread`). Raises `ThreadExistsError` for an id already used."""
        ...

    def thread(self, thread_id: str) -> ThreadRow | None: ...

    def take_thread(self, thread_id: str, *, owner: str, lease_until: float,
                    expect: Sequence[ThreadStatus] | None = None) -> ThreadRow:
        """Mark a thread as run by `owner` unless a live run holds it (`ThreadBusyError`); with
        `expect`, only from those statuses, read under the write lock (`NoPendingReviewError`)."""
        ...

    def claim(self, thread_id: str, review_id: str, decision: Mapping[str, Any], *, owner: str, lease_until: float,
              by_deadline: bool = False, record: dict[str, Any] | None = None) -> None:
        """Record a decision if the review is still pending: exactly one caller wins
        (`AlreadyDecidedError` for the others). A person is refused after the deadline
        (`ReviewExpiredError`), the sweep (`by_deadline`) before it."""
        ...

    def reviews(self, thread_id: str, statuses: Iterable[str] = ("pending",)) -> list[ReviewRow]: ...

    def pending(self, *, workflow: str | None = None, roles: Sequence[str] | None = None, limit: int = 50,
                offset: int = 0) -> list[ReviewRequest]:
        """Pending reviews, oldest first; with `roles`, those needing no role or one of them."""
        ...

    def due(self, now: float, *, limit: int = 500) -> list[ReviewRow]:
        """Pending reviews whose deadline has passed."""
        ...

    def review(self, thread_id: str, review_id: str) -> ReviewRow | None: ...

    def sync(self, thread_id: str, *, status: ThreadStatus, outcome: Outcome | None, error: str | None,
             pending: Sequence[tuple[ReviewRequest, str | None]], events: Sequence[Event] = (),
             new: NewThread | None = None) -> Synced:
        """Make the ledger agree with the thread's latest checkpoint, in one transaction."""
        ...

    def threads_with_decided_reviews(self) -> list[str]:
        """Thread ids holding a decision not applied yet."""
        ...

    def threads_in(self, status: ThreadStatus) -> list[ThreadRow]: ...

    def fail_thread(self, thread_id: str, error: str, events: Sequence[Event] = ()) -> None: ...

    def release(self, thread_id: str, review_id: str, reason: str) -> None:
        """Take back a decision the graph refused: the review `superseded`, the thread `failed`
        until the graph asks again."""
        ...

    def threads_outside(self) -> list[str]:
        """Thread ids with checkpoints that the ledger does not know (run by plain LangGraph)."""
        ...

    def recover_attempts(self, thread_id: str) -> int:
        """How often `recover` ran the thread again since its last start, decision or retry request."""
        ...

    def add_events(self, thread_id: str, events: Sequence[Event]) -> None: ...

    def started_input(self, thread_id: str) -> Any:
        """The input the thread was started with (JSON), while no checkpoint holds it yet; None
        if none is kept."""
        ...

    def history(self, thread_id: str) -> list[HistoryEntry]: ...

    def events_after(self, seq: int, *, limit: int = 100) -> list[HistoryEntry]:
        """Every thread's history entries after `seq`, in order: what a live feed (Server-Sent
        Events, webhooks) follows. The history is written in the same transaction as the change
        it records, so a follower that keeps its last `seq` misses nothing and sees nothing twice."""
        ...


RECORDED = '"recorded"'
"""The result a `record_event` key's effect row keeps (JSON): only that the entry was recorded. The
entry's data is stored once, in the history (the audit log); the row only stops a node that runs
again from adding the entry twice."""


class EffectStore(Protocol):
    """What `run_once`, `record_event` and `AskOncePolicy(scope="workflow")` need."""

    def get(self, thread_id: str, key: str) -> tuple[bool, Any]:
        """(True, result) if an effect was recorded under `key`, else (False, None)."""
        ...

    def put(self, thread_id: str, key: str, result: Any) -> None:
        """Record an effect's result, durably, before the node goes on; a second put keeps the first."""
        ...

    def record_once(self, thread_id: str, key: str, event: str, data: dict[str, Any]) -> None:
        """Append `event` to the thread's history unless `key` was recorded before (its row keeps `RECORDED`)."""
        ...

    def remembered(self, thread_id: str, tool: str) -> bool:
        """Whether a person approved `tool` before for this thread's workflow and actor."""
        ...

    def remember(self, thread_id: str, tool: str, approved_by: str | None) -> bool:
        """Remember an approval for the thread's workflow and actor; False without an actor."""
        ...


class AuditStore(Protocol):
    """Reads of the hash-chained history (see `hitl_graphs.audit` for its rules)."""

    def head(self) -> AuditHead: ...

    def verify(self, *, expect_heads: Sequence[AuditHead] = ()) -> AuditReport: ...

    def recorded_decision(self, thread_id: str, review_id: str) -> dict[str, Any] | None:
        """The decision the log records for a review, if its entry is intact."""
        ...

    def export(self, out: TextIO, *, thread_id: str | None = None) -> int: ...


class FeedbackStore(Protocol):
    """Ratings of finished threads."""

    def record(self, fb: Feedback) -> None: ...

    def listing(self, *, workflow: str | None = None, unexported: bool = False) -> list[tuple[int, Feedback]]:
        """Ratings with their row ids, oldest first."""
        ...

    def mark_exported(self, row_id: int) -> None: ...


class TokenStore(Protocol):
    """API tokens: the server's proof of who calls (`hitl_graphs.identity`)."""

    def add(self, token_id: str, digest: str, actor: str, roles: Sequence[str]) -> TokenRow:
        """Store a token's hash (the secret itself is never stored)."""
        ...

    def listing(self) -> list[TokenRow]:
        """Every token, oldest first, revoked ones too."""
        ...

    def revoke(self, token_id: str) -> TokenRow | None:
        """Revoke a token at once; None if there is no such token."""
        ...

    def find(self, digest: str) -> TokenRow | None:
        """The live (not revoked) token with this hash."""
        ...

    async def afind(self, digest: str) -> TokenRow | None:
        """`find` for an event loop (the server checks a token on every request): it must not
        hold up the loop longer than a local read would."""
        ...


class WebhookStore(Protocol):
    """Webhooks, each with a cursor into the history and a log of delivery attempts.

    The history (`LedgerStore.events_after`) is the outbox: it is written in the same
    transaction as each pause and decision, so a webhook only keeps how far it got. Several
    deliverers share the work through `claim`: one holds a webhook at a time, so in normal
    operation nothing is sent twice; a deliverer that dies is taken over (at least once).
    """

    def add(self, webhook_id: str, url: str, *, events: Sequence[WebhookEvent], workflow: str | None, secret: str,
            format: WebhookFormat) -> WebhookRow:
        """Store a webhook whose cursor is the history's current end: it announces what happens from now on."""
        ...

    def get(self, webhook_id: str) -> WebhookRow | None: ...

    def listing(self, *, disabled: bool = False) -> list[WebhookRow]:
        """Live webhooks, oldest first (with `disabled`, the removed ones too)."""
        ...

    def disable(self, webhook_id: str) -> WebhookRow | None:
        """Stop delivering to a webhook (its log stays); None if there is no such webhook."""
        ...

    def claim(self, webhook_id: str, *, owner: str, lease_until: float) -> WebhookRow | None:
        """Take a live webhook for delivery unless another live deliverer holds it: the row as
        claimed (its cursor is where to go on from), None if held, disabled or unknown."""
        ...

    def record(self, attempt: DeliveryRow, *, owner: str, lease_until: float) -> bool:
        """Log an attempt and, if it was `delivered` or `gave_up`, move the cursor to its seq, in
        one transaction; renews the claim. False (the cursor unmoved, the attempt still logged)
        if `owner` no longer holds the webhook."""
        ...

    def advance(self, webhook_id: str, seq: int, *, owner: str, lease_until: float) -> bool:
        """Move the cursor to `seq` (entries the webhook does not ask for) if `owner` holds it."""
        ...

    def release(self, webhook_id: str, *, owner: str) -> None:
        """Give up the claim (if `owner` holds it)."""
        ...

    def deliveries(self, webhook_id: str | None = None, *, limit: int = 50) -> list[DeliveryRow]:
        """The delivery log, newest first (one webhook's, or every one's)."""
        ...


class WorkQueue(Protocol):
    """Where a worker (`Runner.work`, `hitl worker`) takes its work: decisions recorded without
    running the graph on (`Runner.decide`), and threads a crashed run left holding a decision.

    Taking is exactly-once: two workers never take the same thread while either holds it (on
    PostgreSQL `FOR UPDATE SKIP LOCKED`, so they take different threads without waiting on each
    other; on SQLite under the one write lock). `wait` is how an idle worker sleeps: until the
    ledger announces work (PostgreSQL `LISTEN/NOTIFY`) or the timeout (SQLite: it polls).
    """

    announces: bool
    """Whether `wait` wakes when work arrives (PostgreSQL); else a worker polls (SQLite)."""

    def take_decided(self, *, owner: str, lease: float, workflows: Sequence[str] | None = None) -> str | None:
        """Mark one thread that holds a decision no live run is applying as run by `owner` for
        `lease` seconds (on the database's clock where it has one), and return its id; None when
        there is none. With `workflows`, only threads of those workflows (the worker can run them)."""
        ...

    def next_deadline(self) -> float | None:
        """The earliest deadline of a pending review (seconds since the epoch), None if none."""
        ...

    def wait(self, timeout: float) -> bool:
        """Block until work may have arrived or `timeout` seconds passed; True if woken by the
        database. The first call starts listening, so call `wait(0)` before the first look."""
        ...


class Store(Protocol):
    """An open database: LangGraph's saver and our tables, behind one boundary.

    Close it (or use it as a context manager) to release its connections."""

    # read-only members (properties), so a backend's own types satisfy them (an attribute of a
    # protocol is settable, hence invariant: `audit: SqliteAudit` would not be an `AuditStore`)
    @property
    def location(self) -> str:
        """Where it is: a file path or a URL (without a password), for messages."""
        ...

    @property
    def saver(self) -> BaseCheckpointSaver[Any]: ...

    @property
    def ledger(self) -> LedgerStore: ...

    @property
    def effects(self) -> EffectStore: ...

    @property
    def audit(self) -> AuditStore: ...

    @property
    def feedback(self) -> FeedbackStore: ...

    @property
    def tokens(self) -> TokenStore: ...

    @property
    def webhooks(self) -> WebhookStore: ...

    @property
    def marks(self) -> Liveness: ...

    @property
    def queue(self) -> WorkQueue: ...

    def latest_checkpoint_id(self, thread_id: str) -> str | None:
        """The id of the thread's latest checkpoint (top level), None if it has none: cheap."""
        ...

    def at_decision(self, thread_id: str) -> AtDecision:
        """The thread's row, its pending reviews and its latest checkpoint id, as `ledger.thread`,
        `ledger.reviews` and `latest_checkpoint_id` read them, in one round trip where the
        database is a server: the reads every decision starts with."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Store: ...

    def __exit__(self, *exc: object) -> None: ...

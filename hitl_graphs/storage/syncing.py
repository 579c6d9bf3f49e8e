"""What `LedgerStore.sync` decides, whatever the database: the same rules on every backend.

Given the reviews the ledger knows for a thread and what its latest checkpoint shows as waiting,
`plan_sync` says which reviews change status and which history entries to append; each backend
only runs the SQL. (Two copies of these rules, one per dialect, would drift.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hitl_graphs.audit import Event, content_hash
from hitl_graphs.reviews import Outcome, ReviewRequest, ThreadStatus
from hitl_graphs.storage.base import Synced, ThreadRow


@dataclass
class SyncPlan:
    """The changes one `sync` makes, before any SQL runs."""

    applied: list[str] = field(default_factory=list)
    """Decided reviews the run has settled: now `applied`."""
    closed: list[tuple[str, str]] = field(default_factory=list)
    """Pending reviews no longer waiting, with their new status: `superseded` or `cancelled`."""
    added: list[tuple[ReviewRequest, str | None]] = field(default_factory=list)
    """New reviews to insert, with the checkpoint each was raised on."""
    open_requests: list[str] = field(default_factory=list)
    """Known reviews still pending (their stored request JSON, oldest first)."""
    decided: list[str] = field(default_factory=list)
    """Reviews decided but not applied yet (`recover` applies them)."""
    events: list[Event] = field(default_factory=list)


def plan_sync(
    known: Mapping[str, tuple[str, str]],
    pending: Sequence[tuple[ReviewRequest, str | None]],
    *,
    status: ThreadStatus,
    outcome: Outcome | None,
    events: Sequence[Event] = (),
) -> SyncPlan:
    """The changes for a thread whose ledger knows `known` (review id -> (status, request JSON),
    oldest first) and whose checkpoint shows `pending` waiting.

    Decided reviews no longer waiting become `applied` once the run has settled (paused again or
    done; a run that stopped mid-way keeps them `decided` for `recover`); pending ones no longer
    waiting were answered outside the runner and become `superseded` (`cancelled` when the thread
    was cancelled).

    Example:
        >>> plan = plan_sync({"r1": ("decided", "{}")}, [], status="done", outcome="completed")
        >>> plan.applied, [e.event for e in plan.events]
        (['r1'], ['applied'])
    """
    plan = SyncPlan(events=list(events))
    waiting = {r.review_id for r, _ in pending}
    settled = status in ("paused", "done")
    for review_id, (old, request) in known.items():
        if review_id in waiting:
            if old == "pending":
                plan.open_requests.append(request)
            elif old == "decided":
                plan.decided.append(review_id)
        elif old == "decided" and settled:
            plan.applied.append(review_id)
            plan.events.append(Event("applied", review_id))
        elif old == "decided":
            plan.decided.append(review_id)
        elif old == "pending":
            new_status = "cancelled" if outcome == "cancelled" else "superseded"
            plan.closed.append((review_id, new_status))
            plan.events.append(Event(f"review_{new_status}", review_id))
    for review, checkpoint_id in pending:
        if review.review_id not in known:
            plan.added.append((review, checkpoint_id))
            plan.events.append(requested(review))
    return plan


def requested(review: ReviewRequest) -> Event:
    """The history entry of a new review: what the person is shown, by its hash.

    The payload itself is stored once, in the review's ledger row (a template's payload can be
    large, and it grows with a plan's steps); the entry's `payload_hash` commits the chain to it,
    so `verify` finds a payload edited there, and the ledger's history reads put it back in.
    """
    return Event("review_requested", review.review_id, data={
        "node": review.node, "kind": review.kind, "position": review.position, "title": review.title,
        "payload_hash": review.payload_hash or content_hash(review.payload),
        "required_role": review.required_role,
        "deadline": review.deadline.isoformat() if review.deadline else None,
    })


def with_payload(event: str, data: dict[str, Any], request: str | None) -> dict[str, Any]:
    """A history entry's data as a person reads it: a `review_requested` entry gets its payload
    back from the review's ledger row (`request`, its JSON), where it is stored once; entries
    written before that change hold theirs already."""
    if event != "review_requested" or request is None or "payload" in data:
        return data
    return {**data, "payload": json.loads(request).get("payload")}


def keeps_input(status: ThreadStatus) -> bool:
    """Whether a thread's input must be kept outside its checkpoints: until a settled run (paused
    or done) has committed a checkpoint that holds it, `recover` may need to run it again."""
    return status not in ("paused", "done")


def ended(prev_status: ThreadStatus, prev_outcome: Outcome | None, status: ThreadStatus, outcome: Outcome | None,
          error: str | None) -> list[Event]:
    """The entry for a thread that has just ended (done or failed), if it has."""
    if (prev_status, prev_outcome) == (status, outcome) or status not in ("done", "failed"):
        return []
    return [Event("failed" if status == "failed" else (outcome or "completed"), data={"error": error} if error else None)]


def synced(plan: SyncPlan, thread: ThreadRow) -> Synced:
    """What `sync` returns: what changed and where the thread now stands."""
    added = [r for r, _ in plan.added]
    return Synced(added=added, thread=thread, decided=plan.decided,
                  pending=[*(ReviewRequest.model_validate_json(r) for r in plan.open_requests),
                           *sorted(added, key=lambda r: (r.created_at, r.review_id))])

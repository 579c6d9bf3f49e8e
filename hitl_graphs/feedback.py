"""Ratings of finished threads' output, kept beside the threads and exportable on request.

A person rates what a thread produced (0 to 1, with a comment); the ratings are listed per
workflow. Nothing leaves the machine unless the user hands a client to `export_feedback`
(LangSmith's `Client` fits; any object with the same `create_feedback` method does).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from hitl_graphs.storage.base import FeedbackStore



class Feedback(BaseModel):
    """One rating of a thread's output.

    Example:
        >>> Feedback(thread_id="t", workflow="w", score=0.8, at="2026-01-01T00:00:00Z").key
        'helpfulness'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    thread_id: str
    workflow: str
    score: float = Field(ge=0.0, le=1.0)
    key: str = "helpfulness"
    comment: str | None = None
    actor: str | None = None
    at: datetime


class FeedbackClient(Protocol):
    """What `export_feedback` needs of a client: LangSmith's `Client.create_feedback`."""

    def create_feedback(self, run_id: Any, key: str, *, score: float, comment: str | None = None) -> Any: ...


def export_feedback(store: FeedbackStore, client: FeedbackClient, *, run_id_for: Callable[[Feedback], Any]) -> int:
    """Send not-yet-exported ratings to `client`; each is marked exported once sent.

    `run_id_for` maps a rating to the tracing run it rates (hitl_graphs does not know your
    LangSmith run ids; record them in your state or metadata and look them up here).
    """
    sent = 0
    for row_id, fb in store.listing(unexported=True):
        client.create_feedback(run_id_for(fb), fb.key, score=fb.score, comment=fb.comment)
        store.mark_exported(row_id)
        sent += 1
    return sent


def now() -> datetime:
    return datetime.fromtimestamp(time.time(), UTC)

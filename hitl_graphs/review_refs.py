"""How a person names a review: one scheme for `hitl pending`, `hitl show`, refusals and `--review`.

A review's *ref* is its `key` when it has one (a tool call id, a phase name: unique among the
thread's pending reviews), else the first 12 characters of its id. `hitl pending`, `hitl show`
and every refusal that lists reviews print refs, and `--review` / `resume(review_id=...)` takes,
tried in this order:

1. a review's full id or its key (what `--json` output carries);
2. the name of the tool a tool-call review calls, when one pending review of the thread calls it
   (`--review send_email`); when several do, the refusal lists their refs;
3. the start of its id, at least `MIN_PREFIX` characters (a ref of a review without a key is one).

Example:
    >>> from hitl_graphs.reviews import ReviewRequest
    >>> def review(review_id, key, tool):
    ...     return ReviewRequest(review_id=review_id, thread_id="t", workflow="w", node="tools",
    ...         position="before", kind="tool_calls", title=f"Run {tool}?", payload={"tool": tool},
    ...         allowed=("approve",), editable=(), source="interrupt", created_at="2026-01-01T00:00:00Z", key=key)
    >>> pending = [review("9f2c4e1a77b0d3", "call_1", "send"), review("41d0aa2c9e8f51", "call_2", "pay")]
    >>> [review_ref(r) for r in pending]
    ['call_1', 'call_2']
    >>> [review_ref(r) for r in match_reviews(pending, "pay")]
    ['call_2']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hitl_graphs.errors import ReviewNotPendingError, UnknownReviewError
from hitl_graphs.reviews import ReviewRequest

MIN_PREFIX = 6
"""The fewest characters of a review id that name it."""
SHORT_ID = 12
"""How much of a review id is shown when the review has no key."""


def review_ref(review: ReviewRequest) -> str:
    """What a person sees and types for this review: its key, else the start of its id."""
    return review.key or review.review_id[:SHORT_ID]


def review_tool(review: ReviewRequest) -> str | None:
    """The tool a tool-call review calls (its payload's `tool`), else None."""
    payload = review.payload
    tool = payload.get("tool") if review.kind == "tool_calls" and isinstance(payload, dict) else None
    return tool if isinstance(tool, str) else None


def describe(reviews: Iterable[ReviewRequest]) -> str:
    """`ref (title); ref (title)`: enough to tell reviews apart, and to copy one's ref."""
    return "; ".join(f"{review_ref(r)} ({r.title})" for r in reviews)


def match_reviews(reviews: Sequence[ReviewRequest], ref: str) -> list[ReviewRequest]:
    """The reviews `ref` names, by the rules of the module docs (several when ambiguous)."""
    exact = [r for r in reviews if ref in (r.review_id, r.key)]
    if exact:
        return exact
    calling = [r for r in reviews if review_tool(r) == ref]
    if calling or len(ref.strip()) < MIN_PREFIX:
        return calling
    return [r for r in reviews if r.review_id.startswith(ref)]


def pick_review(pending: Sequence[ReviewRequest], ref: str, thread_id: str) -> ReviewRequest | None:
    """The one pending review `ref` names, or None when it names none of them.

    Raises:
        ReviewNotPendingError: `ref` names several (the message lists their refs).
    """
    matches = match_reviews(pending, ref)
    if len(matches) <= 1:
        return matches[0] if matches else None
    if review_tool(matches[0]) == ref:
        raise ReviewNotPendingError(
            f"{len(matches)} pending reviews of thread {thread_id!r} call {ref!r}; pass the review id of one: "
            f"{describe(matches)}"
        )
    raise ReviewNotPendingError(
        f"review id {ref!r} matches {len(matches)} pending reviews of thread {thread_id!r}; give more of it: "
        f"{describe(matches)}"
    )


def not_pending(ref: str, thread_id: str, pending: Sequence[ReviewRequest]) -> ReviewNotPendingError:
    # an id that names no review the thread has (UnknownReviewError: 404 over HTTP); the caller
    # has already ruled out one decided, cancelled or superseded
    """The refusal for a ref that names no pending review: too short, or not among them."""
    if len(ref.strip()) < MIN_PREFIX:
        return ReviewNotPendingError(
            f"review id {ref!r} is too short to name a review of thread {thread_id!r}: give at least "
            f"{MIN_PREFIX} characters of its id, its key, or the tool it calls (`hitl show {thread_id}` lists them)"
        )
    listing = f"pending: {describe(pending)}" if pending else "nothing is"
    return UnknownReviewError(f"review {ref!r} is not pending on thread {thread_id!r}; {listing}")

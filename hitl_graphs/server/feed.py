"""The live feed shared by `/api/events` (a token) and the inbox's `/inbox/events` (a session):
Server-Sent Events read from the history, which is written in the same transaction as each pause
and decision, so a follower that reconnects with `Last-Event-ID` misses nothing and sees nothing
twice, across server restarts too."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from fastapi import Request
from fastapi.responses import StreamingResponse

from hitl_graphs.reviews import HistoryEntry
from hitl_graphs.runtime.runner import Runner

FEED = {"review_requested": "review", "decided": "decided"}


def frame(entry: HistoryEntry, roles: Sequence[str]) -> str | None:
    """One SSE frame for a history entry, or None when it is not news for someone with `roles`
    (a review that needs a role they lack, or any other kind of entry)."""
    name = FEED.get(entry.event)
    role = entry.data.get("required_role")
    if name is None or (name == "review" and role is not None and role not in roles):
        return None
    data: dict[str, Any] = {"thread_id": entry.thread_id, "review_id": entry.review_id, "actor": entry.actor,
                            "at": entry.at.isoformat()}
    if name == "review":
        data.update(kind=entry.data.get("kind"), title=entry.data.get("title"), node=entry.data.get("node"),
                    required_role=role)
    else:
        data.update(decision=entry.data.get("kind"), by=entry.data.get("by"))
    return f"id: {entry.seq}\nevent: {name}\ndata: {json.dumps(data)}\n\n"


def start_cursor(request: Request, runner: Runner, after: int | None) -> int:
    """Where a follower starts: `?after=`, else the `Last-Event-ID` a reconnecting EventSource
    sends, else from now on."""
    last = request.headers.get("last-event-id")
    if after is not None:
        return after
    return int(last) if last and last.isdigit() else runner.audit_head().seq


def stream(runner: Runner, roles: Sequence[str], cursor: int, poll: float,
           disconnected: Callable[[], Awaitable[bool]]) -> StreamingResponse:
    """The feed from `cursor` on, read every `poll` seconds while nothing is new."""

    async def events() -> AsyncIterator[str]:
        position = cursor
        yield ": connected\n\n"
        while not await disconnected():
            entries = await asyncio.to_thread(runner.events_after, position, limit=200)
            for entry in entries:
                position = entry.seq
                text = frame(entry, roles)
                if text is not None:
                    yield text
            if not entries:
                await asyncio.sleep(poll)

    return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

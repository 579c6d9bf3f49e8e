"""Run one test through either driver of the `Runner`: the sync methods or their async twins.

`Driven` has the `Runner`'s sync names (`start`, `resume`, ...). Built for the sync driver it
calls them; for the async driver it awaits the twin (`astart`, `aresume`, ...) on an event loop
of its own, so a behaviour table written once runs on both drivers, and breaks when either does.
Names without a twin (`graph`, `feedback`, `audit_verify`, `store`, ...) pass through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from hitl_graphs import Decision, HistoryEntry, ReviewRequest, Runner, ThreadView

Driver = Literal["sync", "async"]
DRIVERS: tuple[Driver, ...] = ("sync", "async")
T = TypeVar("T")

TWINS = ("start", "pending", "show", "resume", "cancel", "history", "recover", "retry", "sweep", "wait_for_decision")
"""The sync methods whose async twin is the same name with an `a` in front."""


class Driven:
    """A `Runner` seen through one driver (see the module docstring)."""

    def __init__(self, runner: Runner, driver: Driver) -> None:
        self.runner = runner
        self.driver = driver
        self._loop = asyncio.new_event_loop() if driver == "async" else None

    def close(self) -> None:
        """Stop the async driver's event loop and the worker threads its saver used."""
        if self._loop is not None:
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self._loop is None:
            return getattr(self.runner, name)(*args, **kwargs)
        twin: Awaitable[Any] = getattr(self.runner, "a" + name)(*args, **kwargs)
        return self._loop.run_until_complete(twin)

    def start(self, workflow: str, input: Mapping[str, Any] | None = None, *, thread_id: str | None = None,
              actor: str | None = None) -> ThreadView:
        return self._call("start", workflow, input, thread_id=thread_id, actor=actor)  # type: ignore[no-any-return]

    def pending(self, *, workflow: str | None = None, roles: Sequence[str] | None = None, limit: int = 50,
                offset: int = 0) -> list[ReviewRequest]:
        return self._call("pending", workflow=workflow, roles=roles, limit=limit, offset=offset)  # type: ignore[no-any-return]

    def show(self, thread_id: str) -> ThreadView:
        return self._call("show", thread_id)  # type: ignore[no-any-return]

    def resume(self, thread_id: str, decision: Decision | Mapping[str, Any] | str, *, review_id: str | None = None,
               roles: Sequence[str] = ()) -> ThreadView:
        return self._call("resume", thread_id, decision, review_id=review_id, roles=roles)  # type: ignore[no-any-return]

    def cancel(self, thread_id: str, *, actor: str | None = None, reason: str | None = None) -> ThreadView:
        return self._call("cancel", thread_id, actor=actor, reason=reason)  # type: ignore[no-any-return]

    def history(self, thread_id: str) -> list[HistoryEntry]:
        return self._call("history", thread_id)  # type: ignore[no-any-return]

    def recover(self) -> list[ThreadView]:
        return self._call("recover")  # type: ignore[no-any-return]

    def retry(self, thread_id: str, *, actor: str | None = None) -> ThreadView:
        return self._call("retry", thread_id, actor=actor)  # type: ignore[no-any-return]

    def sweep(self) -> list[ThreadView]:
        return self._call("sweep")  # type: ignore[no-any-return]

    def wait_for_decision(self, thread_id: str, *, review_id: str | None = None, timeout: float,
                          poll: float = 0.2) -> ThreadView:
        return self._call("wait_for_decision", thread_id, review_id=review_id, timeout=timeout, poll=poll)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        if name in {"a" + twin for twin in TWINS} | {"await_decision"}:
            raise AttributeError(f"call runner.{name[1:]}(...): the `runner` fixture picks the driver")
        return getattr(self.runner, name)

    def __repr__(self) -> str:
        return f"Driven({self.driver})"

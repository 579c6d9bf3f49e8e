"""Streaming a run through the runner: LangGraph's own chunks, with the ledger's guarantees.

`Runner.stream` / `stream_resume` (and `astream` / `astream_resume`) drive the very flows of
`start` / `resume` (`hitl_graphs.runtime.running`, `deciding`). Only the driver differs: it runs
the `Invoke` a flow yields with `graph.stream` (`astream`) instead of `invoke`, hands the caller
every chunk of the `stream_mode`s asked for, exactly as LangGraph yields them, and then lets the
flow read where the run stopped from the checkpoint. So the thread id check, the claim of the
decision, the hold on the thread, the ledger's sync and the audit entries are those of `start`
and `resume`; the caller just sees the run as it goes. (Plain `runner.graph(name).stream(...)`
bypasses all of that: the ledger never hears of the thread.)

The stream is a `RunStream` (`AsyncRunStream`): iterate it for the chunks; once it is exhausted
its `.view` is the `ThreadView` that `start` / `resume` would have returned. A refusal (unknown
thread, a decision the review does not take, ...) raises from the first `next()`, before
anything is written, as LangGraph's own streams start lazily.

Stopping early (`break`, `close()`) stops the run where it was: the thread is marked failed with
that reason, and `hitl recover` continues it (with the recorded decision, if one was taken).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Generator, Mapping, Sequence
from contextlib import aclosing, closing
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from langgraph.types import StreamMode

from hitl_graphs.decisions import Decision
from hitl_graphs.reviews import ThreadView
from hitl_graphs.runtime.driver import Flow, Invoke, StreamClosed, async_only, run_async, run_sync, sync_drive

if TYPE_CHECKING:
    from hitl_graphs.runtime.host import RunnerHost as Runner  # a Protocol: the type of `self` in a part (host.py says why)

StreamModes: TypeAlias = StreamMode | Sequence[StreamMode] | None
"""One mode (chunks are payloads), several (chunks are `(mode, payload)`), or None: the graph's default."""

@dataclass(frozen=True, slots=True)
class _Ask:
    """What the caller asked to see: handed to `graph.stream` as given, so the chunks are LangGraph's."""

    modes: StreamModes
    subgraphs: bool

    def kwargs(self, effect: Invoke) -> dict[str, Any]:
        modes = self.modes if self.modes is not None else effect.graph.stream_mode
        return {"stream_mode": modes if isinstance(modes, str) else list(modes), "subgraphs": self.subgraphs,
                "durability": effect.durability}


def _chunks(effect: Invoke, ask: _Ask) -> Generator[Any, None, None]:
    if async_only(effect.graph):
        # LangGraph's sync stream refuses async-only nodes: step its async stream on a loop of our
        # own (no loop runs in this thread: `Runner.graph` refused the call otherwise)
        loop = asyncio.new_event_loop()
        # LangGraph annotates `astream` as an `AsyncIterator`; it is an async generator, which has `aclose`
        agen = cast(AsyncGenerator[Any, None], effect.graph.astream(effect.input, effect.config, **ask.kwargs(effect)))
        try:
            while True:
                try:
                    yield loop.run_until_complete(agen.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            loop.run_until_complete(agen.aclose())
            loop.close()
    else:
        yield from effect.graph.stream(effect.input, effect.config, **ask.kwargs(effect))


def _stream_sync(flow: Flow[ThreadView], ask: _Ask, done: list[ThreadView]) -> Generator[Any, None, None]:
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(send)
        except StopIteration as stop:
            done.append(stop.value)
            return
        send, error = None, None
        try:
            if not isinstance(effect, Invoke):
                send = run_sync(effect)
                continue
            with closing(_chunks(effect, ask)) as chunks:
                for chunk in chunks:
                    try:
                        yield chunk
                    except GeneratorExit:
                        chunks.close()  # stop the run before settling where it stopped
                        _abandon_sync(flow)
                        raise
            # None: the flow reads where the run stopped from the checkpoint
        except Exception as exc:
            error = exc


def _abandon_sync(flow: Flow[ThreadView]) -> None:
    error: BaseException | None = StreamClosed("the caller stopped reading the stream before the run ended")
    send: Any = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(send)
        except (StopIteration, Exception):  # the flow settled the ledger and re-raised what we threw
            return
        send, error = None, None
        try:
            send = run_sync(effect)
        except Exception as exc:
            error = exc


async def _stream_async(flow: Flow[ThreadView], ask: _Ask, done: list[ThreadView]) -> AsyncGenerator[Any, None]:
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(send)
        except StopIteration as stop:
            done.append(stop.value)
            return
        send, error = None, None
        try:
            if not isinstance(effect, Invoke):
                send = await run_async(effect)
                continue
            stream = cast(AsyncGenerator[Any, None], effect.graph.astream(effect.input, effect.config, **ask.kwargs(effect)))
            async with aclosing(stream) as chunks:  # an async generator, though annotated `AsyncIterator`
                async for chunk in chunks:
                    try:
                        yield chunk
                    except GeneratorExit:
                        await chunks.aclose()
                        await _abandon_async(flow)
                        raise
        except Exception as exc:
            error = exc


async def _abandon_async(flow: Flow[ThreadView]) -> None:
    error: BaseException | None = StreamClosed("the caller stopped reading the stream before the run ended")
    send: Any = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(send)
        except (StopIteration, Exception):
            return
        send, error = None, None
        try:
            send = await run_async(effect)
        except Exception as exc:
            error = exc


_NOT_ENDED = ("the stream has not ended: iterate it to its end (`for chunk in stream: ...`) before reading "
              "`.view`; chunks not read yet are the rest of the run")


class RunStream:
    """The chunks of one run through the runner, as `graph.stream` yields them; `.view` at the end.

    Example:
        >>> from hitl_graphs import Approve, Runner
        >>> from hitl_graphs.examples import email_workflow
        >>> with Runner.open(":memory:", workflows=[email_workflow()]) as runner:
        ...     stream = runner.stream("email", {"to": "ana@example.com", "topic": "lunch"}, stream_mode="updates")
        ...     nodes = [node for chunk in stream for node in chunk]
        ...     stream.view.status, nodes[-1]
        ...     done = runner.stream_resume(stream.view.thread_id, Approve(actor="ana"))
        ...     _ = list(done)
        ...     done.view.status
        ('paused', '__interrupt__')
        'done'
    """

    def __init__(self, flow: Flow[ThreadView], *, stream_mode: StreamModes = None, subgraphs: bool = False) -> None:
        self._done: list[ThreadView] = []
        self._chunks = _stream_sync(flow, _Ask(stream_mode, subgraphs), self._done)

    def __iter__(self) -> RunStream:
        return self

    def __next__(self) -> Any:
        if getattr(sync_drive, "in_loop", False) or asyncio._get_running_loop() is None:
            return next(self._chunks)
        sync_drive.in_loop = True  # a sync stream read inside a running loop: see `Runner.graph`
        try:
            return next(self._chunks)
        finally:
            sync_drive.in_loop = False

    @property
    def ended(self) -> bool:
        """Whether the run ended and the ledger agrees with where it stopped."""
        return bool(self._done)

    @property
    def view(self) -> ThreadView:
        """The thread as `start` / `resume` would have returned it (status, reviews, state).

        Raises:
            RuntimeError: the stream was not read to its end yet.
        """
        if not self._done:
            raise RuntimeError(_NOT_ENDED)
        return self._done[0]

    def close(self) -> None:
        """Stop reading: a run still going stops where it is (`hitl recover` continues it)."""
        self._chunks.close()

    def __enter__(self) -> RunStream:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class AsyncRunStream:
    """`RunStream` for `async for`: the chunks of `graph.astream`; `.view` at the end.

    Use it with `async with` (or call `aclose()`) when you may stop before its end, so the run is
    settled at once rather than when the stream is garbage collected.

    Example:
        >>> import asyncio
        >>> from hitl_graphs import Runner
        >>> from hitl_graphs.examples import email_workflow
        >>> async def main() -> str:
        ...     with Runner.open(":memory:", workflows=[email_workflow()]) as runner:
        ...         async with runner.astream("email", {"to": "ana@example.com", "topic": "lunch"}) as stream:
        ...             async for chunk in stream:
        ...                 pass
        ...         return stream.view.status
        >>> asyncio.run(main())
        'paused'
    """

    def __init__(self, flow: Flow[ThreadView], *, stream_mode: StreamModes = None, subgraphs: bool = False) -> None:
        self._done: list[ThreadView] = []
        self._chunks = _stream_async(flow, _Ask(stream_mode, subgraphs), self._done)

    def __aiter__(self) -> AsyncRunStream:
        return self

    async def __anext__(self) -> Any:
        return await self._chunks.__anext__()

    @property
    def ended(self) -> bool:
        """Whether the run ended and the ledger agrees with where it stopped."""
        return bool(self._done)

    @property
    def view(self) -> ThreadView:
        """The thread as `astart` / `aresume` would have returned it.

        Raises:
            RuntimeError: the stream was not read to its end yet.
        """
        if not self._done:
            raise RuntimeError(_NOT_ENDED.replace("for chunk", "async for chunk"))
        return self._done[0]

    async def aclose(self) -> None:
        """Stop reading: a run still going stops where it is (`hitl recover` continues it)."""
        await self._chunks.aclose()

    async def __aenter__(self) -> AsyncRunStream:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()



class StreamMethods:
    """`stream`, `stream_resume` and their async twins. (A part of `Runner`.)"""

    def stream(
        self: Runner,
        workflow: str,
        input: Mapping[str, Any] | None = None,
        *,
        thread_id: str | None = None,
        actor: str | None = None,
        stream_mode: StreamModes = None,
        subgraphs: bool = False,
    ) -> RunStream:
        """`start`, streaming: LangGraph's chunks of the run as `graph.stream(..., stream_mode=...)`
        yields them, then `.view` (the `ThreadView` `start` returns) once the stream is exhausted.

        `stream_mode` is LangGraph's: one mode (chunks are its payloads), a list (chunks are
        `(mode, payload)`), or None for the graph's default; `subgraphs=True` prefixes each chunk
        with its namespace. The ledger records the thread as `start` does; see
        `hitl_graphs.runtime.streaming`.

        Raises (on the first `next()`, before anything is written):
            UnknownWorkflowError, ThreadExistsError: as `start`.
        """
        return RunStream(self._start(workflow, input, thread_id, actor), stream_mode=stream_mode, subgraphs=subgraphs)

    def stream_resume(
        self: Runner,
        thread_id: str,
        decision: Decision | Mapping[str, Any] | str,
        *,
        review_id: str | None = None,
        roles: Sequence[str] = (),
        stream_mode: StreamModes = None,
        subgraphs: bool = False,
    ) -> RunStream:
        """`resume`, streaming: the run after the decision as LangGraph's chunks, then `.view`.

        The decision is admitted and claimed exactly as by `resume` (one winner; a refusal raises
        on the first `next()` and changes nothing).
        """
        flow = self._resume(thread_id, decision, review_id, tuple(roles))
        return RunStream(flow, stream_mode=stream_mode, subgraphs=subgraphs)

    def astream(
        self: Runner,
        workflow: str,
        input: Mapping[str, Any] | None = None,
        *,
        thread_id: str | None = None,
        actor: str | None = None,
        stream_mode: StreamModes = None,
        subgraphs: bool = False,
    ) -> AsyncRunStream:
        """Async `stream`: `async for chunk in runner.astream(...)`, then `.view`."""
        return AsyncRunStream(self._start(workflow, input, thread_id, actor), stream_mode=stream_mode, subgraphs=subgraphs)

    def astream_resume(
        self: Runner,
        thread_id: str,
        decision: Decision | Mapping[str, Any] | str,
        *,
        review_id: str | None = None,
        roles: Sequence[str] = (),
        stream_mode: StreamModes = None,
        subgraphs: bool = False,
    ) -> AsyncRunStream:
        """Async `stream_resume`."""
        flow = self._resume(thread_id, decision, review_id, tuple(roles))
        return AsyncRunStream(flow, stream_mode=stream_mode, subgraphs=subgraphs)

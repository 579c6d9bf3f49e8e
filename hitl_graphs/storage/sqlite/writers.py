"""Writers of one SQLite file queue on an OS lock, so a waiting writer wakes the moment it is free.

Two processes writing one file meet at SQLite's write lock. SQLite tells a writer that finds it
taken only "busy", and its busy handler sleeps and retries in coarse steps (1, 2, 5, 10 ... 100 ms):
the waiter sleeps through the moment the lock is released, the other process often takes it again
first, and a cycle's latency grows by tens of milliseconds (two workers on one file: p99 12.6 ->
76 ms, max 464 ms, and no more cycles per second than one worker).

So a write transaction first takes `WriterQueue`: an exclusive `fcntl` lock on byte 0 of the run
marks file beside the database (`<db>-runs`; `liveness` uses the bytes from 2**20 on), waited for
in the kernel, which wakes the waiter as the holder unlocks. POSIX locks belong to a process, so a
threading lock per file queues the process's own stores before they reach the kernel.

The queue only orders our writers; SQLite's lock still decides who writes. A writer outside the
queue (an older release, plain LangGraph's own commits, the sqlite3 shell) meets SQLite's busy
handler as before, and where the marks file cannot be opened (a read-only folder) our writers do
too. A wait is bounded like SQLite's: past the store's busy timeout, `DatabaseBusyError` (retrying
is safe: nothing was written).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from hitl_graphs.errors import DatabaseBusyError
from hitl_graphs.storage.sqlite.liveness import marks_file

_BYTE = 0  # run marks sit at pid * 2**20 + slot, pid >= 1: byte 0 is never one of them

_queues: dict[tuple[int, int], threading.Lock] = {}  # (pid, marks file descriptor): one per file per process
_queues_lock = threading.Lock()


class WriterQueue:
    """The queue of writers to one database file (`path`; None for an in-memory one: no queue).

    Example:
        >>> queue = WriterQueue(None)
        >>> with queue.hold(timeout=1.0):
        ...     "writing"
        'writing'
    """

    def __init__(self, path: str | None) -> None:
        self.path = None if path is None else path + "-runs"
        self._fd = marks_file(self.path) if self.path is not None else None

    @contextmanager
    def hold(self, *, timeout: float | None, busy_message: str = "the database is busy") -> Iterator[None]:
        """Be the next writer of the file for the block's length; raises `DatabaseBusyError`
        (with `busy_message`) if that takes longer than `timeout` seconds (None: as long as it takes)."""
        fd = self._fd
        if fd is None:
            yield
            return
        with _queues_lock:  # keyed by pid too: a forked child never inherits its parent's place
            local = _queues.setdefault((os.getpid(), fd), threading.Lock())
        end = None if timeout is None else time.monotonic() + timeout
        if not local.acquire(timeout=-1 if end is None else max(0.0, end - time.monotonic())):
            raise DatabaseBusyError(busy_message)
        if not _lock(fd, local, end):
            # the helper still waiting for the kernel's lock releases `local` once it has it
            raise DatabaseBusyError(busy_message)
        try:
            yield
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, _BYTE)
            local.release()


def _lock(fd: int, local: threading.Lock, end: float | None) -> bool:
    """Take the file's byte: at once if free, else wait in the kernel until `end`.

    The kernel's wait has no timeout, so a helper thread waits there while this one waits on an
    event that can time out; a helper that gets the lock after its caller gave up unlocks it at
    once and releases the caller's place in this process's queue.
    """
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _BYTE)
        return True
    except OSError:
        pass
    if end is None:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX, 1, _BYTE)
        except OSError:  # cannot wait here: SQLite's own wait still guards the write
            pass
        return True
    got = threading.Event()
    state = {"abandoned": False}
    mutex = threading.Lock()

    def wait() -> None:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX, 1, _BYTE)
            locked = True
        except OSError:  # cannot wait here: SQLite's own wait still guards the write
            locked = False
        with mutex:
            if not state["abandoned"]:
                got.set()
                return
        if locked:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, _BYTE)
        local.release()

    threading.Thread(target=wait, name="hitl-writer-queue", daemon=True).start()
    got.wait(max(0.0, end - time.monotonic()))
    with mutex:
        if got.is_set():
            return True
        state["abandoned"] = True
        return False

"""Which runs hold a thread, on PostgreSQL: this process's own runs, and leases for the others.

SQLite's marks (`hitl_graphs.storage.sqlite.liveness`) lock a byte of a file beside the database;
a server has no such file, and the processes sharing it may run on other machines. Here a run in
this process is known exactly (it is in `held` for as long as it runs); a run of another process,
here or on another host, is trusted until its lease (`lease_until`) runs out.

The lease is kept on the database's clock (the ledger adds its length to `clock_timestamp()` and
compares with it, `PostgresLedger`), so a worker whose clock runs ahead cannot steal a live run.

Why leases and not a session-level advisory lock per running thread (which the server drops the
moment a crashed worker's connection closes): such a lock lives as long as one connection, so
every run would hold a connection outside the pool for its whole length; a worker whose
connection broke (a server restart, a network blip) would lose its locks while its run goes on,
and another machine would start the same thread a second time; and a machine that vanishes
without closing its TCP connection keeps its locks until the server's keepalive gives up (two
hours by default), which is no faster than a lease. A lease is bounded on both sides: a crashed
run's thread is taken over `Runner(lease=...)` seconds after it started at the latest (lower it for
short runs: `hitl worker --lease 60`), and a live run is not taken over while its lease lasts
(keep the lease longer than the longest run between two pauses).
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

HOST = socket.gethostname()
_counter = itertools.count()
_held: set[str] = set()
_lock = threading.Lock()


class LeaseMarks:
    """`Liveness` for a shared server.

    Example:
        >>> marks = LeaseMarks()
        >>> with marks.hold() as owner:
        ...     marks.alive(owner, None, 0.0)
        True
        >>> marks.alive(owner, None, 0.0), marks.alive("elsewhere:1:0", 10.0, 5.0)
        (False, True)
    """

    @contextmanager
    def hold(self) -> Iterator[str]:
        owner = f"{HOST}:{os.getpid()}:{next(_counter)}"
        with _lock:
            _held.add(owner)
        try:
            yield owner
        finally:
            with _lock:
                _held.discard(owner)

    def alive(self, owner: str | None, lease_until: float | None, now: float) -> bool:
        if not owner:
            return False
        if owner.startswith(f"{HOST}:{os.getpid()}:"):
            with _lock:
                return owner in _held
        return lease_until is not None and lease_until > now

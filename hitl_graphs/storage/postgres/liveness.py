"""Which runs hold a thread, on PostgreSQL: this process's own runs, and leases for the others.

SQLite's marks (`hitl_graphs.storage.sqlite.liveness`) lock a byte of a file beside the database;
a server has no such file, and the processes sharing it may run on other machines. Here a run in
this process is known exactly (it is in `held` for as long as it runs); a run of another process,
here or on another host, is trusted until its lease (`lease_until`) runs out.

Not yet here (issue 16): leases read from the database's clock rather than each worker's, and a
per-run session advisory lock, which would tell a crashed worker on another machine at once.
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

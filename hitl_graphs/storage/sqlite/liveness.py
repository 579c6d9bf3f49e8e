"""Who is running a thread right now: a mark per run that dies with its process.

While a process runs a thread, the ledger row names it as `owner`. A crash must be told from a
long run, and so must a run that ended without recording its end (the database stayed locked
past the busy timeout): the process lives on, but nobody runs the thread any more.

Each run holds an exclusive `fcntl` lock on one byte of a small file beside the database
(`<db>-runs`) for exactly as long as it runs, and the owner it writes is `host:pid:slot`. The
operating system drops the lock when the run ends or the process dies, however it dies. So on
the same host:

- this process knows its own runs (`held`);
- another process tests the byte: locked means running; free means the run is over, and the
  thread can be recovered at once.

A run on another host is trusted until its lease (`lease_until`) runs out, as before. An owner
written by an older release (`host:pid`) falls back to the pid check. Nothing here touches the
database; a lock costs two system calls per run.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

HOST = socket.gethostname()
_SLOTS_PER_PID = 1 << 20

_files: dict[str, int] = {}  # one descriptor per file per process: closing any drops all its locks
_files_lock = threading.Lock()


class _Process:
    """This process's runs, whatever runner or database they belong to (slots never repeat)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.held: set[str] = set()
        self.lock = threading.Lock()
        self.counter = itertools.count()


_process = _Process()


def _this_process() -> _Process:
    global _process
    if _process.pid != os.getpid():  # a forked child: its parent's runs are not its own
        _process = _Process()
    return _process


def marks_file(path: str) -> int | None:
    """The marks file's descriptor; None where it cannot be opened (a read-only folder): then a
    live process on this host is trusted to be running its threads, as before per-run marks.
    Byte 0 is not a run's mark: writers queue on it (`writers`)."""
    key = os.path.realpath(path)
    with _files_lock:
        if key not in _files:
            try:
                _files[key] = os.open(key, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:
                return None
        return _files[key]


class RunMarks:
    """The per-run marks of one database (`path`; None for an in-memory database).

    Example:
        >>> marks = RunMarks(None)
        >>> with marks.hold() as owner:
        ...     marks.alive(owner, None, 0.0)
        True
        >>> marks.alive(owner, None, 0.0)
        False
    """

    def __init__(self, path: str | None) -> None:
        self.path = None if path is None else path + "-runs"
        self._fd: int | None = None  # once opened (`marks_file` keeps it open for the process)

    def _file(self) -> int | None:
        """The marks file's descriptor, resolved once (a path's `realpath` costs a system call per folder)."""
        if self._fd is None and self.path is not None:
            self._fd = marks_file(self.path)
        return self._fd

    @contextmanager
    def hold(self) -> Iterator[str]:
        """Mark a run for as long as the block lasts; yields the owner to record."""
        proc = _this_process()
        slot = next(proc.counter) % _SLOTS_PER_PID
        owner = f"{HOST}:{proc.pid}:{slot}"
        offset = proc.pid * _SLOTS_PER_PID + slot
        fd = self._file()
        if fd is not None:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
        with proc.lock:
            proc.held.add(owner)
        try:
            yield owner
        finally:
            with proc.lock:
                proc.held.discard(owner)
            if fd is not None:
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)

    def alive(self, owner: str | None, lease_until: float | None, now: float) -> bool:
        """Whether the run that wrote `owner` may still be running the thread."""
        if not owner:
            return False
        parts = owner.rsplit(":", 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            host, pid, slot = parts[0], int(parts[1]), int(parts[2])
        else:  # an owner written before per-run marks: host:pid
            host, _, pid_text = owner.rpartition(":")
            if host != HOST or not pid_text.isdigit():
                return lease_until is not None and lease_until > now
            return _pid_alive(int(pid_text))
        if host != HOST:
            return lease_until is not None and lease_until > now
        proc = _this_process()
        if pid == proc.pid:
            with proc.lock:
                return owner in proc.held
        if not _pid_alive(pid):
            return False
        fd = self._file()
        return True if fd is None else _locked(fd, pid * _SLOTS_PER_PID + slot)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _locked(fd: int, offset: int) -> bool:
    """Whether another process holds the byte at `offset` (probed without keeping it)."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, offset)
    except OSError:
        return True
    fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)
    return False

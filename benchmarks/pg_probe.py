"""Where the time goes while a PostgreSQL figure runs: CPU of each side, and what sessions wait on.

- `CpuClock`: CPU seconds of the server (the postmaster and its children, from `/proc`) and of the
  whole machine (`/proc/stat`) over a window. The worker processes report their own (`cpu_s`).
- `WaitSampler`: a thread that reads `pg_stat_activity` and `pg_locks` every few milliseconds
  during a window and counts what each client session of the database is doing: running on the
  server's CPU, waiting for a lock (heavyweight: rows, advisory locks, transaction ids), for an
  internal lock (LWLock), for I/O (the WAL flush of a commit), or idle waiting for its client (the
  Python process computing, or waiting for a core on a busy machine). Lock waits are the figure that would show a serialising point such as
  the audit chain's advisory lock.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def _children(ppid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == ppid:
                    out.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return out


def _machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the machine since boot."""
    parts = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = parts[3] + parts[4]  # idle, iowait
    return (sum(parts[:8]) - idle) / _TICK, sum(parts[:8]) / _TICK


class CpuClock:
    """CPU seconds used by the server and by the machine between `start()` and `stop()`."""

    def __init__(self, data_dir: Path) -> None:
        self.postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])

    def _server(self) -> dict[int, float]:
        pids = [self.postmaster, *_children(self.postmaster)]
        return {pid: _proc_cpu(pid) for pid in pids}

    def start(self) -> None:
        self.t0 = time.perf_counter()
        self.server0 = self._server()
        self.machine0 = _machine_busy()

    def stop(self) -> dict[str, float]:
        wall = time.perf_counter() - self.t0
        server1 = self._server()
        machine1 = _machine_busy()
        server = sum(v - self.server0.get(pid, 0.0) for pid, v in server1.items())
        return {"wall_s": round(wall, 3), "server_cpu_s": round(server, 3),
                "machine_busy_s": round(machine1[0] - self.machine0[0], 3),
                "machine_cpu_s": round(machine1[1] - self.machine0[1], 3)}


class WaitSampler:
    """Samples the database's client sessions in a thread; `stop()` returns the counts."""

    def __init__(self, url: str, dbname: str, interval: float = 0.02) -> None:
        self.url, self.dbname, self.interval = url, dbname, interval
        self.counts: Counter[str] = Counter()
        self.waits: Counter[str] = Counter()
        self.lock_waiting: list[int] = []
        self.samples = 0
        self._stop = threading.Event()

    def start(self) -> None:
        import psycopg

        self.conn = psycopg.connect(self.url, autocommit=True)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            rows = self.conn.execute(
                "SELECT state, wait_event_type, wait_event FROM pg_stat_activity WHERE datname = %s "
                "AND backend_type = 'client backend' AND pid <> pg_backend_pid()", (self.dbname,)).fetchall()
            blocked = self.conn.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
                "WHERE NOT l.granted AND d.datname = %s", (self.dbname,)).fetchone()
            self.samples += 1
            self.lock_waiting.append(int(blocked[0]) if blocked else 0)
            for state, wtype, wevent in rows:
                what = _classify(state, wtype)
                self.counts[what] += 1
                if what not in ("idle (waiting on the client)", "server CPU"):
                    self.waits[f"{wtype}:{wevent}"] += 1
            self._stop.wait(self.interval)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self.thread.join()
        self.conn.close()
        total = sum(self.counts.values()) or 1
        return {
            "samples": self.samples,
            "sessions_by_state": {k: round(v / total, 3) for k, v in self.counts.most_common()},
            "top_waits": {k: round(v / total, 3) for k, v in self.waits.most_common(5)},
            "lock_waiting_sessions_mean": round(sum(self.lock_waiting) / max(len(self.lock_waiting), 1), 3),
        }


def _classify(state: str | None, wait_type: str | None) -> str:
    if wait_type == "Lock":
        return "lock wait"
    if wait_type == "LWLock":
        return "internal lock (LWLock)"
    if wait_type == "IO":
        return "I/O (WAL flush, reads)"
    if state == "active" and wait_type is None:
        return "server CPU"
    if state and state.startswith("idle"):
        return "idle (waiting on the client)"
    return f"other ({wait_type})"

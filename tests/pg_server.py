"""A throwaway PostgreSQL server for the test session, and a fresh database per test.

The PostgreSQL store is held to the same promises as SQLite, so its tests run against a real
server in every `make test`; they never skip. This module starts one from the machine's binaries
(`initdb` + `pg_ctl`, found like `tools/ensure_postgres.sh` finds them) into a temp dir of its own,
on a free loopback port, with `fsync=off` (tests only: a crash of the test machine loses nothing we
keep), and removes it all at the end of the session.

Two fixtures, registered in `tests/conftest.py`:

- `postgres_url` (session): `postgresql://postgres@127.0.0.1:PORT/hitl`, one database shared by the session.
- `pg_db_url` (function): a database of its own for one test, made with `CREATE DATABASE` from an
  empty template (a file copy, a few ms) and dropped after it.

Why not pytest's `tmp_path`: its parent folder is mode 0700 and owned by us, and `initdb` refuses to
run as root, so as root the server runs as the `postgres` user (`runuser`), who could not enter it.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = (
    "the PostgreSQL tests need a PostgreSQL server (15 or newer): run `make test` (it installs Debian's "
    "package as root), or install it (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql), "
    "or set HITL_PG_BIN to the folder holding initdb and pg_ctl"
)
TEMPLATE = "hitl_template"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL binaries, or a server that would not start: the message says what to do."""


def find_bin_dir() -> Path:
    """The folder holding `initdb` and `pg_ctl`: `$HITL_PG_BIN`, the newest Debian version, or PATH."""
    if explicit := os.environ.get("HITL_PG_BIN"):
        candidates = [Path(explicit)]
    else:
        debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: _version(Path(p).parent.name))
        on_path = shutil.which("initdb")
        candidates = [Path(p) for p in reversed(debian)] + ([Path(on_path).parent] if on_path else [])
    for bin_dir in candidates:
        if all(os.access(bin_dir / tool, os.X_OK) for tool in ("initdb", "pg_ctl")):
            return bin_dir
    if explicit:
        raise PostgresUnavailable(f"HITL_PG_BIN={explicit} has no initdb and pg_ctl: point it at PostgreSQL's bin folder, or unset it")
    raise PostgresUnavailable(INSTALL_HINT)


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PgServer:
    """One running server: `url(db)` names a database on it; `stop()` ends it and removes its files."""

    bin_dir: Path
    root: Path
    port: int
    as_user: list[str]
    options: str = ""

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def url(self, dbname: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def crash_and_restart(self) -> None:
        """Stop the server as a power cut would (`pg_ctl stop -m immediate`: no shutdown checkpoint,
        WAL not yet written from memory is lost) and start it again (crash recovery replays the WAL)."""
        subprocess.run([*self.as_user, str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate", "-w", "stop"],
                       capture_output=True, text=True, timeout=60, check=True)
        _run([*self.as_user, str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-l", str(self.root / "server.log"),
              "-o", self.options, "-w", "-t", "60", "start"], "pg_ctl start")

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            # `immediate`: nothing here is worth a clean shutdown checkpoint; the files go next.
            subprocess.run(
                [*self.as_user, str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate", "-w", "stop"],
                capture_output=True, text=True, timeout=60,
            )
        shutil.rmtree(self.root, ignore_errors=True)


def start_server(*, durable: bool = False, options: str = "") -> PgServer:
    """Initialise and start a server in a fresh temp dir; raises `PostgresUnavailable` saying why not.

    `durable=True` keeps PostgreSQL's defaults (fsync, synchronous commit, full page writes): what the
    benchmarks measure (`benchmarks/postgres.py`); tests turn them off. `options` adds server
    settings (`-c name=value ...`).
    """
    bin_dir = find_bin_dir()
    as_user = _run_as()
    root = Path(tempfile.mkdtemp(prefix="hitl-pg-"))
    try:
        if as_user:
            shutil.chown(root, user="postgres", group=None)
        data = root / "data"
        _run([*as_user, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
              "--encoding=UTF8", "--locale=C", "--no-sync"], "initdb")
        for attempt in range(3):
            port = _free_port()
            settings = (f"-c port={port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={root} "
                        f"-c max_connections=200 {options}")
            if not durable:
                settings += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            server = PgServer(bin_dir, root, port, as_user, settings)
            started = subprocess.run(
                [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"),
                 "-o", settings, "-w", "-t", "60", "start"],
                capture_output=True, text=True, timeout=90,
            )
            if started.returncode == 0:
                _run([*as_user, str(bin_dir / "psql"), "-X", "-q", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                      "-d", "postgres", "-c", f"CREATE DATABASE {TEMPLATE}", "-c", "CREATE DATABASE hitl"], "CREATE DATABASE")
                return server
            if attempt == 2 or "could not bind" not in _tail(root / "server.log"):  # a port taken between pick and bind: retry
                raise PostgresUnavailable(f"pg_ctl start failed: {started.stderr.strip()} {_tail(root / 'server.log')}")
    except BaseException:
        PgServer(bin_dir, root, 0, as_user).stop()
        raise
    raise AssertionError("unreachable")


_counter = itertools.count()


def create_database(server: PgServer) -> str:
    """A new empty database copied from the template; returns its URL."""
    import psycopg

    name = f"t{os.getpid()}_{next(_counter)}"
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE {TEMPLATE}')
    return server.url(name)


def drop_database(server: PgServer, url: str) -> None:
    """Drop a test's database, ending any connection the test left open (`WITH (FORCE)`)."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run_as() -> list[str]:
    """As root, run the server as `postgres` (initdb refuses root); as anyone else, as ourselves."""
    if os.geteuid() != 0:
        return []
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailable(
            "running as root, and there is no `postgres` user to run the test server as (initdb refuses root): "
            "install PostgreSQL from your distribution's package (it adds the user), or run the tests as another user"
        ) from None
    return ["runuser", "-u", "postgres", "--"]


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise PostgresUnavailable(f"{what} failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()}")


def _tail(log: Path) -> str:
    try:
        return " | ".join(log.read_text(errors="replace").strip().splitlines()[-5:])
    except OSError:
        return ""


from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hitl_graphs import Runner, Workflow
from tests import pg_server
from tests.drivers import DRIVERS, Driven
from tests.workflows import WORKFLOWS

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "hitl.sqlite")


@pytest.fixture
def effects_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "effects.log"
    monkeypatch.setenv("HITL_TEST_EFFECTS", str(path))
    return path


@pytest.fixture
def workflows() -> list[Workflow]:
    """The workflows the `runner` fixture knows; a test module overrides this fixture to run its own."""
    return WORKFLOWS


@pytest.fixture(params=DRIVERS)
def runner(request: pytest.FixtureRequest, db: str, effects_file: Path, workflows: list[Workflow]) -> Iterator[Driven]:
    """A runner on a fresh database, once through the sync methods and once through their async
    twins (`tests.drivers`): a test written with `runner.start(...)`, `runner.resume(...)` checks both."""
    with Runner.open(db, workflows=workflows) as r:
        driven = Driven(r, request.param)
        try:
            yield driven
        finally:
            driven.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[pg_server.PgServer]:
    """A throwaway PostgreSQL server for the whole session (see tests/pg_server.py). Absent
    PostgreSQL fails the test with one line saying what to install: these tests never skip."""
    try:
        server = pg_server.start_server()
    except pg_server.PostgresUnavailable as exc:
        reason = str(exc)
    else:
        reason = ""
    if reason:
        pytest.fail(reason, pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: pg_server.PgServer) -> str:
    """`postgresql://postgres@127.0.0.1:PORT/hitl`: one database shared by the session."""
    return postgres_server.url("hitl")


@pytest.fixture
def pg_db_url(postgres_server: pg_server.PgServer) -> Iterator[str]:
    """A fresh, empty database for one test, dropped after it."""
    url = pg_server.create_database(postgres_server)
    yield url
    pg_server.drop_database(postgres_server, url)


def fingerprint(db: str, thread_id: str) -> dict[str, Any]:
    """Everything a refused request must leave as it was: checkpoints, writes, ledger rows."""
    conn = sqlite3.connect(db)
    try:
        return {
            "checkpoints": conn.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id", (thread_id,)
            ).fetchall(),
            "writes": conn.execute("SELECT count(*) FROM writes WHERE thread_id = ?", (thread_id,)).fetchone(),
            "threads": conn.execute("SELECT count(*) FROM checkpoints").fetchone(),
            "reviews": conn.execute(
                "SELECT review_id, status, decision FROM hitl_reviews WHERE thread_id = ? ORDER BY review_id", (thread_id,)
            ).fetchall(),
            "thread": conn.execute(
                "SELECT status, outcome, owner FROM hitl_threads WHERE thread_id = ?", (thread_id,)
            ).fetchall(),
        }
    finally:
        conn.close()


def subprocess_env(db: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["HITL_DB"] = db
    env["HITL_APP"] = "tests.workflows"
    env.update(extra)
    return env


def hitl(db: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the `hitl` CLI in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "hitl_graphs.cli", *args],
        capture_output=True, text=True, env=subprocess_env(db, **env), cwd=ROOT, timeout=120,
    )


def python(db: str, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a Python snippet in its own process, with the test workflows registered."""
    return subprocess.run(
        [sys.executable, "-c", "import tests.workflows\n" + code],
        capture_output=True, text=True, env=subprocess_env(db, **env), cwd=ROOT, timeout=120,
    )


_SLOW_FILES = {"test_notebooks.py", "test_terminal.py", "test_bench.py"}
_SLOW_CALLS = ("hitl(", "python(", "subprocess.", "Popen(")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` every test that starts another process (the CLI, a Python snippet, a notebook
    kernel, a terminal): `make test` runs them all; `pytest -m "not slow"` is the quick loop."""
    import inspect

    for item in items:
        fn = getattr(item, "function", None)
        source = inspect.getsource(fn) if fn is not None else ""
        if item.path.name in _SLOW_FILES or any(call in source for call in _SLOW_CALLS):
            item.add_marker(pytest.mark.slow)

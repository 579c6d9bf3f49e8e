"""Bugs that `mypy --strict` found in the package (issue 14), each held by a behaviour test.

The type checker saw the runner read `store.saver.latest_checkpoint_id`, a method only our SQLite
saver has: on PostgreSQL, asking about a thread that does not exist raised `AttributeError`
instead of the one-line `UnknownThreadError` SQLite gives.
"""

from __future__ import annotations

import pytest

from hitl_graphs import Runner, UnknownThreadError
from hitl_graphs.examples import email_workflow


@pytest.mark.parametrize("method", ["show", "history"])
def test_an_unknown_thread_on_postgres_is_refused_in_one_line(pg_db_url: str, method: str) -> None:
    with Runner.open(pg_db_url, workflows=[email_workflow()]) as runner:
        with pytest.raises(UnknownThreadError, match=r"^thread 'nope' does not exist; nothing was started"):
            getattr(runner, method)("nope")


def test_adopting_an_unknown_thread_on_postgres_is_refused_in_one_line(pg_db_url: str) -> None:
    with Runner.open(pg_db_url, workflows=[email_workflow()]) as runner:
        with pytest.raises(UnknownThreadError, match=r"^thread 'nope' has no checkpoints in this database"):
            runner.adopt("nope", "email")

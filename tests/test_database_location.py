"""Which database a command opens: a typo is refused, not a new empty file, and a notebook and
`hitl` find the same default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hitl_graphs import default_db_path
from tests.conftest import ROOT, hitl

READ_OR_DECIDE = [
    ["pending"], ["show", "t-1"], ["history", "t-1"], ["approve", "t-1"], ["reject", "t-1"],
    ["modify", "t-1", "--patch", '{"amount": 1}'], ["cancel", "t-1"], ["recover"], ["sweep"], ["audit", "verify"],
    ["audit", "head"], ["feedback", "--list"],
]


@pytest.mark.parametrize("args", READ_OR_DECIDE, ids=lambda a: " ".join(a[:2]))
def test_a_db_path_that_does_not_exist_is_refused_and_nothing_is_created(db: str, tmp_path: Path, args: list[str]) -> None:
    typo = tmp_path / "checkpoint" / "hitl.sqlite"   # the folder is "checkpoints"
    result = hitl(db, "--db", str(typo), *args)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: no database at {typo} (from --db); nothing was created: check the path, or create it with "
        f"`hitl --db {typo} init` (or start a thread there: `hitl --db {typo} run WORKFLOW`)"
    ]
    assert not typo.parent.exists()


def test_hitl_db_is_named_as_the_source_and_init_or_run_create_it(tmp_path: Path) -> None:
    named = tmp_path / "hitl.sqlite"
    refused = hitl(str(named), "pending")  # $HITL_DB names it
    assert refused.returncode == 1 and f"no database at {named} (from $HITL_DB)" in refused.stderr
    made = hitl(str(named), "init")
    assert (made.returncode, made.stdout.strip()) == (0, f"database ready at {named}")
    assert hitl(str(named), "pending").stdout.strip() == "nothing is waiting for a decision"
    started = tmp_path / "other.sqlite"
    assert hitl(str(named), "--db", str(started), "run", "email", "--json").returncode == 0
    assert len(json.loads(hitl(str(named), "--db", str(started), "pending", "--json").stdout)) == 1


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "myproject"
    (project / "notebooks").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'myproject'\n")
    return project


def test_the_default_is_in_the_project_root_wherever_the_working_directory_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path)
    monkeypatch.delenv("HITL_DB", raising=False)
    monkeypatch.chdir(project / "notebooks")
    assert default_db_path() == project.resolve() / "checkpoints" / "hitl.sqlite"
    monkeypatch.chdir(project)
    assert default_db_path() == project.resolve() / "checkpoints" / "hitl.sqlite"
    monkeypatch.setenv("HITL_DB", "elsewhere.sqlite")
    assert default_db_path() == Path("elsewhere.sqlite")


def test_a_notebook_and_the_cli_share_the_default_database(tmp_path: Path) -> None:
    project = _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("HITL_DB", "HITL_APP")}
    env["PYTHONPATH"] = str(ROOT)
    notebook = subprocess.run(  # what a notebook cell in notebooks/ runs
        [sys.executable, "-c",
         "from hitl_graphs import Runner\nfrom hitl_graphs.examples import email_workflow\n"
         "with Runner.open(workflows=[email_workflow()]) as r:\n"
         "    print(r.start('email', {'to': 'ana@example.com', 'topic': 'lunch'}).thread_id)"],
        cwd=project / "notebooks", env=env, capture_output=True, text=True, timeout=120,
    )
    assert notebook.returncode == 0, notebook.stderr
    thread_id = notebook.stdout.strip()
    assert not (project / "notebooks" / "checkpoints").exists()
    listed = subprocess.run([sys.executable, "-m", "hitl_graphs.cli", "pending", "--json"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert [r["thread_id"] for r in json.loads(listed.stdout)] == [thread_id]

"""Users' own modules, as they write them: `hitl --app mymodule` from their project folder.

Each test runs the installed `hitl` command in its own process, in a temp folder that holds only
`mymodule.py`, with `PYTHONPATH` unset: exactly what a user types after `pip install`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


HITL = Path(sys.executable).with_name("hitl")

def user_hitl(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`hitl ARGS` typed in `folder`, with no PYTHONPATH and no $HITL_APP."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HITL_APP")}
    env["HITL_DB"] = str(folder / "hitl.sqlite")
    return subprocess.run([str(HITL), *args], capture_output=True, text=True, env=env, cwd=folder, timeout=120)


def ok(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_app_module_is_imported_from_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "mymodule.py").write_text(
        "from hitl_graphs import Workflow, register\n"
        "from hitl_graphs.examples import email_graph\n"
        "register(Workflow('my-mail', email_graph, description='mine'))\n"
    )
    listed = ok(user_hitl(tmp_path, "--app", "mymodule", "workflows", "--json"))
    assert "my-mail" in {w["name"] for w in listed}
    missing = user_hitl(tmp_path, "--app", "nosuchmodule", "workflows")
    assert (missing.returncode, missing.stderr.strip()) == (
        1, "error: cannot import --app module 'nosuchmodule': No module named 'nosuchmodule'"
    )

"""Users' own modules and graphs, as they write them: `hitl --app mymodule` from their project
folder, with nodes written `async def` as LangGraph's docs write them.

Each test runs the installed `hitl` command in its own process, in a temp folder that holds only
`mymodule.py`, with `PYTHONPATH` unset: exactly what a user types after `pip install`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from hitl_graphs import Approve, Runner, Workflow
from hitl_graphs.errors import ConfigError
from tests.conftest import fingerprint

HITL = Path(sys.executable).with_name("hitl")

ASYNC_APP = '''
import asyncio
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from hitl_graphs import Workflow, register


class S(TypedDict, total=False):
    topic: str
    draft: str
    answer: Any
    sent: bool


async def draft(state: S) -> S:
    await asyncio.sleep(0)
    return {"draft": f"About {state['topic']}"}


async def ask(state: S) -> S:
    return {"answer": interrupt({"draft": state["draft"]})}


async def send(state: S) -> S:
    await asyncio.sleep(0)
    return {"sent": True}


def build() -> StateGraph:
    g = StateGraph(S)
    g.add_node("draft", draft)
    g.add_node("ask", ask)
    g.add_node("send", send)
    g.add_edge(START, "draft")
    g.add_edge("draft", "ask")
    g.add_edge("ask", "send")
    g.add_edge("send", END)
    return g


register(Workflow("async-mail", build, example_input={"topic": "lunch"}))
'''


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


def test_async_nodes_run_pause_and_resume_from_the_cli(tmp_path: Path) -> None:
    (tmp_path / "mymodule.py").write_text(ASYNC_APP)
    paused = ok(user_hitl(tmp_path, "--app", "mymodule", "run", "async-mail", "--json"))
    assert (paused["status"], paused["state"]["draft"]) == ("paused", "About lunch")
    (review,) = paused["reviews"]
    assert (review["node"], review["payload"]) == ("ask", {"draft": "About lunch"})
    done = ok(user_hitl(tmp_path, "--app", "mymodule", "approve", paused["thread_id"], "--actor", "ana", "--json"))
    assert (done["status"], done["outcome"], done["state"]["sent"]) == ("done", "completed", True)
    assert done["state"]["answer"]["kind"] == "approve"


def _async_workflow(monkeypatch: pytest.MonkeyPatch) -> Workflow:
    """The same app, imported in this process (as a module, so its state schema's hints resolve)."""
    module = types.ModuleType("async_app")
    monkeypatch.setitem(sys.modules, "async_app", module)
    exec(ASYNC_APP.replace("register(", "WORKFLOW = ("), module.__dict__)
    return module.WORKFLOW  # type: ignore[no-any-return]


def test_sync_runner_drives_async_nodes(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with Runner.open(db, workflows=[_async_workflow(monkeypatch)]) as runner:
        first = runner.start("async-mail", {"topic": "tea"})
        second = runner.start("async-mail", {"topic": "cake"})
        assert runner.resume(first.thread_id, Approve(actor="ana")).state["sent"] is True
        cancelled = runner.cancel(second.thread_id, actor="ana")
        assert (cancelled.status, cancelled.outcome) == ("done", "cancelled")


async def test_sync_call_inside_a_running_loop_names_the_async_twin(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with Runner.open(db, workflows=[_async_workflow(monkeypatch)]) as runner:
        twin = r"async-only nodes \(draft, ask, send\).*running event loop.*`await runner\.astart\(\.\.\.\)`"
        with pytest.raises(ConfigError, match=twin):
            runner.start("async-mail", {"topic": "tea"})
        view = await runner.astart("async-mail", {"topic": "tea"})
        before = fingerprint(db, view.thread_id)
        with pytest.raises(ConfigError, match=twin):
            runner.resume(view.thread_id, Approve(actor="ana"))
        assert fingerprint(db, view.thread_id) == before  # refused before the claim: the review still waits
        assert (await runner.aresume(view.thread_id, Approve(actor="ana"))).state["sent"] is True

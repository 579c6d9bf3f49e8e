"""Hostile decision input is refused in one line, from the CLI and from Python, and nothing changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hitl_graphs import Modify, PatchError, Respond, parse_decision
from tests.conftest import fingerprint, hitl
from tests.drivers import Driven


def _deep(levels: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def test_a_20k_deep_patch_is_refused_in_one_line(runner: Driven, db: str) -> None:
    thread_id = runner.start("pay", {"to": "acme", "amount": 5}).thread_id
    before = fingerprint(db, thread_id)
    with pytest.raises(PatchError, match="patch is nested deeper than 100 levels"):
        Modify(patch={"memo": _deep(20_000)})
    with pytest.raises(PatchError, match="nested deeper than 100 levels"):
        runner.resume(thread_id, {"kind": "modify", "patch": {"memo": _deep(20_000)}})
    text = '{"memo": ' + "[" * 20_000 + "]" * 20_000 + "}"
    result = hitl(db, "modify", thread_id, "--patch", text)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "nested too deeply" in result.stderr, result.stderr[:500]
    shallow_but_deep = json.dumps({"memo": _deep(150)})  # readable JSON, still too deep to accept
    result = hitl(db, "modify", thread_id, "--patch", shallow_but_deep)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "nested deeper than 100 levels" in result.stderr, result.stderr[:500]
    assert fingerprint(db, thread_id) == before


@pytest.mark.parametrize("workflow", ["delete", "pay"], ids=["tool-call-payload", "state"])
def test_a_lone_surrogate_is_refused_in_one_line(runner: Driven, db: str, workflow: str, tmp_path: Path) -> None:
    thread_id = runner.start(workflow).thread_id
    before = fingerprint(db, thread_id)
    patch = {"args": {"resource": "r-\udc80"}} if workflow == "delete" else {"memo": "pay \ud800 now"}
    with pytest.raises(PatchError, match="not valid Unicode"):
        runner.resume(thread_id, {"kind": "modify", "patch": patch, "verification": "DELETE r-42"})
    with pytest.raises(PatchError, match="text that is not valid Unicode"):
        Respond(text="\udc80")
    with pytest.raises(PatchError, match="not valid Unicode"):
        parse_decision({"kind": "reject", "reason": "no\ud800"})
    # the CLI: a JSON escape of a lone surrogate, as a fuzzer sends it
    result = hitl(db, "modify", thread_id, "--patch", json.dumps(patch), "--verify", "DELETE r-42")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "not valid Unicode" in result.stderr, result.stderr[:500]
    assert fingerprint(db, thread_id) == before

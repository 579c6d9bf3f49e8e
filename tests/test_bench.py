"""`python -m benchmarks --quick` runs and reports every figure of issue 7 (no timing asserts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_quick_benchmark_reports_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(out), "--workdir", str(tmp_path / "work")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(out.read_text())

    overhead = results["overhead"]
    assert {"plain_memory", "plain_sqlite", "ours"} <= set(overhead["variants"])
    assert {"ours / plain_sqlite", "ours / plain_memory"} <= set(overhead["ratios"])
    for figure in overhead["variants"].values():
        assert figure["cycles_per_s"]["median"] > 0
    assert results["profile"]["plain_sqlite"]["commits"] > 0
    assert results["profile"]["ours"]["effects"]

    listing = results["listing"]["listing"]
    sizes = list(listing["ours_first_page_ms"])
    assert len(sizes) >= 2
    assert set(listing["plain_scan"]) == set(sizes)
    for size in sizes:  # the plain scan found every bulk-populated thread paused
        assert listing["plain_scan"][size]["paused_found"] == int(size)
    resume = results["listing"]["resume"]
    assert resume["bulk_threads_resumed"] > 0
    assert resume["bulk_threads_resumed_ok"] == resume["bulk_threads_resumed"]

    throughput = results["throughput"]
    assert throughput["raw_sqlite_commits_per_s"]["FULL"] > 0
    for name in ("ours", "plain_sqlite"):  # nothing lost or doubled, ours and plain alike
        assert throughput["configs"][name]["check"]["ok"], throughput["configs"][name]["check"]
        for workers in ("1", "2"):
            figure = throughput["configs"][name][workers]
            assert figure["cycles"] > 0 and figure["p50_ms"] <= figure["p99_ms"] <= figure["max_ms"]

    disk = results["disk"]
    for name in ("ours", "plain_sqlite"):
        assert disk[name]["paused"]["total"] > 0
        assert disk[name]["finished"]["total"] >= disk[name]["paused"]["total"]

    assert results["targets"]
    assert "1. one pause+resume cycle" in run.stdout

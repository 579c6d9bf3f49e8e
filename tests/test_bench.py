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
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(out), "--workdir", str(tmp_path / "work"),
         "--only", "overhead,profile,listing,throughput,disk,api,large,async"],  # figure 7 (PostgreSQL) has its own test below
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

    large = results["large"]["sizes"]
    for label in ("100KB", "1MB"):  # a large field costs its bytes once, in the checkpoints, as in plain LangGraph
        assert large[label]["cycle"]["ratios"]["ours / plain_exit"]["median"] > 0
        assert large[label]["bytes"]["plain_exit"]["finished"]["total"] > 0
        assert large[label]["bytes"]["ours_minus_plain_finished"] <= 2048, large[label]["bytes"]
    asynchronous = results["async"]
    assert {"ours_async_1", "ours_async_8", "plain_async_exit_1", "plain_async_exit_8"} == set(asynchronous["variants"])
    assert asynchronous["throughput_8_vs_1"]["ours"]["median"] > 0
    waiting = asynchronous["waiting"]  # the same cycles with each step blocking on I/O first, in both setups
    for name in ("ours_async_1", "plain_async_exit_1"):
        assert waiting["variants"][name]["ms_per_cycle"]["min"] >= waiting["step_wait_ms"] == 5, waiting["variants"][name]

    assert results["targets"]
    assert "1. one pause+resume cycle" in run.stdout


def test_quick_postgres_figure_runs_on_its_own_durable_server(tmp_path: Path) -> None:
    """Figure 7 starts a PostgreSQL server of its own with fsync on, races worker processes for one
    queue without losing or doubling a decision, keeps the audit chain verifiable under contention,
    and lists and resumes bulk-populated threads next to plain LangGraph on `PostgresSaver`."""
    out = tmp_path / "results.json"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--only", "postgres", "--out", str(out),
         "--workdir", str(tmp_path / "work")],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    pg = json.loads(out.read_text())["postgres"]

    assert pg["server"]["fsync"] == "on" and pg["server"]["synchronous_commit"] == "on"
    throughput = pg["throughput"]["configs"]
    for name in ("ours", "ours_own_threads"):
        check = throughput[name]["check"]
        assert check["ok"], (name, check)
        assert check["decisions_won"] > 0
    for name in ("ours", "ours_own_threads", "plain_postgres"):
        for k in ("1", "2"):
            assert throughput[name][k]["per_s"]["median"] > 0
            assert throughput[name][k]["sessions_by_state"]  # the wait samples were taken
    audit = pg["audit"]
    assert audit["verify"]["ok"], audit["verify"]
    assert audit["configs"]["audit_chain"]["2"]["per_s"]["median"] > 0
    assert audit["configs"]["bare_round_trips"]["2"]["per_s"]["median"] > 0
    assert all(v > 0 for v in audit["bare_round_trips vs 2 processes"].values())

    listing = pg["listing"]
    sizes = sorted(listing["ours_first_page_ms"], key=int)
    assert listing["populated"][sizes[0]]["audit_verify_ok"]
    for size, scan in listing["plain_scan"].items():  # plain LangGraph's scan finds every bulk copy paused
        assert scan["paused_found"] == int(size)
    resume = listing["resume"]
    assert resume["bulk_threads_resumed"] > 0
    assert resume["bulk_threads_resumed_ok"] == resume["bulk_threads_resumed"]
    assert "7. cycles/s with N processes" in run.stdout

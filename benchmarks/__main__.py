"""`python -m benchmarks [--quick] [--out PATH] [--workdir DIR] [--only FIGURES]`: issue 7's figures.

Prints a table and writes `benchmarks/results.json`. Every figure is measured side by side with
plain LangGraph in the same run and reported as a ratio, with min/median/max over rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import aio, api, figures, large, postgres, setups, throughput
from benchmarks.graphs import ours_graph_source
from benchmarks.report import print_report

FIGURES = ("overhead", "profile", "listing", "throughput", "disk", "api", "postgres", "large", "async")

FULL: dict[str, Any] = {
    "overhead": {"n_rounds": 9, "per_round": 30},
    "profile": {"cycles": 30},
    "listing": {"sizes": [1_000, 10_000, 100_000], "ours_reps": 30,
                "plain_reps": {1_000: 5, 10_000: 3, 100_000: 1}, "page_sizes": [10, 50, 500], "resume_samples": 30},
    "throughput": {"seconds": 2.5, "reps": 5},
    "disk": {"threads": 100},
    "api": {"size": 100_000, "list_reps": 50, "decisions": 30},
    "postgres": {"workers": [1, 2, 4, 8], "seconds": 2.0, "reps": 3, "audit_workers": [1, 2, 4, 8], "audit_seconds": 1.0,
                 "listing": {"sizes": [1_000, 10_000, 100_000], "reps": 30, "plain_reps": {1_000: 3, 10_000: 1},
                             "resume_samples": 30}},
    "large": {"n_rounds": 9, "per_round": 5, "threads": 10},
    "async": {"n_rounds": 9, "per_round": 4},
}
QUICK: dict[str, Any] = {
    "overhead": {"n_rounds": 3, "per_round": 4},
    "profile": {"cycles": 3},
    "listing": {"sizes": [100, 1_000], "ours_reps": 5, "plain_reps": {}, "page_sizes": [10, 50], "resume_samples": 3},
    "throughput": {"seconds": 0.4, "reps": 1},
    "disk": {"threads": 10},
    "api": {"size": 500, "list_reps": 5, "decisions": 3},
    "postgres": {"workers": [1, 2], "seconds": 0.5, "reps": 1, "audit_workers": [1, 2], "audit_seconds": 0.3,
                 "listing": {"sizes": [100, 1_000], "reps": 5, "plain_reps": {100: 1}, "resume_samples": 3}},
    "large": {"n_rounds": 2, "per_round": 2, "threads": 2},
    "async": {"n_rounds": 2, "per_round": 1},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run in seconds (small sizes, few rounds)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results.json"), help="where to write the JSON")
    parser.add_argument("--workdir", default=None, help="where the benchmark databases go (default: checkpoints/bench-PID)")
    parser.add_argument("--only", default=",".join(FIGURES), help=f"comma-separated subset of: {', '.join(FIGURES)}")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    only = [f.strip() for f in args.only.split(",") if f.strip()]
    if unknown := set(only) - set(FIGURES):
        parser.error(f"unknown figure(s): {', '.join(sorted(unknown))}")
    plan = QUICK if args.quick else FULL
    workdir = Path(args.workdir) if args.workdir else Path("checkpoints") / f"bench-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)

    ours_all = setups.ours_setups(quick=args.quick)
    plain_all = setups.plain_setups(quick=args.quick)
    results: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
                    "platform": platform.platform(), "workdir": str(workdir)},  # as given: no machine path in the results
        "ours_graph": ours_graph_source(),
        "setups": {s.name: s.about for s in [*plain_all, *ours_all]},
    }
    t_start = time.perf_counter()
    took: dict[str, float] = {}
    clock = _Clock(took)
    try:
        if "overhead" in only:
            _say("1. overhead: pause+resume cycles, side by side")
            with clock("overhead"):
                results["overhead"] = figures.overhead(workdir, ours_all, plain_all, pairs=setups.PAIRS, **plan["overhead"])
        if "profile" in only:
            _say("   profile: commits, checkpoint reads/writes and the runner's I/O per cycle")
            with clock("profile"):
                results["profile"] = figures.profile(workdir, ours_all, [p for p in plain_all if p.saver == "sqlite"],
                                                     **plan["profile"])
        if "listing" in only:
            _say("2-3. listing and resuming with many paused threads (bulk-populated)")
            with clock("listing"):
                results["listing"] = figures.listing_and_resume(workdir, **plan["listing"])
        if "throughput" in only:
            _say("4. throughput: 1 and 2 worker processes on one SQLite file")
            chosen = setups.THROUGHPUT_QUICK if args.quick else setups.THROUGHPUT
            ours_tp = [o for o in ours_all if o.name in chosen]
            plain_tp = [p for p in plain_all if p.name in chosen]
            with clock("throughput"):
                results["throughput"] = throughput.throughput(workdir, ours_tp, plain_tp, **plan["throughput"])
        if "disk" in only:
            _say("5. bytes on disk per paused and per finished thread")
            ours_d = [o for o in ours_all if o.name in (setups.THROUGHPUT_QUICK if args.quick else setups.DISK)]
            plain_d = [p for p in plain_all if p.name in setups.DISK]
            with clock("disk"):
                results["disk"] = figures.disk(workdir, ours_d, plain_d, **plan["disk"])
        if "api" in only:
            _say("6. the HTTP API over loopback next to the same operation in process")
            with clock("api"):
                results["api"] = api.api(workdir, **plan["api"])
        if "postgres" in only:
            _say("7. PostgreSQL (fsync on): 1-8 worker processes, the audit chain under contention, listing and resuming")
            with clock("postgres"):
                results["postgres"] = postgres.postgres(workdir, **plan["postgres"])
        if "large" in only:
            _say("8. large states: a 100 KB and a 1 MB field, cycle time and bytes per finished thread")
            with clock("large"):
                results["large"] = large.large(workdir, **plan["large"])
        if "async" in only:
            _say("9. async: astart/aresume vs plain async LangGraph, 1 and 8 threads at once from one event loop")
            with clock("async"):
                results["async"] = aio.async_figure(workdir, **plan["async"])
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if "throughput" in results and "profile" in results:
        # the most cycles/s the disk's commit rate allows, given the commits each cycle makes
        raw = results["throughput"]["raw_sqlite_commits_per_s"]
        results["throughput"]["commit_bound_cycles_per_s"] = {
            name: {s: round(rate / p["commits"]) for s, rate in raw.items()}
            for name, p in results["profile"].items() if p.get("commits")
        }
    results["targets"] = setups.targets(results)
    for what, target, measured, met in large.targets(results.get("large", {})):
        results["targets"].append({"what": what, "target": target, "measured": measured,
                                   "met": None if args.quick and "cycle" in what else met})
    results["seconds"] = round(time.perf_counter() - t_start, 1)
    results["seconds_by_figure"] = took
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print_report(results)
    print(f"\nwrote {out} in {results['seconds']} s")
    return 0


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class _Clock:
    """Seconds each figure took (results["seconds_by_figure"])."""

    def __init__(self, into: dict[str, float]) -> None:
        self.into = into

    def __call__(self, name: str) -> _Clock:
        self.name = name
        return self

    def __enter__(self) -> None:
        self.t0 = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.into[self.name] = round(time.perf_counter() - self.t0, 1)


if __name__ == "__main__":
    raise SystemExit(main())

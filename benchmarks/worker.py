"""A throughput worker process: `python -m benchmarks.worker SPEC_JSON`.

Prints `ready` once its database is open, then for every line `SECONDS` read on stdin runs cycles
for that long and prints one JSON line: `{"cycles", "conflicts", "won": [thread ids], "ms": [each
cycle's milliseconds]}`.

- ours: start a thread (it pauses), then take a review from the shared queue (`pending`, one of
  the `window` oldest at random) and resume it; a review another worker decided first is a
  conflict (`AlreadyDecidedError`, `ThreadBusyError`...), and the worker takes another.
- plain: start and resume its own thread (plain LangGraph has no queue to take from).

A cycle's latency runs from its start to its won resume, lost races included.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from benchmarks.graphs import WORKFLOW
from benchmarks.setups import INPUT, Ours, Plain, plain_cycle

if TYPE_CHECKING:
    from hitl_graphs import Runner


def racing(runner: Runner, rng: random.Random, me: str, window: int) -> Callable[[float], dict[str, Any]]:
    """Ours, as a pool of workers runs: start a thread, then decide one of the `window` oldest
    pending reviews at random, taking another when a worker got there first (a conflict)."""
    from hitl_graphs import Approve, HitlError

    def run(seconds: float) -> dict[str, Any]:
        won: list[str] = []
        ms: list[float] = []
        conflicts = 0
        end = time.perf_counter() + seconds
        while (t0 := time.perf_counter()) < end:
            runner.start(WORKFLOW, INPUT)
            while True:
                page = runner.pending(limit=window)
                if not page:
                    break
                review = rng.choice(page)
                try:
                    runner.resume(review.thread_id, Approve(actor=me), review_id=review.review_id)
                except HitlError:
                    conflicts += 1
                    continue
                won.append(review.thread_id)
                ms.append(round((time.perf_counter() - t0) * 1000, 3))
                break
        return {"cycles": len(won), "conflicts": conflicts, "won": won, "ms": ms}

    return run


def main() -> None:
    spec: dict[str, Any] = json.loads(sys.argv[1])
    rng = random.Random(spec.get("seed", 0) * 7919 + os.getpid())
    if spec["kind"] == "ours":
        runner = Ours("worker", synchronous=spec["synchronous"], durability=spec["durability"]).runner(spec["db"])
        me = f"w{os.getpid()}"
        window = int(spec.get("window", 4))
        for _ in range(2):  # warm up, and keep a few reviews waiting in the queue
            runner.start(WORKFLOW, INPUT)

        run = racing(runner, rng, me, window)
    else:
        plain = Plain("worker", saver=spec["saver"], synchronous=spec["synchronous"], durability=spec["durability"])
        app, _ = plain.open(spec["db"])
        cycle = plain_cycle(app, plain.durability)
        cycle()

        def run(seconds: float) -> dict[str, Any]:
            done: list[str] = []
            ms: list[float] = []
            end = time.perf_counter() + seconds
            while (t0 := time.perf_counter()) < end:
                done.append(cycle())
                ms.append(round((time.perf_counter() - t0) * 1000, 3))
            return {"cycles": len(done), "conflicts": 0, "won": done, "ms": ms}

    print("ready", flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        print(json.dumps(run(float(line))), flush=True)


if __name__ == "__main__":
    main()

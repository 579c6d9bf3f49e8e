"""Timing helpers: side-by-side rounds and min/median/max summaries.

The machine is shared and noisy, so no figure is an absolute time alone: variants run in rounds,
in a shuffled order each round, and every ratio is taken within one round (both sides measured
seconds apart) before it is summarised.
"""

from __future__ import annotations

import gc
import os
import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def summary(values: Sequence[float], digits: int = 4) -> dict[str, Any]:
    """`{"min", "median", "max", "n"}` of `values` (rounded)."""
    if not values:
        return {"min": None, "median": None, "max": None, "n": 0}
    return {
        "min": round(min(values), digits),
        "median": round(statistics.median(values), digits),
        "max": round(max(values), digits),
        "n": len(values),
    }


def remove_db(path: str | os.PathLike[str]) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = Path(str(path) + suffix)
        if p.exists():
            p.unlink()


def rounds(
    variants: Mapping[str, Callable[[], None]],
    *,
    n_rounds: int,
    per_round: int,
    warmup: int = 3,
    seed: int = 7,
    cpu_out: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    """Run every variant `per_round` times per round, in a shuffled order each round.

    Returns the seconds per call of each variant in each round (one list per variant, one entry
    per round, in round order). With `cpu_out`, also the process CPU seconds per call (all
    threads): unlike wall time it does not count waiting for the disk or for other programs on a
    shared machine, so its ratios move less from run to run.
    """
    rng = random.Random(seed)
    for fn in variants.values():
        for _ in range(warmup):
            fn()
    out: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for _ in range(n_rounds):
        rng.shuffle(names)
        for name in names:
            fn = variants[name]
            gc.collect()
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(per_round):
                fn()
            out[name].append((time.perf_counter() - t0) / per_round)
            if cpu_out is not None:
                cpu_out.setdefault(name, []).append((time.process_time() - c0) / per_round)
    return out


def ratios(times: Mapping[str, Sequence[float]], a: str, b: str) -> list[float]:
    """Per-round ratio time(a) / time(b): above 1, `a` is slower."""
    return [x / y for x, y in zip(times[a], times[b], strict=True)]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result

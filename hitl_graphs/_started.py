"""When this process started: what "the review pending when the command started" is measured by.

The CLI refuses to apply a decision to a review raised after the command started (the person
cannot have seen it). On Linux the kernel knows when the process started (to 10 ms); elsewhere
the package's import time, taken first thing, is the closest moment every platform gives, before
LangGraph's imports take their second.
"""

import os
import time

AT = time.time()


def process_started() -> float:
    """The wall-clock time this process started (the package's import time where unknown)."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: start time since boot
        tick = 1 / os.sysconf("SC_CLK_TCK")
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks * tick
    except (OSError, ValueError, IndexError, AttributeError):
        return AT
    # the kernel counts in ticks (10 ms), rounding the start down: one tick later is never
    # before the true start, so a review raised just before the command is not taken for later
    return min(time.time() - age + tick, AT)

"""The runtime: the flows of every operation, their two drivers, decision admission, the `Runner`.

    driver      the effect vocabulary (`Invoke`, `Call`, ...) and the sync / async drivers
    admission   pure checks of a decision against its review (roles, seen, kinds, patch)
    running     start a thread, run its graph, make the ledger agree with where it stopped
    deciding    resume with a decision: pick the review, admit, claim once, apply; cancel
    recovering  apply recorded decisions, continue stalled runs, retry failed steps
    deadlines   the sweep's default decisions; waiting for a decision in-process
    streaming   start and resume, streaming LangGraph's chunks (`Runner.stream`, `stream_resume`)
    savers      which saver runs a workflow; what a user's own saver maps to
    adopting    threads plain LangGraph ran on the same file, brought into the ledger
    runner      the `Runner` facade: each public method drives one flow
"""

from hitl_graphs.runtime.runner import Runner

__all__ = ["Runner"]

"""Old import path of run liveness: see `hitl_graphs.storage.sqlite.liveness`."""

from hitl_graphs.storage.sqlite.liveness import RunMarks

__all__ = ["RunMarks"]

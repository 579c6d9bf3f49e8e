"""How a run ended: one record every template writes, and one `outcome()` that reads it.

Each template used to say how it ended in its own words (plan review's `stopped`, conversation's
`ended`, tool approval's `stop_reason`, escalation's `resolution`), so code reading "did this
thread end well?" needed five branches, and the same Reject could end `rejected` through one
`Workflow` and `cancelled` through another. Now every template also writes one state key,
`ending`, an `Ending` record, as its graph ends; the old keys stay for code that reads them.

    status       what it means                                             the thread's outcome
    completed    the work ran to its end (approved, edited, resolved)      completed
    rejected     a person rejected; nothing more ran                       rejected
    expired      nobody decided in time; the deadline's Reject ended it    rejected
    stopped      the template's own guard ended it (turn limit, nobody     completed
                 left to escalate to); `reason` says which
    cancelled    `Runner.cancel` / `hitl cancel` (read from the thread:    cancelled
                 a cancelled graph never runs again, so it writes nothing)

`by` is the actor of the decision that ended the run (`hitl:deadline` for a deadline's default),
None when no decision did (a model answered, an automated level resolved the case). `at` says
where, in the template's own words (`plan v2`, a phase, a level, `turn 3`).

The runner reads the record too: a finished thread whose graph's state schema declares
`ending: Ending` gets the outcome in the right column above, unless its `Workflow(outcome=...)`
says otherwise. A graph of your own can declare the key and write `Ending(...)` to join in.

Example:
    >>> outcome({"ending": {"status": "rejected", "at": "plan v1", "by": "ana", "reason": "not now"}})["status"]
    'rejected'
    >>> outcome({"plan": ["a"]}) is None   # no ending yet: the run has not ended
    True
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic validates only this TypedDict before Python 3.12

from hitl_graphs.reviews import Outcome, ThreadView

EndStatus: TypeAlias = Literal["completed", "rejected", "expired", "stopped", "cancelled"]

ENDING_KEY = "ending"
"""The state key the record lives under."""


class Ending(TypedDict):
    """How a run ended (the `ending` state key of every template). JSON-native, so checkpoints
    and `hitl show` hold it as it is.

    Attributes:
        status: See the module's table.
        at: Where it ended, in the template's words (`plan v1`, `analyse`, `manager`, `turn 2`).
        by: The actor of the decision that ended it, None when no decision did.
        reason: Why it did not complete: the reject's reason, the guard's; None when completed.

    Example:
        >>> Ending(status="completed", at="plan v1", by="ana", reason=None)["by"]
        'ana'
    """

    status: EndStatus
    at: str | None
    by: str | None
    reason: str | None


_LEDGER: dict[EndStatus, Outcome] = {
    "completed": "completed",
    "rejected": "rejected",
    "expired": "rejected",
    "stopped": "completed",
    "cancelled": "cancelled",
}

_ADAPTER: TypeAdapter[Ending] = TypeAdapter(Ending)


def outcome(source: ThreadView | Mapping[str, Any]) -> Ending | None:
    """How a thread (`runner.show(...)`, any `ThreadView`) or a graph's final state ended.

    The same answer for every template, whichever `Workflow` ran it. None while the run has not
    ended (a view that is paused, running or failed; a state without the record). A finished
    thread whose state holds no record (a graph of your own, or one that ended before its
    template wrote records) is described by its outcome alone.

    Raises:
        ValueError: the state's `ending` is not an `Ending` (a key of your own under that name?).

    Example:
        >>> from hitl_graphs.reviews import ThreadView
        >>> outcome(ThreadView(thread_id="t", workflow="w", status="done", outcome="cancelled"))
        {'status': 'cancelled', 'at': None, 'by': None, 'reason': None}
    """
    if isinstance(source, ThreadView):
        if source.status != "done":
            return None
        if source.outcome == "cancelled":  # cancelling never runs the graph, so its record is older
            return Ending(status="cancelled", at=None, by=None, reason=None)
        record = _read(source.state)
        return record or Ending(status=source.outcome or "completed", at=None, by=None, reason=None)
    return _read(source)


def thread_outcome(ending: Ending) -> Outcome:
    """The thread outcome (`ThreadView.outcome`, `hitl show`) an ending stands for.

    Example:
        >>> thread_outcome({"status": "expired", "at": "plan v1", "by": "hitl:deadline", "reason": None})
        'rejected'
    """
    return _LEDGER[ending["status"]]


def declares_ending(state_schema: type | None) -> bool:
    """Whether a graph's state schema declares `ending: Ending` (optional or not): only such a
    graph's `ending` is read as this record, so a state key of your own by that name is left alone.

    Example:
        >>> class S(TypedDict, total=False):
        ...     ending: Ending | None
        >>> declares_ending(S), declares_ending(dict)
        (True, False)
    """
    return state_schema is not None and _declares(state_schema)


@functools.lru_cache(maxsize=128)
def _declares(state_schema: type) -> bool:
    # get_type_hints costs ~0.1 ms; a state schema does not change while the process runs
    try:
        declared = typing.get_type_hints(state_schema).get(ENDING_KEY)
    except Exception:  # a schema whose hints do not resolve declares nothing we can trust
        return False
    return declared is Ending or Ending in typing.get_args(declared)


def _read(state: Mapping[str, Any]) -> Ending | None:
    raw = state.get(ENDING_KEY)
    if raw is None:
        return None
    try:
        return _ADAPTER.validate_python(raw, strict=True)
    except ValidationError as exc:
        raise ValueError(
            f"the state's {ENDING_KEY!r} is not an ending record ({exc.errors()[0]['msg']}); a template writes "
            f"{{'status', 'at', 'by', 'reason'}}: rename a key of your own that uses this name"
        ) from None

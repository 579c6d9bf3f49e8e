"""Every error hitl_graphs raises on purpose, as one small tree.

Each message names the problem and the fix, and an error raised before a decision is recorded
means nothing was written: the thread stays paused exactly as it was.

    HitlError
    ├── ConfigError                a workflow, database or option is set up wrongly
    │   └── UnknownWorkflowError   no workflow is registered under that name
    ├── ThreadError                the thread cannot take this request
    │   ├── UnknownThreadError     no such thread in the database
    │   ├── ThreadExistsError      `start` with a thread id that is already used
    │   ├── ThreadBusyError        another process is running the thread right now
    │   └── NoPendingReviewError   the thread is not waiting for a person
    └── DecisionError              the decision was refused; nothing was written
        ├── InvalidDecisionError   malformed, or a kind the review does not allow
        ├── PatchError             a `Modify` patch names a wrong field or a wrongly typed value
        ├── ReviewNotPendingError  the review id is unknown, or not pending
        ├── ReviewExpiredError     the review's deadline passed; its default decision applies
        ├── PermissionDeniedError  the actor lacks the review's role, or requested the action
        ├── StaleReviewError       what the review shows changed since the person looked
        └── AlreadyDecidedError    someone else (a person or the deadline sweep) decided first
"""

from __future__ import annotations


class HitlError(Exception):
    """Root of every error hitl_graphs raises on purpose.

    Example::

        try:
            runner.resume(thread_id, Approve(actor="ana"))
        except AlreadyDecidedError as exc:   # someone was faster: show it, nothing changed
            print(exc)
        except HitlError as exc:             # any other refusal: the message says what to do
            print(exc)"""


class ConfigError(HitlError):
    """A workflow, database or option is set up wrongly."""


class UnknownWorkflowError(ConfigError):
    """No workflow is registered under the name asked for."""


class ThreadError(HitlError):
    """The thread cannot take this request."""


class UnknownThreadError(ThreadError):
    """The thread id is not in the database; nothing was started."""


class ThreadExistsError(ThreadError):
    """`start` was given a thread id that already has a run."""


class ThreadBusyError(ThreadError):
    """Another process is running the thread; retry once it has paused again."""


class NoPendingReviewError(ThreadError):
    """The thread is not waiting for a decision (finished, cancelled, or running)."""


class DecisionError(HitlError):
    """A decision was refused before anything was written."""


class InvalidDecisionError(DecisionError):
    """The decision is malformed or of a kind the review does not allow."""


class PatchError(InvalidDecisionError):
    """A `Modify` patch names a field it may not change, or a value of the wrong type."""


class ReviewNotPendingError(DecisionError):
    """The review id is not one of the thread's pending reviews."""


class AlreadyDecidedError(DecisionError):
    """The review was decided first by someone else (another process, person or the sweep)."""


class ReviewExpiredError(DecisionError):
    """The review's deadline passed; the sweep applies its default decision."""


class PermissionDeniedError(DecisionError):
    """The actor lacks the role the review requires, or may not approve their own request."""


class StaleReviewError(DecisionError):
    """The pending action changed since the person saw it; they must look again."""

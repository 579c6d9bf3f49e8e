"""Every error hitl_graphs raises on purpose, as one small tree.

Each message names the problem and the fix, and an error raised before a decision is recorded
means nothing was written: the thread stays paused exactly as it was.

    HitlError
    ├── ConfigError                a workflow, database or option is set up wrongly
    │   ├── UnknownWorkflowError   no workflow is registered under that name
    │   ├── SchemaVersionError     the database was written by a newer hitl_graphs
    │   └── AuditKeyError          the audit log is keyed, and HITL_AUDIT_KEY is unset or another key
    ├── StorageError               the database could not serve the request; nothing half-done was kept
    │   ├── DatabaseBusyError      another process held the write lock too long; retrying is safe
    │   ├── UnsafeCheckpointError  a checkpoint holds a type that may not be loaded; nothing ran
    │   └── AuditError             the audit log's head row is gone or wrong; nothing is written
    ├── ThreadError                the thread cannot take this request
    │   ├── UnknownThreadError     no such thread in the database
    │   ├── ThreadExistsError      `start` with a thread id that is already used
    │   ├── ThreadBusyError        another process is running the thread right now
    │   └── NoPendingReviewError   the thread is not waiting for a person
    └── DecisionError              the decision was refused; nothing was written
        ├── InvalidDecisionError   malformed, or a kind the review does not allow
        ├── PatchError             a `Modify` patch names a wrong field or a wrongly typed value
        ├── ReviewNotPendingError  the review id is unknown, or not pending
        │   └── UnknownReviewError the thread never had a review with that id
        ├── ReviewExpiredError     the review's deadline passed; its default decision applies
        ├── PermissionDeniedError  the actor lacks the review's role, or requested the action
        ├── StaleReviewError       what the review shows changed since the person looked
        ├── AlreadyDecidedError    someone else (a person or the deadline sweep) decided first
        └── ResumeRefusedError     the graph raised on the value it was resumed with; the review waits again
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


class SchemaVersionError(ConfigError):
    """The database was written by a newer hitl_graphs; upgrade the package to open it."""


class AuditKeyError(ConfigError):
    """The audit log is keyed (`HITL_AUDIT_KEY`) and this process has no key, or another one;
    nothing was written (see `hitl_graphs.audit`)."""


class StorageError(HitlError):
    """The database could not serve the request; what was not committed is not kept."""


class DatabaseBusyError(StorageError):
    """Another process held the database's write lock longer than the busy timeout.

    Nothing of the refused request was kept; retrying is safe. A decision committed before the
    lock ran out stays recorded, and `hitl recover` applies it."""


class UnsafeCheckpointError(StorageError):
    """A stored checkpoint holds a value whose type is not allowed to load (see `hitl_graphs.serde`).

    Loading it would import and call code named by the database, so it is refused and nothing
    runs; register the type with the workflow if it is yours."""


class AuditError(StorageError):
    """The audit log's head row is missing or is not its last entry: someone edited the database.
    Nothing is written until it is restored; `hitl audit verify` names what changed."""


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


class UnknownReviewError(ReviewNotPendingError):
    """The thread never had a review with that id (a typo, or another thread's id)."""


class AlreadyDecidedError(DecisionError):
    """The review was decided first by someone else (another process, person or the sweep)."""


class ReviewExpiredError(DecisionError):
    """The review's deadline passed; the sweep applies its default decision."""


class PermissionDeniedError(DecisionError):
    """The actor lacks the role the review requires, or may not approve their own request."""


class StaleReviewError(DecisionError):
    """The pending action changed since the person saw it; they must look again."""


class ResumeRefusedError(DecisionError):
    """A plain `interrupt()` of the graph (not `request_review`) raised on the value its decision
    resumed it with (`answer["approved"]` on a decision it did not expect). The decision was
    released: the review is pending again and the thread paused, so nobody is stuck with a used-up
    decision. Tell the workflow what its `interrupt()` expects (`Workflow(resume_value=...)`),
    then decide again."""

"""The records a thread leaves besides its state: ratings and the audit log. (A part of `Runner`.)"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from hitl_graphs import feedback as feedback_mod
from hitl_graphs.audit import AuditHead, AuditReport, Event
from hitl_graphs.errors import ConfigError, NoPendingReviewError, UnknownThreadError
from hitl_graphs.feedback import Feedback, FeedbackClient

if TYPE_CHECKING:
    from hitl_graphs.runtime.host import RunnerHost as Runner  # a Protocol: the type of `self` in a part (host.py says why)


class RecordFlows:
    """Ratings (`feedback`) and the audit log (`audit_*`), each a thin call to the store."""

    def feedback(
        self: Runner, thread_id: str, score: float, *, comment: str | None = None, actor: str | None = None, key: str = "helpfulness"
    ) -> Feedback:
        """Rate a finished thread's output (0 to 1); stored locally, listed by `feedback_list`."""
        row = self.ledger.thread(thread_id)
        if row is None:
            raise UnknownThreadError(f"thread {thread_id!r} does not exist")
        if row.status != "done":
            raise NoPendingReviewError(f"thread {thread_id!r} has not finished (status {row.status}); rate it once it has")
        fb = Feedback(thread_id=thread_id, workflow=row.workflow, score=score, comment=comment, actor=actor, key=key,
                      at=feedback_mod.now())
        self.store.feedback.record(fb)
        self.ledger.add_events(thread_id, [Event("feedback", actor=actor, data={"key": key, "score": score, "comment": comment})])
        return fb

    def feedback_list(self: Runner, *, workflow: str | None = None) -> list[Feedback]:
        """Ratings, oldest first, optionally of one workflow."""
        return [fb for _, fb in self.store.feedback.listing(workflow=workflow)]

    def export_feedback(self: Runner, client: FeedbackClient, *, run_id_for: Callable[[Feedback], Any]) -> int:
        """Send ratings not yet exported to `client` (e.g. `langsmith.Client()`); opt-in only."""
        return feedback_mod.export_feedback(self.store.feedback, client, run_id_for=run_id_for)

    def audit_verify(self: Runner, *, expect_head: Sequence[AuditHead | str] = ()) -> AuditReport:
        """Check the audit log: its hash chain (keyed with the store's `audit_key`, if any), its
        head, the ledger's threads and decisions against it, and heads kept elsewhere
        (`expect_head`, each an `AuditHead` or the `SEQ:HASH` text `audit_head()` gave). Names
        the first problem; `hitl_graphs.audit` says what it cannot see.

        Example:
            >>> from hitl_graphs import Runner
            >>> from hitl_graphs.examples import email_workflow
            >>> with Runner.open(":memory:", workflows=[email_workflow()]) as runner:
            ...     _ = runner.start("email", {"to": "ana@example.com", "topic": "lunch"})
            ...     kept = runner.audit_head()       # store it where this database's writers cannot
            ...     report = runner.audit_verify(expect_head=[kept])
            >>> report.ok, report.head_seq, report.kept_heads
            (True, 2, 1)

        Raises:
            ConfigError: an `expect_head` text is not `SEQ:HASH`.
        """
        try:
            heads = [h if isinstance(h, AuditHead) else AuditHead.parse(h) for h in expect_head]
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        return self.store.audit.verify(expect_heads=heads)

    def audit_head(self: Runner) -> AuditHead:
        """The audit log's last entry (`str()` of it is `SEQ:HASH`): keep it where the database's
        writers cannot write, and pass it to `audit_verify(expect_head=...)` later.

        Raises:
            AuditError: the head row is missing or is not the last entry (the database was edited).
        """
        return self.store.audit.head()

    def audit_export(self: Runner, out: TextIO, *, thread_id: str | None = None) -> int:
        """Write the audit log (or one thread's part) as JSON Lines; returns the entry count."""
        return self.store.audit.export(out, thread_id=thread_id)

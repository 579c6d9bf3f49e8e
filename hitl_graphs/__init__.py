"""hitl_graphs: human-in-the-loop review, approval and durable resume for LangGraph.

Example:
    >>> from hitl_graphs import Approve, Runner
    >>> from hitl_graphs.examples import email_workflow
    >>> with Runner.open(":memory:", workflows=[email_workflow()]) as runner:
    ...     paused = runner.start("email", {"to": "ana@example.com", "topic": "lunch"})
    ...     runner.resume(paused.thread_id, Approve(actor="ana")).outcome
    'completed'
"""

from hitl_graphs.decisions import (
    ALL_KINDS,
    Approve,
    Decision,
    DecisionKind,
    Escalate,
    Modify,
    Reject,
    Respond,
    parse_decision,
)
from hitl_graphs.errors import (
    AlreadyDecidedError,
    ConfigError,
    DecisionError,
    HitlError,
    InvalidDecisionError,
    NoPendingReviewError,
    PatchError,
    PermissionDeniedError,
    ReviewExpiredError,
    ReviewNotPendingError,
    StaleReviewError,
    ThreadBusyError,
    ThreadError,
    ThreadExistsError,
    UnknownThreadError,
    UnknownWorkflowError,
)
from hitl_graphs.audit import AuditReport
from hitl_graphs.effects import effect_key, run_once
from hitl_graphs.feedback import Feedback
from hitl_graphs.gate import request_review, review_node
from hitl_graphs.patches import validate_patch
from hitl_graphs.registry import Workflow, get_workflow, load_app, register, registered
from hitl_graphs.reviews import HistoryEntry, ReviewRequest, ThreadView
from hitl_graphs.runner import Runner
from hitl_graphs.scripted import ScriptedChatModel, tool_call
from hitl_graphs.store import HitlSqliteSaver, SqliteStore, default_db_path

__all__ = [
    "ALL_KINDS",
    "AlreadyDecidedError",
    "Approve",
    "AuditReport",
    "ConfigError",
    "Decision",
    "DecisionError",
    "DecisionKind",
    "Escalate",
    "Feedback",
    "HistoryEntry",
    "HitlError",
    "HitlSqliteSaver",
    "InvalidDecisionError",
    "Modify",
    "NoPendingReviewError",
    "PatchError",
    "PermissionDeniedError",
    "Reject",
    "Respond",
    "ReviewExpiredError",
    "ReviewNotPendingError",
    "ReviewRequest",
    "Runner",
    "ScriptedChatModel",
    "SqliteStore",
    "StaleReviewError",
    "ThreadBusyError",
    "ThreadError",
    "ThreadExistsError",
    "ThreadView",
    "UnknownThreadError",
    "UnknownWorkflowError",
    "Workflow",
    "default_db_path",
    "effect_key",
    "get_workflow",
    "load_app",
    "parse_decision",
    "register",
    "registered",
    "request_review",
    "review_node",
    "run_once",
    "tool_call",
    "validate_patch",
]

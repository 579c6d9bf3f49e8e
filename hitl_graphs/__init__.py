"""hitl_graphs: human-in-the-loop review, approval and durable resume for LangGraph.

One public face per layer, each with a complete, sorted `__all__` (`tests/test_public_api.py`):

- `hitl_graphs`: the core: decisions, review requests and thread views, errors, `Runner`,
  `Workflow` and the registry, `request_review` / `review_node`, `run_once`, the confirmation
  policies, and the five `create_*` factories.
- `hitl_graphs.templates.<name>`: each template's own knobs (levels and triggers of
  `escalation`, `Phase` of `multi_step`, `plan_memory` of `plan_review`, ...).
- `hitl_graphs.testing`: test doubles: `ScriptedChatModel`, `tool_call`, `ScriptedReviewer`.
- storage: `hitl_graphs.storage` (`Store`, `open_store`, `SqliteStore`, `HitlSqliteSaver`).

Names that moved to their layer's face still import from here (`from hitl_graphs import
ScriptedChatModel` works as before), so nothing users wrote breaks.

Example:
    >>> from hitl_graphs import Approve, Runner
    >>> from hitl_graphs.examples import email_workflow
    >>> with Runner.open(":memory:", workflows=[email_workflow()]) as runner:
    ...     paused = runner.start("email", {"to": "ana@example.com", "topic": "lunch"})
    ...     runner.resume(paused.thread_id, Approve(actor="ana")).outcome
    'completed'
"""

import importlib as _importlib
import typing as _typing

from hitl_graphs import _started  # noqa: F401  (first: when the process started using the package)
from hitl_graphs.decisions import (
    DEFAULT_KINDS,
    Approve,
    Decision,
    DecisionDict,
    DecisionKind,
    Escalate,
    Modify,
    Reject,
    Respond,
    parse_decision,
)
from hitl_graphs.errors import (
    AlreadyDecidedError,
    AuditError,
    AuditKeyError,
    ConfigError,
    DatabaseBusyError,
    DecisionError,
    HitlError,
    InvalidDecisionError,
    NoPendingReviewError,
    PatchError,
    PermissionDeniedError,
    ReviewExpiredError,
    ResumeRefusedError,
    ReviewNotPendingError,
    SchemaVersionError,
    StaleReviewError,
    StorageError,
    ThreadBusyError,
    ThreadError,
    ThreadExistsError,
    UnknownReviewError,
    UnknownThreadError,
    UnknownWorkflowError,
    UnsafeCheckpointError,
)
from hitl_graphs.audit import AuditHead, AuditReport
from hitl_graphs.effects import effect_key, record_event, run_once
from hitl_graphs.endings import Ending, EndStatus, outcome
from hitl_graphs.feedback import Feedback
from hitl_graphs.gate import request_review, review_node
from hitl_graphs.patches import validate_patch
from hitl_graphs.policies import (
    AlwaysAskPolicy,
    AskOncePolicy,
    AskWhenPolicy,
    Confirmation,
    ConfirmationLevel,
    ConfirmationPolicy,
    NeverAskPolicy,
)
from hitl_graphs.registry import CheckpointerReplacedWarning, Workflow, get_workflow, load_app, register, registered
from hitl_graphs.reviews import HistoryEntry, MiddlewareAction, ReviewRequest, ThreadView
from hitl_graphs.runner import Runner
from hitl_graphs.runtime.streaming import AsyncRunStream, RunStream
from hitl_graphs.templates.conversation import create_conversation_graph
from hitl_graphs.templates.escalation import create_escalation_graph
from hitl_graphs.templates.multi_step import create_multi_step_graph
from hitl_graphs.templates.plan_review import create_plan_review_graph
from hitl_graphs.templates.tool_approval import create_tool_approval_graph

if _typing.TYPE_CHECKING:  # the old import paths, typed; at run time `__getattr__` serves them
    from hitl_graphs.decisions import ALL_KINDS as ALL_KINDS
    from hitl_graphs.storage import HitlSqliteSaver as HitlSqliteSaver
    from hitl_graphs.storage import SqliteStore as SqliteStore
    from hitl_graphs.storage import default_db_path as default_db_path
    from hitl_graphs.templates.conversation import ConversationState as ConversationState
    from hitl_graphs.templates.escalation import AgentLevel as AgentLevel
    from hitl_graphs.templates.escalation import AnyTrigger as AnyTrigger
    from hitl_graphs.templates.escalation import CustomTrigger as CustomTrigger
    from hitl_graphs.templates.escalation import ErrorTrigger as ErrorTrigger
    from hitl_graphs.templates.escalation import EscalationHandler as EscalationHandler
    from hitl_graphs.templates.escalation import EscalationLevel as EscalationLevel
    from hitl_graphs.templates.escalation import EscalationState as EscalationState
    from hitl_graphs.templates.escalation import EscalationTrigger as EscalationTrigger
    from hitl_graphs.templates.escalation import HumanLevel as HumanLevel
    from hitl_graphs.templates.escalation import LowConfidenceTrigger as LowConfidenceTrigger
    from hitl_graphs.templates.escalation import ModelHandler as ModelHandler
    from hitl_graphs.templates.escalation import SensitiveTrigger as SensitiveTrigger
    from hitl_graphs.templates.escalation import default_levels as default_levels
    from hitl_graphs.templates.multi_step import GatePolicy as GatePolicy
    from hitl_graphs.templates.multi_step import MultiStepState as MultiStepState
    from hitl_graphs.templates.multi_step import Phase as Phase
    from hitl_graphs.templates.multi_step import PhaseInput as PhaseInput
    from hitl_graphs.templates.multi_step import PhaseOutput as PhaseOutput
    from hitl_graphs.templates.multi_step import review_when_marked as review_when_marked
    from hitl_graphs.templates.plan_review import PlanContext as PlanContext
    from hitl_graphs.templates.plan_review import PlanProposal as PlanProposal
    from hitl_graphs.templates.plan_review import PlanState as PlanState
    from hitl_graphs.templates.plan_review import plan_memory as plan_memory
    from hitl_graphs.templates.plan_review import plan_outcome as plan_outcome
    from hitl_graphs.templates.tool_approval import ToolApprovalState as ToolApprovalState
    from hitl_graphs.templates.tool_approval import agent_tool as agent_tool
    from hitl_graphs.templates.tool_approval import tool_args_schema as tool_args_schema
    from hitl_graphs.testing import ScriptedChatModel as ScriptedChatModel
    from hitl_graphs.testing import tool_call as tool_call

_MOVED: dict[str, str] = {
    "ALL_KINDS": "hitl_graphs.decisions",
    "AgentLevel": "hitl_graphs.templates.escalation",
    "AnyTrigger": "hitl_graphs.templates.escalation",
    "ConversationState": "hitl_graphs.templates.conversation",
    "CustomTrigger": "hitl_graphs.templates.escalation",
    "ErrorTrigger": "hitl_graphs.templates.escalation",
    "EscalationHandler": "hitl_graphs.templates.escalation",
    "EscalationLevel": "hitl_graphs.templates.escalation",
    "EscalationState": "hitl_graphs.templates.escalation",
    "EscalationTrigger": "hitl_graphs.templates.escalation",
    "GatePolicy": "hitl_graphs.templates.multi_step",
    "HitlSqliteSaver": "hitl_graphs.storage",
    "HumanLevel": "hitl_graphs.templates.escalation",
    "LowConfidenceTrigger": "hitl_graphs.templates.escalation",
    "ModelHandler": "hitl_graphs.templates.escalation",
    "MultiStepState": "hitl_graphs.templates.multi_step",
    "Phase": "hitl_graphs.templates.multi_step",
    "PhaseInput": "hitl_graphs.templates.multi_step",
    "PhaseOutput": "hitl_graphs.templates.multi_step",
    "PlanContext": "hitl_graphs.templates.plan_review",
    "PlanProposal": "hitl_graphs.templates.plan_review",
    "PlanState": "hitl_graphs.templates.plan_review",
    "ScriptedChatModel": "hitl_graphs.testing",
    "SensitiveTrigger": "hitl_graphs.templates.escalation",
    "SqliteStore": "hitl_graphs.storage",
    "ToolApprovalState": "hitl_graphs.templates.tool_approval",
    "agent_tool": "hitl_graphs.templates.tool_approval",
    "default_db_path": "hitl_graphs.storage",
    "default_levels": "hitl_graphs.templates.escalation",
    "plan_memory": "hitl_graphs.templates.plan_review",
    "plan_outcome": "hitl_graphs.templates.plan_review",
    "review_when_marked": "hitl_graphs.templates.multi_step",
    "tool_args_schema": "hitl_graphs.templates.tool_approval",
    "tool_call": "hitl_graphs.testing",
}
"""Old import paths: a name that moved to its layer's face -> the module that holds it now."""


def __getattr__(name: str) -> _typing.Any:
    """Serve a name that moved out of the core face (`from hitl_graphs import SqliteStore`), so
    code written before the split keeps working; new code imports it from its layer."""
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'hitl_graphs' has no attribute {name!r}")
    return getattr(_importlib.import_module(module), name)


__all__ = [
    "AlreadyDecidedError",
    "AlwaysAskPolicy",
    "Approve",
    "AskOncePolicy",
    "AskWhenPolicy",
    "AsyncRunStream",
    "AuditError",
    "AuditHead",
    "AuditKeyError",
    "AuditReport",
    "CheckpointerReplacedWarning",
    "ConfigError",
    "Confirmation",
    "ConfirmationLevel",
    "ConfirmationPolicy",
    "DEFAULT_KINDS",
    "DatabaseBusyError",
    "Decision",
    "DecisionDict",
    "DecisionError",
    "DecisionKind",
    "EndStatus",
    "Ending",
    "Escalate",
    "Feedback",
    "HistoryEntry",
    "HitlError",
    "InvalidDecisionError",
    "MiddlewareAction",
    "Modify",
    "NeverAskPolicy",
    "NoPendingReviewError",
    "PatchError",
    "PermissionDeniedError",
    "Reject",
    "Respond",
    "ResumeRefusedError",
    "ReviewExpiredError",
    "ReviewNotPendingError",
    "ReviewRequest",
    "RunStream",
    "Runner",
    "SchemaVersionError",
    "StaleReviewError",
    "StorageError",
    "ThreadBusyError",
    "ThreadError",
    "ThreadExistsError",
    "ThreadView",
    "UnknownReviewError",
    "UnknownThreadError",
    "UnknownWorkflowError",
    "UnsafeCheckpointError",
    "Workflow",
    "create_conversation_graph",
    "create_escalation_graph",
    "create_multi_step_graph",
    "create_plan_review_graph",
    "create_tool_approval_graph",
    "effect_key",
    "get_workflow",
    "load_app",
    "outcome",
    "parse_decision",
    "record_event",
    "register",
    "registered",
    "request_review",
    "review_node",
    "run_once",
    "validate_patch",
]

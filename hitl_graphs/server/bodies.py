"""What the HTTP API reads and writes, as pydantic models (its OpenAPI schema comes from these)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hitl_graphs.decisions import Approve, Decision, Escalate, Modify, Reject, Respond
from hitl_graphs.errors import InvalidDecisionError

DecisionKindName = Literal["approve", "modify", "reject", "respond", "escalate"]

_FIELDS: dict[str, set[str]] = {
    "approve": {"comment", "seen", "verify"},
    "modify": {"patch", "comment", "seen", "verify"},
    "reject": {"reason", "comment", "seen"},
    "respond": {"text", "comment", "seen"},
    "escalate": {"reason", "comment", "seen"},
}


class Problem(BaseModel):
    """Every refusal: a stable code and a sentence that names the fix. Nothing was changed."""

    error: str = Field(description="e.g. already_decided, stale_review, permission_denied, not_authenticated")
    detail: str


class StartThread(BaseModel):
    """Start a thread of a registered workflow; the token's actor is who started it."""

    model_config = ConfigDict(extra="forbid")

    workflow: str
    input: dict[str, Any] = Field(default_factory=dict)
    thread_id: str | None = Field(default=None, min_length=1, max_length=200)


class DecisionBody(BaseModel):
    """A person's decision on the review they saw (`review_id` is required: a decision names what
    its decider saw). Who decides, and with which roles, comes from the token."""

    model_config = ConfigDict(extra="forbid")

    review_id: str = Field(min_length=1)
    kind: DecisionKindName
    patch: dict[str, Any] | None = None
    reason: str | None = None
    comment: str | None = None
    text: str | None = None
    seen: str | None = Field(default=None, description="The payload hash shown; refused (409) if the review changed since.")
    verify: str | None = Field(default=None, description="The phrase a verify-level review asks for.")

    def decision(self, actor: str) -> Decision:
        """The decision this body asks for, by `actor`.

        Raises:
            InvalidDecisionError: a field that does not belong to the kind, or one it needs is missing.
        """
        given = {k for k in ("patch", "reason", "comment", "text", "seen", "verify") if getattr(self, k) is not None}
        extra = sorted(given - _FIELDS[self.kind])
        if extra:
            raise InvalidDecisionError(f"{', '.join(extra)} does not go with kind {self.kind!r}; "
                                       f"it takes {', '.join(sorted(_FIELDS[self.kind]))}")
        common: dict[str, Any] = {"actor": actor, "comment": self.comment, "seen": self.seen}
        match self.kind:
            case "approve":
                return Approve(**common, verification=self.verify)
            case "modify":
                if not self.patch:
                    raise InvalidDecisionError("a modify needs a non-empty patch: the fields to change and their new values")
                return Modify(**common, patch=self.patch, verification=self.verify)
            case "reject":
                return Reject(**common, reason=self.reason)
            case "respond":
                if not self.text:
                    raise InvalidDecisionError("a respond needs text: your reply")
                return Respond(**common, text=self.text)
            case "escalate":
                return Escalate(**common, reason=self.reason)

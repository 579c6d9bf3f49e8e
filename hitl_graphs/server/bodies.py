"""What the HTTP API reads and writes, as pydantic models (its OpenAPI schema comes from these)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from hitl_graphs.decisions import Approve, Decision, Escalate, Modify, Reject, Respond



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


class _DecisionBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    review_id: str = Field(min_length=1, description="The review the person saw (required: a decision names it).")
    comment: str | None = Field(default=None, description="A note kept in the history.")
    seen: str | None = Field(default=None, description="The payload hash shown; refused (409) if the review changed since.")


class ApproveBody(_DecisionBody):
    kind: Literal["approve"]
    verify: str | None = Field(default=None, description="The phrase a verify-level review asks for.")

    def decision(self, actor: str) -> Decision:
        return Approve(actor=actor, comment=self.comment, seen=self.seen, verification=self.verify)


class ModifyBody(_DecisionBody):
    kind: Literal["modify"]
    patch: dict[str, Any] = Field(min_length=1, description="The fields to change and their new values.")
    verify: str | None = Field(default=None, description="The phrase a verify-level review asks for.")

    def decision(self, actor: str) -> Decision:
        return Modify(actor=actor, comment=self.comment, seen=self.seen, patch=self.patch, verification=self.verify)


class RejectBody(_DecisionBody):
    kind: Literal["reject"]
    reason: str | None = Field(default=None, description="Why; the workflow may show it to the model.")

    def decision(self, actor: str) -> Decision:
        return Reject(actor=actor, comment=self.comment, seen=self.seen, reason=self.reason)


class RespondBody(_DecisionBody):
    kind: Literal["respond"]
    text: str = Field(min_length=1, description="The reply, in free text.")

    def decision(self, actor: str) -> Decision:
        return Respond(actor=actor, comment=self.comment, seen=self.seen, text=self.text)


class EscalateBody(_DecisionBody):
    kind: Literal["escalate"]
    reason: str | None = Field(default=None, description="Why it goes up a level.")

    def decision(self, actor: str) -> Decision:
        return Escalate(actor=actor, comment=self.comment, seen=self.seen, reason=self.reason)


DecisionBody = Annotated[ApproveBody | ModifyBody | RejectBody | RespondBody | EscalateBody, Field(discriminator="kind")]
"""A person's decision on the review they saw, one shape per kind (the schema says exactly which
fields each takes). Who decides, and with which roles, comes from the token."""

DECISION_BODY: TypeAdapter[ApproveBody | ModifyBody | RejectBody | RespondBody | EscalateBody] = TypeAdapter(DecisionBody)
"""Reads a `DecisionBody` from a mapping (the web inbox's forms)."""

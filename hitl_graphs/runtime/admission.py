"""Admission: the pure checks of a decision against the review it answers, before anything is written.

Roles, separation of duties, what the person saw (`seen`), the kinds the review allows, the
verification phrase and the patch. No database: testable on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hitl_graphs.decisions import (
    Approve,
    Decision,
    Modify,
)
from hitl_graphs.errors import (
    InvalidDecisionError,
    PermissionDeniedError,
    StaleReviewError,
)
from hitl_graphs.gate import to_json
from hitl_graphs.patches import validate_patch, validate_payload_patch
from hitl_graphs.review_refs import review_ref
from hitl_graphs.reviews import ReviewRequest
from hitl_graphs.runtime.driver import Graph

def replaced_values(decision: Decision, request: ReviewRequest, values: Any) -> dict[str, Any] | None:
    """For the audit log: the values a `Modify` replaces, next to the new ones in its patch."""
    if not isinstance(decision, Modify):
        return None
    source = request.payload if request.patch_target == "payload" else values
    source = source if isinstance(source, dict) else {}
    return {"original": {k: to_json(source.get(k)) for k in decision.patch}}


def admit(
    decision: Decision, request: ReviewRequest, graph: Graph, *, roles: Sequence[str] = (), started_by: str | None = None
) -> Decision:
    """Refuse a decision the review does not allow; return it with its patch validated."""
    if request.required_role is not None and request.required_role not in roles:
        who = f"actor {decision.actor!r}" if decision.actor else "the actor"
        raise PermissionDeniedError(
            f"review {review_ref(request)!r} requires role {request.required_role!r}; {who} has roles: {', '.join(roles) or 'none'}"
        )
    if request.separation_of_duties:
        if decision.actor is None:
            raise PermissionDeniedError(f"review {review_ref(request)!r} needs a named actor (separation of duties)")
        if decision.actor == started_by:
            raise PermissionDeniedError(
                f"actor {decision.actor!r} started thread {request.thread_id!r} and may not decide its review "
                f"{review_ref(request)!r} (separation of duties)"
            )
    if decision.seen is not None and decision.seen != request.payload_hash:
        raise StaleReviewError(
            f"review {review_ref(request)!r} changed since you saw it (payload hash {decision.seen[:12]} is now "
            f"{request.payload_hash[:12]}); look again (`hitl show {request.thread_id}`)"
        )
    if decision.kind not in request.allowed:
        raise InvalidDecisionError(
            f"review {review_ref(request)!r} does not allow {decision.kind!r}; allowed: {', '.join(request.allowed)}"
        )
    if request.verify_phrase is not None and isinstance(decision, Approve | Modify):
        if decision.verification != request.verify_phrase:
            raise InvalidDecisionError(
                f"review {review_ref(request)!r} needs the verification phrase {request.verify_phrase!r} typed exactly; "
                f"got {decision.verification!r}"
            )
    if isinstance(decision, Modify):
        if request.patch_target == "payload":
            return decision.model_copy(update={"patch": validate_payload_patch(decision.patch, request)})
        schema = getattr(getattr(graph, "builder", None), "state_schema", None)
        patch = validate_patch(decision.patch, editable=request.editable, state_schema=schema)
        return decision.model_copy(update={"patch": to_json(patch)})
    return decision



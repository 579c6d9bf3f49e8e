"""A person's answer to a review: `Approve`, `Modify` or `Reject`, a closed typed union.

Decisions are parsed with one `TypeAdapter` over a discriminated union, so an unknown `kind`
fails closed instead of falling through to "approve" (the bug in Haystack's first HITL design,
where any unrecognised word confirmed the tool call).

Example:
    >>> from hitl_graphs import Modify, parse_decision
    >>> parse_decision({"kind": "modify", "patch": {"plan": ["a", "b"]}, "actor": "ana"})
    Modify(actor='ana', comment=None, kind='modify', patch={'plan': ['a', 'b']})
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from hitl_graphs.errors import InvalidDecisionError

DecisionKind: TypeAlias = Literal["approve", "modify", "reject"]
ALL_KINDS: tuple[DecisionKind, ...] = ("approve", "modify", "reject")


class _DecisionBase(BaseModel):
    """Fields every decision carries: who decided and what they said about it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str | None = None
    """Who decided. Recorded as given: it is not an identity check unless the caller verifies it."""
    comment: str | None = None
    """A free-text note for the history."""


class Approve(_DecisionBase):
    """Go ahead with what the review showed, unchanged.

    Example:
        >>> Approve(actor="ana").kind
        'approve'
    """

    kind: Literal["approve"] = "approve"


class Modify(_DecisionBase):
    """Go ahead with the reviewed values replaced by `patch` (field name -> new value).

    The patch is validated against the review's editable fields and the graph's state types
    before anything is written, and is applied as a LangGraph state update (through each
    field's reducer, as `update_state` does).

    Example:
        >>> Modify(patch={"plan": ["check the logs"]}).patch
        {'plan': ['check the logs']}
    """

    kind: Literal["modify"] = "modify"
    patch: dict[str, Any]

    @field_validator("patch")
    @classmethod
    def _not_empty(cls, patch: dict[str, Any]) -> dict[str, Any]:
        if not patch:
            raise ValueError("a modify decision needs at least one field in its patch")
        return patch


class Reject(_DecisionBase):
    """Do not go ahead. The workflow's rejection route runs, or the thread ends as rejected.

    Example:
        >>> Reject(reason="wrong customer").reason
        'wrong customer'
    """

    kind: Literal["reject"] = "reject"
    reason: str | None = None


Decision: TypeAlias = Annotated[Approve | Modify | Reject, Field(discriminator="kind")]
"""Any one decision, discriminated by its `kind`."""

_ADAPTER: TypeAdapter[Approve | Modify | Reject] = TypeAdapter(Decision)


def parse_decision(value: Approve | Modify | Reject | Mapping[str, Any] | str) -> Decision:
    """Turn a decision object, a dict or a JSON string into a validated `Decision`.

    Raises:
        InvalidDecisionError: the value is not a well-formed decision; the message names why.

    Example:
        >>> parse_decision('{"kind": "reject", "reason": "no"}').reason
        'no'
    """
    if isinstance(value, Approve | Modify | Reject):
        return value
    try:
        if isinstance(value, str):
            return _ADAPTER.validate_json(value)
        return _ADAPTER.validate_python(dict(value))
    except ValidationError as exc:
        raise InvalidDecisionError(f"not a valid decision: {_first_error(exc)}") from None
    except (TypeError, ValueError) as exc:
        raise InvalidDecisionError(f"not a valid decision: {exc}") from None


def decision_to_json(decision: Decision) -> dict[str, Any]:
    """The decision as JSON-native data (what checkpoints and the ledger store)."""
    data: dict[str, Any] = json.loads(decision.model_dump_json())
    return data


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    if err["type"] == "union_tag_invalid":
        return f"kind must be one of {', '.join(ALL_KINDS)}, got {err['input'].get('kind')!r}"
    if err["type"] == "union_tag_not_found":
        return f"missing 'kind' (one of {', '.join(ALL_KINDS)})"
    return f"{where}: {err['msg']}" if where else err["msg"]

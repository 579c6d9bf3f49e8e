"""A person's answer to a review: `Approve`, `Modify`, `Reject`, `Respond` or `Escalate`.

A closed typed union; each review says which kinds it accepts (`approve`, `modify`, `reject` by
default).

Decisions are parsed with one `TypeAdapter` over a discriminated union, so an unknown `kind`
fails closed instead of falling through to "approve" (the bug in Haystack's first HITL design,
where any unrecognised word confirmed the tool call).

Example:
    >>> from hitl_graphs import Modify, parse_decision
    >>> parse_decision({"kind": "modify", "patch": {"plan": ["a", "b"]}, "actor": "ana"})
    Modify(actor='ana', comment=None, seen=None, kind='modify', patch={'plan': ['a', 'b']}, verification=None)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
import warnings
from typing import Annotated, Any, Literal, Never, TypeAlias

from typing_extensions import Required, TypedDict

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from hitl_graphs.errors import InvalidDecisionError, PatchError

DecisionKind: TypeAlias = Literal["approve", "modify", "reject", "respond", "escalate"]
DEFAULT_KINDS: tuple[DecisionKind, ...] = ("approve", "modify", "reject")
"""What a review allows unless it says otherwise; `respond` and `escalate` are opted into."""
ALL_KINDS = DEFAULT_KINDS
"""The old name of `DEFAULT_KINDS` (it never held all five kinds); kept for existing imports."""


MAX_DEPTH = 100
"""How deeply a decision's values may nest (a patch of real edits stays far below)."""


def check_json_safe(value: Any, *, what: str = "value") -> None:
    """Refuse what cannot be stored as JSON text or would exhaust the stack later: nesting deeper
    than `MAX_DEPTH`, and strings that are not valid Unicode (a lone surrogate). Iterative, so a
    20,000-deep value is refused in one line instead of a `RecursionError`.

    Raises:
        PatchError: naming the problem and where it is.
    """
    todo: list[tuple[Any, str, int]] = [(value, what, 0)]
    while todo:
        item, where, depth = todo.pop()
        if depth > MAX_DEPTH:
            raise PatchError(f"{what} is nested deeper than {MAX_DEPTH} levels (at {where[:80]}...); send a flatter value")
        if isinstance(item, str):
            _check_text(item, where)
        elif isinstance(item, Mapping):
            for key, sub in item.items():
                if isinstance(key, str):
                    _check_text(key, where)
                todo.append((sub, f"{where}.{key}" if depth < 8 else where, depth + 1))
        elif isinstance(item, list | tuple):
            todo.extend((sub, f"{where}[{i}]" if depth < 8 else where, depth + 1) for i, sub in enumerate(item))


def _check_text(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PatchError(
            f"{where} holds text that is not valid Unicode ({exc.reason} at position {exc.start}); "
            "send UTF-8 text"
        ) from None


class _DecisionBase(BaseModel):
    """Fields every decision carries: who decided and what they said about it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _json_safe(cls, data: Any) -> Any:
        # before pydantic looks: a too-deep or non-Unicode value must be refused in one line,
        # with our error (not a ValidationError), whichever way the decision was built
        if isinstance(data, Mapping):
            for name, value in data.items():
                check_json_safe(value, what=str(name))
        return data

    actor: str | None = None
    """Who decided. Recorded as given: it is not an identity check unless the caller verifies it."""
    comment: str | None = None
    """A free-text note for the history."""
    seen: str | None = None
    """`payload_hash` of the review as the person saw it: if the pending action changed since,
    the decision is refused and the person must look again."""


def _given(**values: Any) -> dict[str, Any]:
    """The keyword arguments a caller gave (None: not given), so unset fields stay unset."""
    return {k: v for k, v in values.items() if v is not None}


def _once(model: str, field: str, positional: Any, keyword: Any) -> Any:
    if positional is not None and keyword is not None:
        raise TypeError(f"{model} got its {field} twice; pass it once: {model}({field}=...) or {model}(...)")
    return positional if positional is not None else keyword


class Approve(_DecisionBase):
    """Go ahead with what the review showed, unchanged.

    Example:
        >>> Approve(actor="ana").kind
        'approve'
    """

    kind: Literal["approve"] = "approve"
    verification: str | None = None
    """The phrase a `verify`-level review asks the person to type (e.g. `DELETE r-42`)."""

    def __init__(
        self,
        *,
        actor: str | None = None,
        comment: str | None = None,
        seen: str | None = None,
        verification: str | None = None,
        kind: Literal["approve"] = "approve",
        **extra: Never,  # none is allowed: passed on, so pydantic names an unknown field as it always did
    ) -> None:
        super().__init__(**_given(actor=actor, comment=comment, seen=seen, verification=verification, kind=kind), **extra)


class Modify(_DecisionBase):
    """Go ahead with the reviewed values replaced by `patch` (field name -> new value).

    The patch is validated against the review's editable fields and the graph's state types
    before anything is written, and is applied as a LangGraph state update (through each
    field's reducer, as `update_state` does).

    The patch may come first, without its name: `Modify({"plan": [...]})`. Of a review of
    tool arguments (a `payload` patch), an object value is merged over the one shown, so
    `Modify({"args": {"amount": 900}})` changes one argument and keeps the others.

    Example:
        >>> Modify(patch={"plan": ["check the logs"]}).patch
        {'plan': ['check the logs']}
        >>> Modify({"plan": ["check the logs"]}, actor="ana") == Modify(patch={"plan": ["check the logs"]}, actor="ana")
        True
    """

    kind: Literal["modify"] = "modify"
    patch: dict[str, Any]
    verification: str | None = None
    """The phrase a `verify`-level review asks the person to type."""

    def __init__(
        self,
        patch_: Mapping[str, Any] | None = None,
        /,
        *,
        patch: Mapping[str, Any] | None = None,
        actor: str | None = None,
        comment: str | None = None,
        seen: str | None = None,
        verification: str | None = None,
        kind: Literal["modify"] = "modify",
        **extra: Never,
    ) -> None:
        given = _once("Modify", "patch", patch_, patch)
        fields = _given(actor=actor, comment=comment, seen=seen, verification=verification, kind=kind)
        super().__init__(**fields, **({} if given is None else {"patch": given}), **extra)

    @field_validator("patch")
    @classmethod
    def _not_empty(cls, patch: dict[str, Any]) -> dict[str, Any]:
        if not patch:
            raise ValueError("a modify decision needs at least one field in its patch")
        return patch


class Reject(_DecisionBase):
    """Do not go ahead. The workflow's rejection route runs, or the thread ends as rejected.

    The reason may come first, without its name: `Reject("wrong customer")`.

    Example:
        >>> Reject(reason="wrong customer").reason
        'wrong customer'
        >>> Reject("wrong customer") == Reject(reason="wrong customer")
        True
    """

    kind: Literal["reject"] = "reject"
    reason: str | None = None

    def __init__(
        self,
        reason_: str | None = None,
        /,
        *,
        reason: str | None = None,
        actor: str | None = None,
        comment: str | None = None,
        seen: str | None = None,
        kind: Literal["reject"] = "reject",
        **extra: Never,
    ) -> None:
        reason = _once("Reject", "reason", reason_, reason)
        super().__init__(**_given(reason=reason, actor=actor, comment=comment, seen=seen, kind=kind), **extra)


class Respond(_DecisionBase):
    """Answer in free text: a reply in a conversation, or redirecting the agent mid-task.

    Example:
        >>> Respond(text="use the staging database instead").kind
        'respond'
        >>> Respond("use the staging database instead").text
        'use the staging database instead'
    """

    kind: Literal["respond"] = "respond"
    text: str

    def __init__(
        self,
        text_: str | None = None,
        /,
        *,
        text: str | None = None,
        actor: str | None = None,
        comment: str | None = None,
        seen: str | None = None,
        kind: Literal["respond"] = "respond",
        **extra: Never,
    ) -> None:
        text = _once("Respond", "text", text_, text)
        super().__init__(**_given(text=text, actor=actor, comment=comment, seen=seen, kind=kind), **extra)


class Escalate(_DecisionBase):
    """Hand the case one level up (e.g. from a human reviewer to a manager).

    Example:
        >>> Escalate(reason="over my limit").kind
        'escalate'
        >>> Escalate("over my limit").reason
        'over my limit'
    """

    kind: Literal["escalate"] = "escalate"
    reason: str | None = None

    def __init__(
        self,
        reason_: str | None = None,
        /,
        *,
        reason: str | None = None,
        actor: str | None = None,
        comment: str | None = None,
        seen: str | None = None,
        kind: Literal["escalate"] = "escalate",
        **extra: Never,
    ) -> None:
        reason = _once("Escalate", "reason", reason_, reason)
        super().__init__(**_given(reason=reason, actor=actor, comment=comment, seen=seen, kind=kind), **extra)


Decision: TypeAlias = Annotated[Approve | Modify | Reject | Respond | Escalate, Field(discriminator="kind")]
"""Any one decision, discriminated by its `kind`."""

class DecisionDict(TypedDict, total=False):
    """What a plain `interrupt()` of yours returns when the runner resumes it: the decision as
    JSON, unset fields left out. `kind` says which; `parse_decision(value)` gives the typed model.

    Example::

        def ask(state):
            answer: DecisionDict = interrupt({"question": "ship it?"})
            match parse_decision(answer):
                case Approve():
                    return {"shipped": True}
                case Modify(patch=patch):      # already written to the state by the runner
                    return {"shipped": True}
                case Reject(reason=reason):
                    return {"shipped": False, "why": reason}
    """

    kind: Required[DecisionKind]
    actor: str
    comment: str
    seen: str
    patch: dict[str, Any]
    """`modify`: the validated patch (already applied to the state for a plain `interrupt()`)."""
    reason: str
    """`reject` and `escalate`."""
    text: str
    """`respond`."""
    verification: str


_ADAPTER: TypeAdapter[Approve | Modify | Reject | Respond | Escalate] = TypeAdapter(Decision)
_KINDS_TEXT = "approve, modify, reject, respond, escalate"


def parse_decision(
    value: Approve | Modify | Reject | Respond | Escalate | DecisionDict | Mapping[str, Any] | str,
) -> Decision:
    """Turn a decision object, a dict or a JSON string into a validated `Decision`.

    Raises:
        InvalidDecisionError: the value is not a well-formed decision; the message names why.

    Example:
        >>> parse_decision('{"kind": "reject", "reason": "no"}').reason
        'no'
    """
    if isinstance(value, Approve | Modify | Reject | Respond | Escalate):
        return value
    if not isinstance(value, str | Mapping):
        raise InvalidDecisionError(f"not a valid decision: {_what(value)} is not a decision; {_FIX}")
    try:
        if isinstance(value, str):
            return _ADAPTER.validate_json(value)
        return _ADAPTER.validate_python(dict(value))
    except ValidationError as exc:
        if isinstance(value, str) and value.strip().lower() in _EXAMPLES:
            word = value.strip().lower()
            raise InvalidDecisionError(
                f"not a valid decision: {value!r} is not JSON; write '{{\"kind\": \"{word}\"}}', or pass {_EXAMPLES[word]}"
            ) from None
        raise InvalidDecisionError(f"not a valid decision: {_first_error(exc)}") from None
    except (TypeError, ValueError) as exc:
        raise InvalidDecisionError(f"not a valid decision: {exc}") from None


def decision_from(value: object, *, stacklevel: int = 2) -> Decision:
    """What `Runner.resume` makes of its `decision` argument: a decision object, or its dict form.

    A person's answer is a typed object (`Approve()`, `Modify(patch={...})`, `Reject(reason=...)`,
    ...), so what looks like an answer but is not one is refused with the fix named: the word
    `"approve"`, the class `Approve` instead of `Approve()`, `True`. A JSON string still works,
    with a `DeprecationWarning`: reading JSON is the caller's step (`parse_decision(text)`, as the
    CLI does), and a later version will refuse it.

    Raises:
        InvalidDecisionError: naming what to pass instead.

    Example:
        >>> decision_from({"kind": "reject", "reason": "no"})
        Reject(actor=None, comment=None, seen=None, kind='reject', reason='no')
        >>> decision_from("approve")
        Traceback (most recent call last):
        ...
        hitl_graphs.errors.InvalidDecisionError: resume() takes a decision, not the text 'approve': pass Approve()
    """
    if isinstance(value, Approve | Modify | Reject | Respond | Escalate):
        return value
    if isinstance(value, type) and issubclass(value, _DecisionBase):
        kind = str(value.model_fields["kind"].default)
        raise InvalidDecisionError(f"resume() takes a decision, not the class {value.__name__}: pass {_EXAMPLES[kind]}")
    if isinstance(value, bool):
        fix = "Approve() to approve" if value else 'Reject(reason="...") to reject'
        raise InvalidDecisionError(f"resume() takes a decision, not {value}: pass {fix}")
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _EXAMPLES:
            raise InvalidDecisionError(f"resume() takes a decision, not the text {value!r}: pass {_EXAMPLES[word]}")
        if not value.lstrip().startswith("{"):
            raise InvalidDecisionError(
                f"resume() takes a decision, not the text {_short(repr(value))}: {_FIX}; parse_decision(text) reads a JSON decision"
            )
        warnings.warn(
            "passing a JSON string as the decision to resume() is deprecated and will be refused; "
            "pass parse_decision(text), or the model itself (Approve(), Modify(patch={...}), Reject(reason=...))",
            DeprecationWarning,
            stacklevel=stacklevel + 1,
        )
        return parse_decision(value)
    if isinstance(value, Mapping):
        return parse_decision(value)
    raise InvalidDecisionError(f"resume() takes a decision, not {_what(value)}: {_FIX}")


_EXAMPLES: dict[str, str] = {
    "approve": "Approve()",
    "modify": "Modify(patch={...})",
    "reject": 'Reject(reason="...")',
    "respond": 'Respond(text="...")',
    "escalate": 'Escalate(reason="...")',
}
_FIX = "pass " + ", ".join(_EXAMPLES.values()) + " (or its dict form, {'kind': 'approve', ...})"


def _what(value: object) -> str:
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name} ({_short(repr(value))})"


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:40] + "..."


def decision_to_json(decision: Decision) -> DecisionDict:
    """The decision as JSON-native data, unset fields left out (what checkpoints and the ledger
    store, and what a plain `interrupt()` returns on resume)."""
    data: DecisionDict = json.loads(decision.model_dump_json(exclude_none=True))
    return data


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    if err["type"] == "union_tag_invalid":
        return f"kind must be one of {_KINDS_TEXT}, got {err['input'].get('kind')!r}"
    if err["type"] == "union_tag_not_found":
        return f"missing 'kind' (one of {_KINDS_TEXT})"
    return f"{where}: {err['msg']}" if where else err["msg"]

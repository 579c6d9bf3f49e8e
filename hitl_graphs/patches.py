"""Validate a `Modify` patch before anything is written.

A patch may only name fields the review lets the person edit, and each value must have the type
the graph's state schema declares. LangGraph's `update_state` checks neither: a wrong type is
saved and can break the next node, or leave the thread unreadable.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from hitl_graphs.errors import PatchError


def state_fields(state_schema: type) -> dict[str, Any]:
    """Field name -> declared type of a graph state schema (TypedDict, dataclass or pydantic)."""
    return typing.get_type_hints(state_schema, include_extras=True)


def validate_patch(
    patch: Mapping[str, Any],
    *,
    editable: Sequence[str],
    state_schema: type | None,
) -> dict[str, Any]:
    """Check a patch and return it with values in their validated form.

    Raises:
        PatchError: naming the first bad field: unknown, not editable, or of the wrong type.

    Example:
        >>> from typing import TypedDict
        >>> class S(TypedDict):
        ...     plan: list[str]
        >>> validate_patch({"plan": ["a"]}, editable=["plan"], state_schema=S)
        {'plan': ['a']}
    """
    fields = state_fields(state_schema) if state_schema is not None else {n: Any for n in editable}
    clean: dict[str, Any] = {}
    for name, value in patch.items():
        if name not in fields:
            known = ", ".join(sorted(fields)) or "none"
            raise PatchError(f"unknown field {name!r} in patch; the state has: {known}")
        if name not in editable:
            allowed = ", ".join(editable) or "none"
            raise PatchError(f"field {name!r} may not be changed in this review; editable fields: {allowed}")
        adapter = _adapter(fields[name])
        try:
            clean[name] = adapter.validate_json(json.dumps(value), strict=True)
        except (TypeError, ValueError) as exc:
            if isinstance(exc, ValidationError):
                detail = _describe(exc)
            else:
                detail = str(exc)
            raise PatchError(
                f"field {name!r} expects {type_name(fields[name])}, got {_short(value)}: {detail}"
            ) from None
    return clean


def validate_payload_patch(patch: Mapping[str, Any], request: Any) -> dict[str, Any]:
    """Check a patch to what the review shows (e.g. tool arguments) against its JSON Schema.

    The patch names top-level fields of the payload (a tool review may show
    `{"name": ..., "args": {...}}` with `editable=("args",)`); fields not named keep their values,
    and the payload with the patch merged in must satisfy `request.patch_schema`.

    Raises:
        PatchError: a field is not editable or the merged value breaks the schema.
    """
    import jsonschema

    for name in patch:
        if name not in request.editable:
            allowed = ", ".join(request.editable) or "none"
            raise PatchError(f"field {name!r} may not be changed in this review; editable fields: {allowed}")
    if request.patch_schema is None:
        return dict(patch)
    base = request.payload if isinstance(request.payload, dict) else {}
    merged = {**base, **patch}
    validator = jsonschema.Draft202012Validator(request.patch_schema)
    for err in sorted(validator.iter_errors(merged), key=lambda e: list(e.path)):
        where = ".".join(str(p) for p in err.path) or next(iter(patch))
        expected = _schema_type(err)
        raise PatchError(f"field {where!r} {f'expects {expected}: ' if expected else ''}{err.message}")
    return dict(patch)


def _schema_type(err: Any) -> str | None:
    if err.validator != "type":
        return None
    kind = err.validator_value
    return " | ".join(kind) if isinstance(kind, list) else str(kind)


def type_name(tp: Any) -> str:
    """A readable name for a type hint: `list[str]`, `int | None`, `Annotated` stripped."""
    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return str(tp).replace("typing.", "")


@lru_cache(maxsize=256)
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def _describe(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = "".join(f"[{p!r}]" for p in err["loc"])
    return f"{where} {err['msg']}".strip() if where else err["msg"]


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    kind = type(value).__name__
    return f"{kind} {text[:60]}{'...' if len(text) > 60 else ''}"

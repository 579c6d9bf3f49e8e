"""Validate a `Modify` patch before anything is written.

A patch may only name fields the review lets the person edit, and each value must have the type
the graph's state schema declares. LangGraph's `update_state` checks neither: a wrong type is
saved and can break the next node, or leave the thread unreadable.

A value of the right type can still be one the node cannot use (`{}` where a node reads
`action` and `target`; an account id the tool's own validator refuses). Recorded, such a decision
is spent, and the node fails after it. So what the node needs is checked too, in the deciding
process, before the decision is recorded (`check_needs`), from two declarations:

- `Workflow(patch_model=Model)`: a pydantic model of the state a workflow's nodes need after a
  person's edit. The state with the patch applied must validate against it; static breakpoints
  and plain `interrupt()` calls, whose state types are often loose, are what it is for.
- A node's metadata under `PATCH_CHECK`: a `PatchCheck` for the reviews that node raises (the
  tool-approval template checks edited arguments with each tool's own model this way).
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Protocol

import typing_extensions
from pydantic import BaseModel, TypeAdapter, ValidationError

from hitl_graphs.errors import PatchError
from hitl_graphs.reviews import ReviewRequest

PATCH_CHECK = "hitl_patch_check"
"""The node metadata key of a `PatchCheck`: `graph.add_node(name, fn, metadata={PATCH_CHECK: check})`."""


class PatchCheck(Protocol):
    """What a node needs of a `Modify` patch to a review it raised, beyond the review's `editable`
    fields and schema. Called in the deciding process before the decision is recorded, with the
    patch already checked for fields and types; raise `PatchError` to refuse it (nothing is written).
    """

    def __call__(self, request: ReviewRequest, patch: Mapping[str, Any], /) -> None: ...


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
    """Check a patch to what the review shows (e.g. tool arguments) against its JSON Schema, and
    return it merged over what was shown.

    The patch names top-level fields of the payload (a tool review may show
    `{"name": ..., "args": {...}}` with `editable=("args",)`); fields not named keep their values.
    An object given for a field that shows an object is merged over it, one level deep: a person
    edits the one tool argument they mean (`{"args": {"amount": 900}}`) and the others keep
    theirs; an argument they name is replaced whole. The payload with the merged patch must
    satisfy `request.patch_schema`, and the merged patch is what is recorded and handed to the
    node (so the node's own checks, e.g. the tool's argument model, see every argument).

    Raises:
        PatchError: a field is not editable or the merged value breaks the schema.

    Example:
        >>> from types import SimpleNamespace
        >>> shown = SimpleNamespace(editable=("args",), patch_schema=None,
        ...                         payload={"tool": "pay", "args": {"to": "acme", "amount": 5000}})
        >>> validate_payload_patch({"args": {"amount": 900}}, shown)
        {'args': {'to': 'acme', 'amount': 900}}
    """
    import jsonschema

    for name in patch:
        if name not in request.editable:
            allowed = ", ".join(request.editable) or "none"
            raise PatchError(f"field {name!r} may not be changed in this review; editable fields: {allowed}")
    base = request.payload if isinstance(request.payload, dict) else {}
    merged_patch = {
        name: {**base[name], **value} if isinstance(value, Mapping) and isinstance(base.get(name), dict) else value
        for name, value in patch.items()
    }
    if request.patch_schema is None:
        return merged_patch
    merged = {**base, **merged_patch}
    validator = jsonschema.Draft202012Validator(request.patch_schema)
    for err in sorted(validator.iter_errors(merged), key=lambda e: list(e.path)):
        where = ".".join(str(p) for p in err.path) or next(iter(patch))
        expected = _schema_type(err)
        raise PatchError(f"field {where!r} {f'expects {expected}: ' if expected else ''}{err.message}")
    return merged_patch


def check_needs(
    patch: Mapping[str, Any], request: ReviewRequest, *, graph: Any, model: type[BaseModel] | None, values: Any
) -> None:
    """Refuse a patch the node cannot use: see the module docs. `values` is the thread's state
    (needed when `model` is given and the patch edits the state); `graph` the compiled graph.

    Raises:
        PatchError: naming the field and what it must be.
    """
    if model is not None and request.patch_target == "state":
        validate_against_model(model, patch, values)
    builder = getattr(graph, "builder", None)
    spec = getattr(builder, "nodes", {}).get(request.node)
    check: PatchCheck | None = (getattr(spec, "metadata", None) or {}).get(PATCH_CHECK)
    if check is not None:
        check(request, patch)


def validate_against_model(model: type[BaseModel], patch: Mapping[str, Any], values: Any) -> None:
    """Check that the state a patch leaves validates against `model`.

    The model's fields are state keys; the patch gives the values it names and the current state
    the others, so a model can require a key the patch does not touch, or relate two fields.

    Raises:
        PatchError: naming the first field (or the rule) the patched state breaks.

    Example:
        >>> from pydantic import BaseModel, Field
        >>> class Needs(BaseModel):
        ...     amount: int = Field(gt=0)
        >>> validate_against_model(Needs, {"amount": 5}, {"amount": 1})
        >>> validate_against_model(Needs, {"amount": 0}, {"amount": 1})
        Traceback (most recent call last):
        ...
        hitl_graphs.errors.PatchError: field 'amount' Input should be greater than 0, as the workflow's patch model Needs requires; change the patch
    """
    current = values if isinstance(values, Mapping) else {}
    names = model.model_fields
    patched = {name: current[name] for name in names if name in current}
    patched.update({name: value for name, value in patch.items() if name in names})
    try:
        model.model_validate(patched)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        what = f"field {where!r} {message}" if where else message
        raise PatchError(f"{what}, as the workflow's patch model {model.__name__} requires; change the patch") from None


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


class _Probe(typing_extensions.TypedDict):
    pass


_EXTENSIONS_TYPEDDICT = type(_Probe)


@lru_cache(maxsize=256)
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(_for_pydantic(tp))


def typed_adapter(tp: Any) -> TypeAdapter[Any]:
    """A pydantic `TypeAdapter` for the type hint `tp` (cached), taking the `typing.TypedDict`s that
    pydantic refuses on Python 3.11 (rebuilt as below); `ReviewRequest.payload_as` validates with it."""
    return _adapter(tp)


def _for_pydantic(tp: Any) -> Any:
    """`tp` with every `typing.TypedDict` in it rebuilt as a `typing_extensions.TypedDict`.

    LangGraph's docs write state with `typing.TypedDict`; on Python < 3.12 pydantic refuses to
    validate one nested in a field ("use typing_extensions.TypedDict"), which would leave such
    fields unchecked. The rebuilt class has the same keys, types and required keys.
    """
    if typing.is_typeddict(tp) and type(tp) is not _EXTENSIONS_TYPEDDICT:
        hints = typing.get_type_hints(tp, include_extras=True)
        required = getattr(tp, "__required_keys__", frozenset(hints))
        fields = {k: (typing_extensions.Required if k in required else typing_extensions.NotRequired)[_for_pydantic(v)]
                  for k, v in hints.items()}
        return typing_extensions.TypedDict(tp.__name__, fields)  # type: ignore[operator]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is None or not args:
        return tp
    mapped = tuple(_for_pydantic(a) if not isinstance(a, (str, int, float, bool, bytes)) and a is not ... else a
                   for a in args)
    if mapped == args:
        return tp
    if origin is typing.Annotated:
        return typing.Annotated[mapped[0], *mapped[1:]]
    if origin in (typing.Union, types.UnionType):
        return typing.Union[mapped]  # noqa: UP007
    try:
        return origin[mapped] if len(mapped) > 1 else origin[mapped[0]]
    except TypeError:
        return tp


def _describe(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = "".join(f"[{p!r}]" for p in err["loc"])
    return f"{where} {err['msg']}".strip() if where else err["msg"]


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    kind = type(value).__name__
    return f"{kind} {text[:60]}{'...' if len(text) > 60 else ''}"

"""The modify form of a review: one input per editable field, and the patch read back from it.

Why the server builds and checks the form: a person should see an error next to the field they
typed, before anything is sent to the runner, and the same rules must hold for a browser without
JavaScript. Fields come from what the review declares: a payload patch (tool arguments) from its
`patch_schema` (JSON Schema: types, enums, bounds, patterns), a state patch from the type of the
field's current value (a list of text is a plan's numbered steps). Only `editable` fields appear.
The runner checks the patch again (`Runner.resume`): this is for the person, not the boundary.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from jsonschema.validators import validator_for
from starlette.datastructures import FormData

from hitl_graphs.reviews import ReviewRequest

Widget = Literal["text", "textarea", "integer", "number", "boolean", "choice", "steps", "json"]
GENERAL = "_form"
"""The error key of a problem that belongs to no single field."""


@dataclass(frozen=True, slots=True)
class Field:
    """One input of the modify form. `name` is the patch path (`amount`, `args.account`)."""

    name: str
    label: str
    widget: Widget
    value: Any
    required: bool = True
    choices: tuple[str, ...] = ()
    help: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def dom_id(self) -> str:
        return "f-" + re.sub(r"[^A-Za-z0-9_-]", "-", self.name)

    def shown(self) -> Any:
        """The value as the input shows it."""
        if self.widget == "json":
            return json.dumps(self.value, indent=2, ensure_ascii=False)
        if self.widget == "steps":
            return [str(s) for s in self.value] if isinstance(self.value, list) else []
        if self.widget == "boolean":
            return "true" if self.value else "false"
        return "" if self.value is None else str(self.value)


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    options = node.get("anyOf")
    if isinstance(options, list):  # Optional[X]: the non-null branch
        real = [o for o in options if isinstance(o, dict) and o.get("type") != "null"]
        if len(real) == 1:
            return {**_resolve(real[0], root), **{k: v for k, v in node.items() if k != "anyOf"}}
    return node


def _from_schema(name: str, node: dict[str, Any], value: Any, required: bool, root: dict[str, Any]) -> Field:
    node = _resolve(node, root)
    label, help_ = str(node.get("title") or name.rsplit(".", 1)[-1]), node.get("description")
    kind = node.get("type")
    attrs = {a: node[k] for k, a in (("minimum", "min"), ("maximum", "max"), ("minLength", "minlength"),
                                     ("maxLength", "maxlength"), ("pattern", "pattern")) if k in node}
    if isinstance(node.get("enum"), list):
        return Field(name, label, "choice", value, required, tuple(str(c) for c in node["enum"]), help_)
    widget: Widget
    if kind == "string":
        widget = "textarea" if isinstance(value, str) and ("\n" in value or len(value) > 80) else "text"
    elif kind in ("integer", "number", "boolean"):
        widget = kind
    else:
        widget = "json"
    return Field(name, label, widget, value, required, (), help_, attrs)


def _from_value(name: str, value: Any) -> Field:
    widget: Widget
    if isinstance(value, bool):
        widget = "boolean"
    elif isinstance(value, int):
        widget = "integer"
    elif isinstance(value, float):
        widget = "number"
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        widget = "steps"
    elif value is None or isinstance(value, str):
        widget = "textarea" if isinstance(value, str) and ("\n" in value or len(value) > 80) else "text"
    else:
        widget = "json"
    return Field(name, name.replace("_", " "), widget, value, required=value is not None)


def build_fields(review: ReviewRequest, state: dict[str, Any]) -> list[Field]:
    """The inputs of `review`'s modify form, with the values the person sees now."""
    if "modify" not in review.allowed or not review.editable:
        return []
    payload = review.payload if isinstance(review.payload, dict) else {}
    fields: list[Field] = []
    if review.patch_target == "payload" and review.patch_schema:
        root = review.patch_schema
        props = root.get("properties", {})
        for name in review.editable:
            node = _resolve(props.get(name, {}), root)
            value = payload.get(name)
            if node.get("type") == "object" and isinstance(node.get("properties"), dict):
                required = set(node.get("required", ()))
                current = value if isinstance(value, dict) else {}
                fields += [_from_schema(f"{name}.{sub}", subnode, current.get(sub), sub in required, root)
                           for sub, subnode in node["properties"].items()]
            else:
                fields.append(_from_schema(name, node, value, name in root.get("required", ()), root))
        return fields
    for name in review.editable:
        value = state[name] if name in state else payload.get(name)
        fields.append(_from_value(name, value))
    return fields


def _read(f: Field, form: FormData) -> tuple[Any, str | None]:
    """The field's value from the form, or why it cannot be read. `...` means left out."""
    if f.widget == "steps":
        steps = [str(s).strip() for s in form.getlist(f.name) if str(s).strip()]
        return (steps, None) if steps else (None, "a plan needs at least one step")
    raw = str(form.get(f.name, "")).replace("\r\n", "\n")
    if f.widget not in ("text", "textarea"):
        raw = raw.strip()
    if raw == "" and f.widget != "boolean":
        if f.value is None and not f.required:
            return ..., None
        if f.widget in ("text", "textarea") and not f.required:
            return "", None
        return None, "this field is required"
    match f.widget:
        case "integer":
            return (int(raw), None) if re.fullmatch(r"[+-]?\d+", raw) else (None, "must be a whole number")
        case "number":
            try:
                number = float(raw)
            except ValueError:
                return None, "must be a number"
            return (number, None) if math.isfinite(number) else (None, "must be a finite number")
        case "boolean":
            return (raw == "true", None) if raw in ("true", "false") else (None, "must be true or false")
        case "choice":
            return (raw, None) if raw in f.choices else (None, f"must be one of: {', '.join(f.choices)}")
        case "json":
            try:
                return json.loads(raw), None
            except json.JSONDecodeError as exc:
                return None, f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        case _:
            return raw, None


def field_for(message_or_path: str, fields: list[Field]) -> str:
    """The field a problem belongs to: the longest field name it starts with or quotes."""
    for f in sorted(fields, key=lambda f: -len(f.name)):
        if message_or_path == f.name or message_or_path.startswith(f.name + ".") or f"'{f.name}'" in message_or_path \
                or message_or_path.startswith(f.name + ":"):
            return f.name
    return GENERAL


def read_patch(review: ReviewRequest, fields: list[Field], form: FormData) -> tuple[dict[str, Any], dict[str, str]]:
    """The patch the form asks for, and the errors by field name (`GENERAL` for the form).

    A state patch holds the fields whose value changed; a payload patch holds every editable
    field (a tool is called with whole arguments) and is checked against `patch_schema`.
    """
    errors: dict[str, str] = {}
    values: dict[str, Any] = {}
    for f in fields:
        value, error = _read(f, form)
        if error:
            errors[f.name] = error
        elif value is not ...:
            values[f.name] = value
    if errors:
        return {}, errors
    patch: dict[str, Any] = {}
    if review.patch_target == "payload" and review.patch_schema:
        for name, value in values.items():
            top, _, sub = name.partition(".")
            if sub:
                patch.setdefault(top, {})[sub] = value
            else:
                patch[top] = value
        validator = validator_for(review.patch_schema)(review.patch_schema)
        for err in sorted(validator.iter_errors(patch), key=lambda e: list(e.absolute_path)):
            path = ".".join(str(p) for p in err.absolute_path)
            if err.validator == "required" and (missing := re.match(r"'([^']+)'", err.message)):
                path = f"{path}.{missing.group(1)}" if path else missing.group(1)
            errors.setdefault(field_for(path, fields), err.message)
        payload = review.payload if isinstance(review.payload, dict) else {}
        if not errors and all(payload.get(k) == v for k, v in patch.items()):
            errors[GENERAL] = "nothing changed: edit a field, or approve as it is"
        return patch, errors
    originals = {f.name: f.value for f in fields}
    patch = {k: v for k, v in values.items() if v != originals.get(k)}
    if not patch:
        errors[GENERAL] = "nothing changed: edit a field, or approve as it is"
    return patch, errors

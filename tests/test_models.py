"""Decisions, review requests and the public face: typed, frozen, JSON round trips, fail closed."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
from pydantic import ValidationError

import hitl_graphs
from hitl_graphs import (
    Approve,
    HistoryEntry,
    InvalidDecisionError,
    Modify,
    Reject,
    ReviewRequest,
    ThreadView,
    parse_decision,
)

REVIEW = ReviewRequest(
    review_id="r1", thread_id="t1", workflow="w", node="send", position="before", kind="gate",
    title="Send?", payload={"to": ["a@b.c"], "n": 1.5, "ok": None}, allowed=("approve", "reject"),
    editable=("to",), source="interrupt", created_at="2026-01-01T00:00:00Z",
)

MODELS = [
    Approve(actor="ana", comment="fine"),
    Modify(patch={"plan": ["a", "b"], "n": 3}, actor="bo"),
    Reject(reason="no", actor=None),
    REVIEW,
    ThreadView(thread_id="t1", workflow="w", status="paused", reviews=(REVIEW,), state={"x": [1]}),
    HistoryEntry(seq=1, thread_id="t1", event="decided", at="2026-01-01T00:00:00Z", data={"kind": "approve"}),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
def test_json_round_trip(model: object) -> None:
    cls = type(model)
    assert cls.model_validate_json(model.model_dump_json()) == model  # type: ignore[attr-defined]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
def test_models_are_frozen(model: object) -> None:
    field = next(iter(type(model).model_fields))  # type: ignore[attr-defined]
    with pytest.raises(ValidationError, match="frozen"):
        setattr(model, field, None)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"kind": "confirm"}, "kind must be one of approve, modify, reject, respond, escalate, got 'confirm'"),
        ({"actor": "ana"}, "missing 'kind'"),
        ({"kind": "modify"}, "modify.patch: Field required"),
        ({"kind": "modify", "patch": {}}, "at least one field"),
        ({"kind": "approve", "extra": 1}, "approve.extra: Extra inputs are not permitted"),
        ("not json", "not a valid decision"),
    ],
)
def test_unknown_or_malformed_decisions_fail_closed(raw: object, message: str) -> None:
    with pytest.raises(InvalidDecisionError, match=message):
        parse_decision(raw)  # type: ignore[arg-type]


def test_parse_accepts_objects_dicts_and_json() -> None:
    assert parse_decision(Approve()) == Approve()
    assert parse_decision({"kind": "reject", "reason": "x"}) == Reject(reason="x")
    assert parse_decision('{"kind": "modify", "patch": {"a": 1}}') == Modify(patch={"a": 1})


def test_public_names_are_sorted_and_importable() -> None:
    assert hitl_graphs.__all__ == sorted(hitl_graphs.__all__)
    for name in hitl_graphs.__all__:
        assert getattr(hitl_graphs, name) is not None


def _modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(hitl_graphs.__path__, "hitl_graphs.")]


@pytest.mark.parametrize("module", _modules())
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_public_functions_and_classes_show_an_example() -> None:
    import inspect
    import typing

    missing = []
    for name in hitl_graphs.__all__:
        obj = getattr(hitl_graphs, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if inspect.isclass(obj) and (
            (issubclass(obj, Exception) and obj is not hitl_graphs.HitlError)
            or typing.is_typeddict(obj)
            or getattr(obj, "_is_protocol", False)
        ):
            continue  # errors (see HitlError), state schemas and protocols are documented by their users
        doc = inspect.getdoc(obj) or ""
        if "Example" not in doc:
            missing.append(name)
    assert missing == []

"""Load checkpoints without running code the database names.

LangGraph's serializer stores a non-JSON value as "module, name, arguments" and, on load,
imports that module and calls that name. Whoever can write the database file (or a row of it)
can then make `hitl show` call `os.system`. `GuardedSerializer` reads every stored value's type
names first and refuses the whole value, with `UnsafeCheckpointError`, unless each type is on its
allowlist: LangGraph's and LangChain's own value types (messages, documents, `Send`,
`Interrupt`, ...), plain standard-library values (dates, UUIDs, decimals, sets, paths), and the
types a workflow's state schema names (the runner adds them when it compiles the workflow's
graph; `Workflow(serde_types=...)` adds more). Nothing is imported or called before the check.

Writing is LangGraph's `JsonPlusSerializer`, unchanged.

Example:
    >>> serde = GuardedSerializer()
    >>> serde.loads_typed(serde.dumps_typed({"when": __import__("datetime").date(2026, 1, 2)}))
    {'when': datetime.date(2026, 1, 2)}
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import threading
import typing
from collections.abc import Iterable
from typing import Any

import ormsgpack
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

from hitl_graphs.errors import UnsafeCheckpointError

# msgpack extension codes LangGraph's serializer writes (langgraph.checkpoint.serde.jsonplus)
_CONSTRUCTORS = (0, 1, 2)  # module, name, args: import and call
_METHOD = 3  # module, name, arg, method: import and call a method
_PYDANTIC = (4, 5)  # module, name, fields, ...: import and build a model
_NUMPY = 6  # dtype, shape, order, buffer: no import named by the data
_DELTA = 7  # a wrapped value, read again

SAFE_TYPES: frozenset[tuple[str, str]] = frozenset({
    ("datetime", "datetime"), ("datetime", "date"), ("datetime", "time"), ("datetime", "timedelta"),
    ("datetime", "timezone"), ("zoneinfo", "ZoneInfo"), ("uuid", "UUID"), ("decimal", "Decimal"),
    ("builtins", "set"), ("builtins", "frozenset"), ("collections", "deque"),
    ("ipaddress", "IPv4Address"), ("ipaddress", "IPv4Interface"), ("ipaddress", "IPv4Network"),
    ("ipaddress", "IPv6Address"), ("ipaddress", "IPv6Interface"), ("ipaddress", "IPv6Network"),
    ("pathlib", "Path"), ("pathlib", "PosixPath"), ("pathlib", "PurePosixPath"),
    ("pathlib._local", "Path"), ("pathlib._local", "PosixPath"),
    ("langchain_core.messages.base", "BaseMessage"), ("langchain_core.messages.base", "BaseMessageChunk"),
    ("langchain_core.messages.human", "HumanMessage"), ("langchain_core.messages.human", "HumanMessageChunk"),
    ("langchain_core.messages.ai", "AIMessage"), ("langchain_core.messages.ai", "AIMessageChunk"),
    ("langchain_core.messages.system", "SystemMessage"), ("langchain_core.messages.system", "SystemMessageChunk"),
    ("langchain_core.messages.chat", "ChatMessage"), ("langchain_core.messages.chat", "ChatMessageChunk"),
    ("langchain_core.messages.tool", "ToolMessage"), ("langchain_core.messages.tool", "ToolMessageChunk"),
    ("langchain_core.messages.function", "FunctionMessage"),
    ("langchain_core.messages.function", "FunctionMessageChunk"),
    ("langchain_core.messages.modifier", "RemoveMessage"),
    ("langchain_core.documents.base", "Document"),
    ("langgraph.types", "Send"), ("langgraph.types", "Interrupt"), ("langgraph.types", "Command"),
    ("langgraph.types", "Overwrite"), ("langgraph.types", "PregelTask"), ("langgraph.types", "StateSnapshot"),
})
"""Types any checkpoint may hold: LangGraph's and LangChain's value types and plain stdlib values."""

_SAFE_METHODS = frozenset({("datetime", "datetime", "fromisoformat"), ("datetime", "date", "fromisoformat"),
                           ("datetime", "time", "fromisoformat")})
# bytes that start a msgpack extension (ext 8/16/32, fixext 1..16): a blob without any has none.
# Looked for one byte value at a time (`bytes.__contains__` is a memchr): a regex character class
# scans a 1 MB state at ~60 MB/s, which made loading a large checkpoint cost more than LangGraph's
# decoding of it.
_EXT_MARKS = tuple(bytes([b]) for b in (0xC7, 0xC8, 0xC9, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8))


class GuardedSerializer(JsonPlusSerializer):
    """LangGraph's `JsonPlusSerializer` that checks every type name before loading a value.

    Args:
        allowed: `(module, name)` pairs or classes allowed besides `SAFE_TYPES`.
    """

    def __init__(self, allowed: Iterable[type | tuple[str, str]] = ()) -> None:
        try:
            # the check below is the gate; LangGraph's own allowlist (which only logs what it
            # blocks, and clones the serializer per graph) is told to let through what passed
            super().__init__(allowed_msgpack_modules=True)
        except TypeError:  # a langgraph-checkpoint from before allowlists
            super().__init__()
        self._allowed: set[tuple[str, str]] = set(SAFE_TYPES)
        self._lock = threading.Lock()
        self.allow(allowed)

    def allow(self, types: Iterable[type | tuple[str, str]]) -> None:
        """Allow more types to load (classes, or `(module, name)` pairs)."""
        pairs = {t if isinstance(t, tuple) else (t.__module__, t.__qualname__) for t in types}
        with self._lock:
            self._allowed = self._allowed | pairs

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_, blob = data
        if type_ == "msgpack":
            if any(mark in blob for mark in _EXT_MARKS):
                self._check_msgpack(blob)
        elif type_ == "json":
            json.loads(blob, object_hook=self._check_json)
        elif type_ not in ("null", "bytes", "bytearray"):
            raise UnsafeCheckpointError(
                f"a stored checkpoint value is serialised as {type_!r}, which hitl_graphs never writes and will not "
                "load (it can run code); refused, nothing ran"
            )
        return super().loads_typed(data)

    def _check_msgpack(self, blob: bytes) -> None:
        allowed = self._allowed
        refused: list[UnsafeCheckpointError] = []  # ormsgpack wraps what a hook raises; keep ours

        def hook(code: int, data: bytes) -> None:
            try:
                check(code, data)
            except UnsafeCheckpointError as exc:
                refused.append(exc)
                raise

        def check(code: int, data: bytes) -> None:
            if code == _NUMPY:
                return None
            inner = ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
            if code == _DELTA:
                return None
            if not isinstance(inner, list | tuple) or len(inner) < 2:
                _refuse(f"an extension value (code {code}) of unknown shape")
            module, name = str(inner[0]), str(inner[1])
            if code in _CONSTRUCTORS or code in _PYDANTIC:
                if (module, name) not in allowed:
                    _refuse(f"a value of type {module}.{name}")
            elif code == _METHOD:
                method = str(inner[3]) if len(inner) > 3 else "?"
                if (module, name, method) not in _SAFE_METHODS:
                    _refuse(f"a call of {module}.{name}.{method}")
            else:
                _refuse(f"an extension value of unknown code {code}")
            return None

        try:
            ormsgpack.unpackb(blob, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
        except (ormsgpack.MsgpackDecodeError, ValueError, TypeError) as exc:
            if refused:
                raise refused[0] from None
            raise UnsafeCheckpointError(f"a stored checkpoint value is not valid msgpack ({exc}); refused") from None

    def _check_json(self, obj: dict[str, Any]) -> dict[str, Any]:
        # LangChain's serialised objects: {"lc": 1, "type": "constructor", "id": [module..., name]}
        if obj.get("type") == "constructor" and isinstance(obj.get("id"), list):
            parts = [str(p) for p in obj["id"]]
            ours = len(parts) >= 2 and (".".join(parts[:-1]), parts[-1]) in self._allowed
            # LangChain's own ids name its classes by a public path ("langchain", "schema", ...)
            langchain = parts[:1] in (["langchain"], ["langchain_core"]) and any(
                m.startswith("langchain_core.") and n == parts[-1] for m, n in self._allowed)
            if not (ours or langchain):
                _refuse(f"a value of type {'.'.join(parts)}")
        return obj


def _refuse(what: str) -> typing.NoReturn:
    raise UnsafeCheckpointError(
        f"a stored checkpoint holds {what}, which is not allowed to load (loading it would import and call code "
        "the database names); refused, nothing ran. If the type is your state's, add it to the workflow: "
        "Workflow(..., serde_types=[YourType])"
    )


def schema_types(schema: Any) -> set[type]:
    """The classes a state schema names, at any depth: pydantic models, dataclasses, enums, named tuples.

    These are what LangGraph stores as "module, name" values; the runner allows them for the
    workflow whose schema names them.

    Example:
        >>> class Item(BaseModel):
        ...     name: str
        >>> sorted(t.__name__ for t in schema_types(dict[str, list[Item] | None]))
        ['Item']
    """
    found: set[type] = set()
    todo: list[Any] = [schema]
    seen: dict[int, Any] = {}  # by id, holding each type so its id is not reused meanwhile
    while todo:
        tp = todo.pop()
        if id(tp) in seen:
            continue
        seen[id(tp)] = tp
        for arg in typing.get_args(tp):
            todo.append(arg)
        origin = typing.get_origin(tp)
        if origin is not None:
            todo.append(origin)
            continue
        if not inspect.isclass(tp):
            continue
        is_value = (issubclass(tp, BaseModel | enum.Enum) or dataclasses.is_dataclass(tp)
                    or (issubclass(tp, tuple) and hasattr(tp, "_fields")))
        if is_value and tp.__module__ != "builtins":
            found.add(tp)
        if is_value or typing.is_typeddict(tp):
            try:
                hints = typing.get_type_hints(tp, include_extras=True)
            except Exception:  # an unresolvable forward reference: take what is annotated directly
                hints = getattr(tp, "__annotations__", {})
            todo.extend(hints.values())
    return found


def graph_types(graph: Any) -> set[type]:
    """`schema_types` of every schema a compiled graph's builder names: state, input, output,
    context, and each node's input."""
    builder = getattr(graph, "builder", None)
    schemas = [getattr(builder, a, None) for a in ("state_schema", "input_schema", "output_schema", "context_schema")]
    schemas += [getattr(node, "input_schema", None) for node in getattr(builder, "nodes", {}).values()]
    found: set[type] = set()
    for schema in schemas:
        if schema is not None:
            found |= schema_types(schema)
    return found

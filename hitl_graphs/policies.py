"""When to ask a person before a tool runs, and how firmly: confirmation policies and levels.

A policy looks at one tool call (the tool's name and arguments) and at whether a person has
already approved that tool in this thread, and answers with a `Confirmation` or `None`:

- `None`: run the call without asking and without a note.
- `Confirmation("info")`: run it without pausing, but record it where people look (the
  template's `tool_log`, shown by `hitl show`).
- `Confirmation("confirm")`: pause; a person approves, modifies the arguments, or rejects.
- `Confirmation("verify", phrase="DELETE r-42")`: pause; approving (or modifying) also needs the
  phrase typed exactly (`hitl approve THREAD --verify "DELETE r-42"`).

The built-in policies mirror Haystack's (`AlwaysAskPolicy`, `NeverAskPolicy`, `AskOncePolicy`)
plus a predicate (`AskWhenPolicy`); any object with a matching `confirmation` method is a policy.
Policies decide only *when* to ask; the template decides *how* (the gate) and what an answer does.
Where they are evaluated they must be pure: the same call and memory give the same answer, in any
process.

Example:
    >>> policy = AskWhenPolicy(lambda name, args: args["amount"] > 1000)
    >>> policy.confirmation("pay", {"amount": 50}, approved_before=False) is None
    True
    >>> policy.confirmation("pay", {"amount": 5000}, approved_before=False).level
    'confirm'
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

from hitl_graphs.errors import ConfigError

ConfirmationLevel: TypeAlias = Literal["info", "confirm", "verify"]
"""How firmly a call is confirmed: `info` (no pause), `confirm` (approve/reject), `verify` (type a phrase)."""

AskOnceScope: TypeAlias = Literal["thread", "workflow"]
"""Where `AskOncePolicy` remembers an approval: the thread, or the workflow for the thread's actor."""

LEVELS: tuple[ConfirmationLevel, ...] = ("info", "confirm", "verify")


@dataclass(frozen=True, slots=True)
class Confirmation:
    """What a policy asks for one call: a level, and for `verify` the phrase to type.

    Example:
        >>> Confirmation("verify", phrase="DELETE r-42").phrase
        'DELETE r-42'
    """

    level: ConfirmationLevel = "confirm"
    phrase: str | None = None

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ConfigError(f"unknown confirmation level {self.level!r}; use one of {', '.join(LEVELS)}")
        if self.level == "verify" and not self.phrase:
            raise ConfigError("a 'verify' confirmation needs the phrase the person must type (phrase=...)")

    @property
    def pauses(self) -> bool:
        """Whether this confirmation waits for a person (`confirm`, `verify`)."""
        return self.level != "info"


class ConfirmationPolicy(Protocol):
    """Decides, per tool call, whether and how firmly a person confirms it.

    `approved_before` is true once a person has approved (or modified) a call of this tool in
    the same thread; it is read from the graph's state, so it survives pauses and restarts.
    """

    def confirmation(self, name: str, args: Mapping[str, Any], *, approved_before: bool) -> Confirmation | None:
        """The confirmation this call needs, or `None` to run it unasked."""
        ...


def _ask(level: ConfirmationLevel, phrase: str | None, name: str, args: Mapping[str, Any]) -> Confirmation:
    return Confirmation(level, phrase=format_phrase(phrase, name, args) if phrase else None)


def _check(level: ConfirmationLevel, phrase: str | None) -> None:
    Confirmation(level, phrase=phrase)  # fails early on an unknown level or a verify without phrase


@dataclass(frozen=True, slots=True)
class AlwaysAskPolicy:
    """Ask before every call of the tool (the safe default for tools not named).

    Args:
        level: `confirm` (default), `verify`, or `info` (record every call, never pause).
        phrase: For `verify`: the phrase to type, a template over the call's arguments and
            `{tool}` (e.g. `"DELETE {resource_id}"`).

    Example:
        >>> AlwaysAskPolicy().confirmation("get_bank_balance", {}, approved_before=True)
        Confirmation(level='confirm', phrase=None)
    """

    level: ConfirmationLevel = "confirm"
    phrase: str | None = None

    def __post_init__(self) -> None:
        _check(self.level, self.phrase)

    def confirmation(self, name: str, args: Mapping[str, Any], *, approved_before: bool) -> Confirmation | None:
        return _ask(self.level, self.phrase, name, args)


@dataclass(frozen=True, slots=True)
class NeverAskPolicy:
    """Run every call of the tool without asking.

    Example:
        >>> NeverAskPolicy().confirmation("addition", {"a": 1, "b": 2}, approved_before=False) is None
        True
    """

    def confirmation(self, name: str, args: Mapping[str, Any], *, approved_before: bool) -> Confirmation | None:
        return None


@dataclass(frozen=True, slots=True)
class AskOncePolicy:
    """Ask until a person has approved one call of the tool; then run it unasked.

    `scope="thread"` (the default): the memory is the thread's (`approved_tools` in the graph
    state), not the process's: it survives a pause, a restart and a resume from another machine,
    and a new thread starts over. `scope="workflow"`: an approval is remembered in the database for
    the workflow and the actor the thread runs for (`runner.start(..., actor="ana")`), so ana's
    later threads of the workflow run the tool unasked, in any process (Haystack's "don't ask me
    again"); a thread started without an actor falls back to the thread's memory. A rejected call
    does not count.

    Example:
        >>> policy = AskOncePolicy()
        >>> policy.confirmation("get_phone_number", {"name": "Alice"}, approved_before=False).level
        'confirm'
        >>> policy.confirmation("get_phone_number", {"name": "Alice"}, approved_before=True) is None
        True
    """

    level: ConfirmationLevel = "confirm"
    phrase: str | None = None
    scope: AskOnceScope = "thread"

    def __post_init__(self) -> None:
        _check(self.level, self.phrase)
        if self.scope not in ("thread", "workflow"):
            raise ConfigError(f"AskOncePolicy scope must be 'thread' or 'workflow', got {self.scope!r}")

    def confirmation(self, name: str, args: Mapping[str, Any], *, approved_before: bool) -> Confirmation | None:
        return None if approved_before else _ask(self.level, self.phrase, name, args)


@dataclass(frozen=True, slots=True)
class AskWhenPolicy:
    """Ask only when `predicate(name, args)` is true (e.g. a payment over 1000).

    Args:
        predicate: Pure function of the tool name and arguments.
        level: The level when it asks.
        phrase: For `verify`: the phrase template, as in `AlwaysAskPolicy`.

    Example:
        >>> big = AskWhenPolicy(lambda name, args: args["amount"] > 1000, level="verify",
        ...                     phrase="PAY {amount}")
        >>> big.confirmation("pay", {"amount": 2500}, approved_before=False).phrase
        'PAY 2500'
    """

    predicate: Callable[[str, Mapping[str, Any]], bool]
    level: ConfirmationLevel = "confirm"
    phrase: str | None = None

    def __post_init__(self) -> None:
        _check(self.level, self.phrase)

    def confirmation(self, name: str, args: Mapping[str, Any], *, approved_before: bool) -> Confirmation | None:
        return _ask(self.level, self.phrase, name, args) if self.predicate(name, args) else None


def format_phrase(template: str, name: str, args: Mapping[str, Any]) -> str:
    """Fill a verification phrase template with the call's arguments and `{tool}`.

    Raises:
        ConfigError: the template names a field the call does not have.

    Example:
        >>> format_phrase("DELETE {resource_id}", "delete", {"resource_id": "r-42"})
        'DELETE r-42'
    """
    fields = {"tool": name, **args}
    missing = [f for _, f, _, _ in string.Formatter().parse(template) if f and f.split(".")[0].split("[")[0] not in fields]
    if missing:
        known = ", ".join(sorted(fields))
        raise ConfigError(f"verification phrase {template!r} names {missing[0]!r}; the call to {name!r} has: {known}")
    return template.format(**fields)

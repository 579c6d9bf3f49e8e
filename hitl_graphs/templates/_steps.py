"""What the templates share: running a step that is either a LangChain chat model or a plain
callable, binding tools to a model that can call them, turning plans into numbered lines and back, and
writing how a run ended (`Ending`).

Private: the templates' public faces are their `create_*` factories.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from typing_extensions import TypeIs

from hitl_graphs.decisions import Decision, Reject
from hitl_graphs.endings import Ending, EndStatus
from hitl_graphs.errors import ConfigError
from hitl_graphs.gate import decided_by_person


class Stopped(TypedDict):
    """Where and why a person stopped a run (the `stopped` state field of plan review and
    multi-step, kept for code that reads it; `Ending` is the record every template writes)."""

    at: str
    by: str | None
    reason: str | None


def ended(status: EndStatus, *, at: str, by: str | None = None, reason: str | None = None) -> Ending:
    """The `ending` a template writes as its graph ends.

    Example:
        >>> ended("stopped", at="turn 10", reason="turn limit")
        {'status': 'stopped', 'at': 'turn 10', 'by': None, 'reason': 'turn limit'}
    """
    return Ending(status=status, at=at, by=by, reason=reason)


def ended_by(decision: Decision, *, at: str) -> Ending:
    """The `ending` of a run that `decision` ends: a person's Reject `rejected`, a deadline's
    Reject `expired` (nobody decided; the default refused), anything else `completed`.

    Example:
        >>> ended_by(Reject(reason="no", actor="hitl:deadline"), at="plan v1")["status"]
        'expired'
    """
    if isinstance(decision, Reject):
        status: EndStatus = "rejected" if decided_by_person(decision) else "expired"
        return ended(status, at=at, by=decision.actor, reason=decision.reason)
    return ended("completed", at=at, by=decision.actor)


_NUMBERED = re.compile(r"^\s*(?:\d+\s*[.):]|[-*\u2022])\s+(?P<step>\S.*?)\s*$")


def is_chat_model(step: object) -> TypeIs[BaseChatModel]:
    """Whether `step` is a LangChain chat model (prompted) rather than a plain callable."""
    return isinstance(step, BaseChatModel)


TOOL_MODELS = (
    "a chat model with tool calling (ChatOpenAI, ChatAnthropic, ChatOllama, ...), or offline "
    "ScriptedChatModel(script=[tool_call(name, args), ...])"
)


def bind_tools(model: Any, tools: Sequence[BaseTool], *, template: str) -> Runnable[Any, Any]:
    """`model.bind_tools(tools)`, refused when the graph is built if the model cannot call tools.

    LangChain's own fakes (`GenericFakeChatModel`, `FakeListChatModel`) inherit a `bind_tools`
    that raises a bare `NotImplementedError`; the template would otherwise fail with it later, at
    a thread's start, without saying what is missing.

    Raises:
        ConfigError: naming the model, what it lacks, and which models fit.
    """
    name = type(model).__name__
    bind = getattr(model, "bind_tools", None)
    if not callable(bind):
        raise ConfigError(f"the {template} template needs {TOOL_MODELS}; {name} has no bind_tools")
    try:
        bound: Runnable[Any, Any] = bind(list(tools))
    except NotImplementedError:
        raise ConfigError(
            f"{name} cannot call tools (its bind_tools is not implemented; LangChain's GenericFakeChatModel and "
            f"FakeListChatModel only answer in text): the {template} template needs {TOOL_MODELS}"
        ) from None
    return bound


def check_step(step: Any, what: str) -> None:
    """Refuse what a template cannot run, naming the fix.

    Raises:
        ConfigError: `step` is neither a chat model nor a sync callable.
    """
    if is_chat_model(step):
        return
    if not callable(step):
        raise ConfigError(f"{what} must be a LangChain chat model or a callable, got {type(step).__name__}")
    if inspect.iscoroutinefunction(step) or inspect.iscoroutinefunction(getattr(step, "__call__", None)):
        raise ConfigError(
            f"{what} is an async function; give a plain (sync) callable: the runner's async methods run "
            "sync steps on worker threads"
        )


def ask(model: BaseChatModel, messages: Sequence[BaseMessage]) -> str:
    """The model's reply to `messages`, as text."""
    return model.invoke(list(messages)).text


def numbered(steps: Sequence[str]) -> list[str]:
    """`["a", "b"]` -> `["1. a", "2. b"]`: how a person sees a plan.

    Example:
        >>> numbered(["search the logs", "restart the worker"])
        ['1. search the logs', '2. restart the worker']
    """
    return [f"{i}. {step}" for i, step in enumerate(steps, 1)]


def parse_steps(text: str) -> list[str]:
    """The steps of a plan written as numbered (or bulleted) lines; other lines are ignored.

    A reply with no numbered line is read as one step per non-empty line.

    Example:
        >>> parse_steps("Plan:\\n1. search the logs\\n2) restart the worker\\n")
        ['search the logs', 'restart the worker']
    """
    lines = text.splitlines()
    steps = [m.group("step") for line in lines if (m := _NUMBERED.match(line))]
    return steps or [line.strip() for line in lines if line.strip()]


def thread_id(config: RunnableConfig | None) -> str | None:
    """The LangGraph thread a node runs in, if any."""
    value = (config or {}).get("configurable", {}).get("thread_id")
    return str(value) if value is not None else None


def short(text: str, limit: int = 60) -> str:
    """`text` on one line, cut to `limit` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "\u2026"
